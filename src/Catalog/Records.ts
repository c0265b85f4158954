/**
 * Nodes, versions and publishers as rows: what a typed read selects and the schema that turns
 * such a row into its Domain record. This is where table columns meet the records' fields. A
 * version has one rendering, shared with the fast path (NodePages.ts); nodes and publishers are
 * read as columns here and rendered as JSON there, and a property test holds the two equal.
 */
import { Effect, Option, Schema } from "effect"
import { answerAliases, type Beside } from "../Compat/Answers.ts"
import { AppConfig } from "../Config.ts"
import { HeldVersionRef, installableStatus, Node, NodeStatus, NodeVersion, Translations } from "../Domain/Node.ts"
import { Publisher, PublisherStatus } from "../Domain/Publisher.ts"
import { Strings } from "../Domain/Schemas.ts"
import { DbTime, nullable, rowsOf } from "../Db/Rows.ts"
import { archiveKeySuffix } from "../Storage/Keys.ts"

/** An SQL string literal of a configured (trusted) text. */
const sqlString = (s: string) => `'${s.replace(/'/g, "''")}'`

/**
 * Where download URLs of archives point: the service's `/archives/{node}/{version}`, which serves
 * the archive or sends the client to its store; or, when archives are in a bucket behind a public
 * base (`ARCHIVE_PUBLIC_BASE_URL`, a CDN), the object there, so that every listing names the
 * CDN. Tools that replay the read statements without a configuration render none.
 */
export type ArchiveUrls =
  | { readonly _tag: "Service"; readonly prefix: string }
  | { readonly _tag: "Public"; readonly prefix: string }

export const archiveBase = Effect.map(
  Effect.serviceOption(AppConfig),
  Option.map((c): ArchiveUrls => {
    const backend = c.storage.backend
    return backend._tag === "s3" && Option.isSome(backend.publicBaseUrl)
      ? { _tag: "Public", prefix: `${backend.publicBaseUrl.value}/` }
      : { _tag: "Service", prefix: `${c.publicBaseUrl}/archives/` }
  })
)

/**
 * The clients' names the answers carry beside the interface's, when `ANSWER_ALIASES` is on (none
 * when it is off, or without a configuration).
 */
export const answerAliasesOf = Effect.map(
  Effect.serviceOption(AppConfig),
  (config) => Option.isSome(config) && config.value.aliases.inAnswers ? answerAliases(config.value.aliases) : undefined
)

/** The absolute download URL of version `v` when it is installable with an archive, else NULL (a SQL expression). */
export const downloadUrl = (v: string, base: Option.Option<ArchiveUrls>) =>
  Option.match(base, {
    onNone: () => "NULL",
    onSome: (urls) =>
      `CASE WHEN ${v}.archive_bytes IS NOT NULL AND ${v}.status = ${sqlString(installableStatus)}
       THEN ${sqlString(urls.prefix)} || ${
        urls._tag === "Public" ? `${v}.id || ${sqlString(archiveKeySuffix)}` : `${v}.node_id || '/' || ${v}.version`
      } END`
  })

/**
 * The clients' names of `beside` (ANSWER_ALIASES, Compat/Answers.ts) as `json_build_object` pairs
 * of the row `r`, each holding its interface name's column, with a trailing comma; "" for none.
 */
export const besidePairs = (r: string, beside: Beside) =>
  beside.map(([name, alias]) => `${sqlString(alias)}, ${r}.${name}, `).join("")

/**
 * The version row `v` as the encoded NodeVersion, absent fields still NULL (a SQL expression):
 * the one rendering of a version. The fast path embeds it in its pages, whose `json_strip_nulls`
 * drops the NULLs, with the clients' names `beside` when answers carry them; typed reads take it
 * through `versionRecord` (the edge gives their answers the clients' names).
 */
export const versionObject = (v: string, base: Option.Option<ArchiveUrls>, beside: Beside = []) =>
  `json_build_object(${besidePairs(v, beside)}
    'changelog', ${v}.changelog, 'host_node_extract_status', ${v}.host_node_extract_status,
    'createdAt', iso_time(${v}.created_at), 'dependencies', ${v}.dependencies,
    'dependency_requirements', ${v}.dependency_requirements,
    'deprecated', ${v}.deprecated, 'downloadUrl', ${downloadUrl(v, base)}, 'id', ${v}.id, 'node_id', ${v}.node_id,
    'sha256', encode(${v}.archive_sha256, 'hex'),
    'status', ${v}.status, 'status_reason', ${v}.status_reason, 'supported_accelerators', ${v}.supported_accelerators,
    'supported_host_frontend_version', ${v}.supported_host_frontend_version,
    'supported_host_version', ${v}.supported_host_version, 'supported_os', ${v}.supported_os,
    'tags', ${v}.tags, 'tags_admin', ${v}.tags_admin, 'version', ${v}.version,
    'yanked', ${v}.yanked, 'yanked_reason', ${v}.yanked_reason, 'provenance', ${v}.provenance)`

/**
 * Whether the version row `v` may be a node's latest version or an unpinned install's choice
 * (a SQL condition): installable and not yanked. A yanked version stays installable by its number.
 */
export const latestCandidate = (v: string) => `(${v}.status = ${sqlString(installableStatus)} AND NOT ${v}.yanked)`

/**
 * The version row `v` as one JSON column that `NodeVersion` decodes (a SQL expression). One
 * column rather than seventeen: the driver parses it with one `JSON.parse` instead of a parser
 * per column, and decoding the encoded form is a third of the cost of decoding a row of columns
 * (docs/architecture.md, "Layers", Records).
 */
export const versionRecord = (v: string, base: Option.Option<ArchiveUrls>) => `json_strip_nulls(${versionObject(v, base)})`

/** The name shown for the row `r`: its own, else its id (clients index `name` directly; a SQL expression). */
export const displayName = (r: string) => `coalesce(${r}.name, ${r}.id)`

/** The description shown for the node row `n`: its own, else empty (clients index it directly; a SQL expression). */
export const nodeDescription = (n: string) => `coalesce(${n}.description, '')`

/** The columns of the publisher row `p`, members aside (a SQL select list). */
export const publisherColumns = (p: string) =>
  `${p}.id, ${displayName(p)} AS name, ${p}.description, ${p}.logo, ${p}.website, ${p}.support, ${p}.source_code_repo, ${p}.status, ${p}.created_at`

export const PublisherRow = rowsOf({
  id: Schema.String,
  name: Schema.String,
  description: nullable(Schema.String),
  logo: nullable(Schema.String),
  website: nullable(Schema.String),
  support: nullable(Schema.String),
  source_code_repo: nullable(Schema.String),
  status: PublisherStatus,
  created_at: DbTime
}, Publisher, ({ created_at, ...fields }) => new Publisher({ ...fields, createdAt: created_at }, { disableChecks: true }))

/**
 * The columns of the node row `n` of publisher row `p`, with `latest` the alias of its latest
 * version's row (NULL when it has none). The publisher travels as `to_jsonb` of its own columns,
 * the version as its record.
 */
/**
 * `columns` of the latest scan of the version row `v` (a SQL subquery, NULL when none): the one
 * rule of which scan decides, for every reader of scans.
 */
export const latestScan = (v: string, columns: string) =>
  `(SELECT ${columns} FROM version_scans ls WHERE ls.version_id = ${v}.id ORDER BY ls.scanned_at DESC, ls.id LIMIT 1)`

/**
 * The node row `n`'s held version (Domain/Node.ts, HeldVersionRef) as JSON, or NULL: its newest
 * version when that is Flagged by a scan that held it (or did not finish) and no installable version is newer (a SQL
 * expression). The partial index of migration 0023 finds a node's flagged versions.
 */
export const heldVersionJson = (n: string) =>
  `(SELECT json_build_object('version', hv.version,
      'stage', CASE WHEN hr.requested_at IS NOT NULL THEN 'review_requested' WHEN hs.outcome = 'failed' THEN 'scan_failed' ELSE 'awaiting_review' END,
      'since', iso_time(coalesce(hr.requested_at, hs.scanned_at)))
    FROM node_versions hv
    JOIN LATERAL ${latestScan("hv", "ls.outcome, ls.scanned_at")} hs ON hs.outcome IN ('held', 'failed')
    LEFT JOIN version_review_requests hr ON hr.version_id = hv.id AND hr.archive_sha256 = hv.archive_sha256
    WHERE hv.node_id = ${n}.id AND hv.status = 'NodeVersionStatusFlagged'
      AND NOT EXISTS (SELECT 1 FROM node_versions ha WHERE ha.node_id = ${n}.id AND ${latestCandidate("ha")}
        AND (ha.semver_key > hv.semver_key OR (ha.semver_key = hv.semver_key AND ha.version > hv.version)))
    ORDER BY hv.semver_key DESC, hv.version DESC LIMIT 1)`

export const nodeColumns = (n: string, p: string, latest: string, base: Option.Option<ArchiveUrls>) =>
  `${n}.id, ${displayName(n)} AS name, ${nodeDescription(n)} AS description, ${n}.author, ${n}.license, ${n}.icon, ${n}.banner_url, ${n}.category,
   ${n}.repository, ${n}.repohost_stars, ${n}.downloads, ${n}.rating, ${n}.search_ranking, ${n}.status,
   ${n}.status_detail, ${n}.supported_os, ${n}.supported_accelerators, ${n}.supported_host_version,
   ${n}.supported_host_frontend_version, ${n}.tags, ${n}.tags_admin, ${n}.preempted_host_node_names,
   jsonb_strip_nulls(${n}.translations) AS translations, ${n}.created_at,
   (SELECT to_jsonb(r) FROM (SELECT ${publisherColumns(p)}) r) AS publisher,
   CASE WHEN ${latest}.id IS NOT NULL THEN ${versionRecord(latest, base)} END AS latest_version,
   ${heldVersionJson(n)} AS held_version`

export const NodeRow = rowsOf({
  id: Schema.String,
  name: Schema.String,
  description: Schema.String,
  author: nullable(Schema.String),
  license: nullable(Schema.String),
  icon: nullable(Schema.String),
  banner_url: nullable(Schema.String),
  category: nullable(Schema.String),
  repository: nullable(Schema.String),
  repohost_stars: Schema.Int,
  downloads: Schema.Int,
  rating: nullable(Schema.Number),
  search_ranking: nullable(Schema.Int),
  status: NodeStatus,
  status_detail: nullable(Schema.String),
  supported_os: Strings,
  supported_accelerators: Strings,
  supported_host_version: nullable(Schema.String),
  supported_host_frontend_version: nullable(Schema.String),
  tags: Strings,
  tags_admin: Strings,
  preempted_host_node_names: Strings,
  translations: nullable(Translations),
  created_at: DbTime,
  publisher: PublisherRow,
  latest_version: nullable(NodeVersion),
  held_version: nullable(HeldVersionRef)
}, Node, (fields) => new Node(fields, { disableChecks: true }))
