/**
 * SQL of the catalogue's read side. Records leave PostgreSQL already as the interface's JSON
 * (`json_strip_nulls` drops absent fields), so a page of nodes is one statement and one row:
 * the fragments below are the one place where table columns meet wire field names, and the
 * tests decode every answer with the Domain schemas to hold them to each other.
 */
import { SqlClient, type Statement } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../Config.ts"
import type { NodeStatus, NodeVersionStatus } from "../Domain/Node.ts"
import { publisherJson } from "../Publishers/Repo.ts"
import { isUuid } from "../Domain/Schemas.ts"

export const sortColumns = [
  "created_at",
  "updated_at",
  "downloads",
  "rating",
  "name",
  "id",
  "search_ranking",
  "repohost_stars"
] as const
export type SortColumn = typeof sortColumns[number]

export interface SortKey {
  readonly column: SortColumn
  readonly desc: boolean
}

/** A page of `GET /nodes` (and of a publisher's listing), already validated. */
export interface NodeQuery {
  readonly page: number
  readonly limit: number
  readonly sort: ReadonlyArray<SortKey>
  readonly supportedOs?: string | undefined
  readonly supportedAccelerator?: string | undefined
  readonly updatedAfter?: Date | undefined
  readonly nodeIds?: ReadonlyArray<string> | undefined
  /** semver key of the host application's version: only nodes with a version admitting it. */
  readonly hostVersionKey?: string | undefined
  /**
   * A publisher's own listing: its listed nodes (none while the publisher is banned), or, with
   * `includeBanned`, its active and banned nodes whatever the publisher's status.
   */
  readonly publisherId?: string | undefined
  readonly includeBanned?: boolean | undefined
}

/** One page: its nodes as JSON objects separated by commas, and how many match in all. */
export interface NodePage {
  readonly nodes: string
  readonly total: number
}

/** A node whatever its status, as stored: its JSON and the columns decisions are made on. */
export interface StoredNode {
  readonly json: string
  readonly status: NodeStatus
  readonly publisherId: string
  readonly repository: string | undefined
}

export type NodeAccess =
  | { readonly _tag: "Missing" }
  | { readonly _tag: "Banned" }
  | { readonly _tag: "Visible"; readonly json: string }

const orderSql = (sort: ReadonlyArray<SortKey>, alias: string): string => {
  const keys = sort.length > 0
    ? sort.map(({ column, desc }) =>
      `${alias}.${column} ${desc ? "DESC" : "ASC"} NULLS LAST`
    )
    // default: lower search ranking first (unset last), then the most downloaded
    : [`${alias}.search_ranking ASC NULLS LAST`, `${alias}.downloads DESC`]
  // the id makes the order total, so pages never overlap or skip
  return [...keys, `${alias}.id ASC`].join(", ")
}

/** A version as an upload or a download needs it, with the statuses that decide whether it may. */
export interface VersionState {
  readonly id: string
  readonly version: string
  readonly status: NodeVersionStatus
  readonly hasArchive: boolean
  readonly nodeStatus: NodeStatus
  readonly publisherStatus: string
}

/** The answer of an install: the version installed (and counted), or why there is none. */
export type InstallResult =
  | { readonly _tag: "Missing" }
  | { readonly _tag: "Banned" }
  | { readonly _tag: "NoInstallableVersion" }
  | { readonly _tag: "Installed"; readonly json: string }

export class NodeRepo extends Context.Tag("NodeRepo")<NodeRepo, {
  readonly listPage: (query: NodeQuery) => Effect.Effect<NodePage>
  /** A version of a node by version string or id, unless the node is banned or gone. */
  readonly findVersion: (nodeId: string, versionOrId: string) => Effect.Effect<NodeAccess>
  /** Whether the database answers (for readiness). */
  readonly ping: Effect.Effect<boolean>
  /** A node by id, in any status, with its latest active version. */
  readonly findNode: (nodeId: string) => Effect.Effect<Option.Option<StoredNode>>
  /** A node as clients see it: absent or deleted is Missing, banned (or its publisher) is Banned. */
  readonly nodeAccess: (nodeId: string) => Effect.Effect<NodeAccess>
  /** The node's versions in these statuses as a JSON array, newest semantic version first. */
  readonly listVersions: (nodeId: string, statuses: ReadonlyArray<NodeVersionStatus>) => Effect.Effect<NodeAccess>
  /**
   * The requested version, or the newest installable one, counted as one download in the same
   * statement (concurrent installs each add one).
   */
  readonly install: (nodeId: string, version: string | undefined) => Effect.Effect<InstallResult>
  /** A version by version string or id, whatever its status. */
  readonly versionState: (nodeId: string, versionOrId: string) => Effect.Effect<Option.Option<VersionState>>
  /** A version by id as its JSON, whatever its status. */
  readonly versionJson: (versionId: string) => Effect.Effect<Option.Option<string>>
}>() {}

/** Versions whose archive is served and installed: active ones (deprecated ones included). */
export const installableStatus: NodeVersionStatus = "NodeVersionStatusActive"


/** An SQL string literal of a configured (trusted) text. */
const sqlString = (s: string) => `'${s.replace(/'/g, "''")}'`

/**
 * Where download URLs of archives start; tools that replay the read statements without a
 * configuration render none.
 */
export const archiveBase = Effect.map(
  Effect.serviceOption(AppConfig),
  Option.map((c) => `${c.publicBaseUrl}/archives/`)
)

/** The absolute download URL of an installable version with an archive (NULL otherwise, so omitted). */
const downloadUrl = (v: string, base: Option.Option<string>) =>
  Option.match(base, {
    onNone: () => "NULL",
    onSome: (prefix) =>
      `CASE WHEN ${v}.archive_bytes IS NOT NULL AND ${v}.status = ${sqlString(installableStatus)}
       THEN ${sqlString(prefix)} || ${v}.node_id || '/' || ${v}.version END`
  })

/** The version `v` as wire JSON (a SQL expression); shared with the search statement. */
export const versionJson = (v: string, base: Option.Option<string>) =>
  `json_build_object(
    'changelog', ${v}.changelog, 'host_node_extract_status', ${v}.host_node_extract_status,
    'createdAt', iso_time(${v}.created_at), 'dependencies', ${v}.dependencies,
    'deprecated', ${v}.deprecated, 'downloadUrl', ${downloadUrl(v, base)}, 'id', ${v}.id, 'node_id', ${v}.node_id,
    'status', ${v}.status, 'status_reason', ${v}.status_reason, 'supported_accelerators', ${v}.supported_accelerators,
    'supported_host_frontend_version', ${v}.supported_host_frontend_version,
    'supported_host_version', ${v}.supported_host_version, 'supported_os', ${v}.supported_os,
    'tags', ${v}.tags, 'tags_admin', ${v}.tags_admin, 'version', ${v}.version)`

/** The node `n` of publisher `p` with latest version JSON `latest`, as wire JSON text (a SQL expression). */
export const nodeJson = (n: string, p: string, latest: string) =>
  `json_strip_nulls(json_build_object(
    'author', ${n}.author, 'banner_url', ${n}.banner_url, 'category', ${n}.category,
    'created_at', iso_time(${n}.created_at), 'description', ${n}.description,
    'downloads', ${n}.downloads, 'repohost_stars', ${n}.repohost_stars, 'icon', ${n}.icon,
    'id', ${n}.id, 'latest_version', ${latest}, 'license', ${n}.license, 'name', ${n}.name,
    'preempted_host_node_names', ${n}.preempted_host_node_names, 'publisher', ${publisherJson(p, "null")},
    'rating', ${n}.rating, 'repository', ${n}.repository, 'search_ranking', ${n}.search_ranking,
    'status', ${n}.status, 'status_detail', ${n}.status_detail,
    'supported_accelerators', ${n}.supported_accelerators,
    'supported_host_frontend_version', ${n}.supported_host_frontend_version,
    'supported_host_version', ${n}.supported_host_version, 'supported_os', ${n}.supported_os,
    'tags', ${n}.tags, 'tags_admin', ${n}.tags_admin, 'translations', ${n}.translations))::text`

export const makeNodeRepo = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const base = yield* archiveBase
  const renderVersion = (v: string) => versionJson(v, base)

  /** The version `v` admits the host version whose key is the given parameter. */
  const admitsHost = (hostKey: string): Statement.Fragment =>
    sql`(v.admits_any_host OR EXISTS (
      SELECT 1 FROM node_version_host_ranges r
      WHERE r.version_id = v.id
        AND (r.lo IS NULL OR r.lo < ${hostKey} OR (r.lo_incl AND r.lo = ${hostKey}))
        AND (r.hi IS NULL OR ${hostKey} < r.hi OR (r.hi_incl AND r.hi = ${hostKey}))))`

  const activeVersion = sql`v.status = 'NodeVersionStatusActive'`

  const filters = (q: NodeQuery): Statement.Fragment => {
    const clauses: Array<Statement.Fragment> = []
    if (q.publisherId !== undefined) {
      clauses.push(sql`n.publisher_id = ${q.publisherId}`)
      clauses.push(
        q.includeBanned
          ? sql`n.status IN ('NodeStatusActive', 'NodeStatusBanned')`
          : sql`n.listed`
      )
    } else {
      clauses.push(sql`n.listed`)
    }
    if (q.supportedOs !== undefined) {
      clauses.push(sql`(n.supported_os_lc = '{}' OR n.supported_os_lc @> ARRAY[lower(${q.supportedOs})])`)
    }
    if (q.supportedAccelerator !== undefined) {
      clauses.push(sql`(n.supported_accelerators_lc = '{}'
        OR n.supported_accelerators_lc @> ARRAY[lower(${q.supportedAccelerator})])`)
    }
    if (q.updatedAfter !== undefined) clauses.push(sql`n.updated_at > ${q.updatedAfter}`)
    if (q.nodeIds !== undefined) clauses.push(sql`n.id = ANY(${q.nodeIds as Array<string>})`)
    if (q.hostVersionKey !== undefined) {
      clauses.push(sql`EXISTS (SELECT 1 FROM node_versions v
        WHERE v.node_id = n.id AND ${activeVersion} AND ${admitsHost(q.hostVersionKey)})`)
    }
    return sql.and(clauses)
  }

  const latestVersion = (q: NodeQuery) =>
    sql`LEFT JOIN LATERAL (
      SELECT ${sql.literal(renderVersion("v"))} AS json FROM node_versions v
      WHERE v.node_id = n.id AND ${activeVersion}
        ${q.hostVersionKey !== undefined ? sql`AND ${admitsHost(q.hostVersionKey)}` : sql``}
      ORDER BY v.semver_key DESC, v.version DESC LIMIT 1) lv ON true`

  /** No filter beyond the public listing's own: the total is the maintained count. */
  const unfiltered = (q: NodeQuery) =>
    q.publisherId === undefined && q.supportedOs === undefined && q.supportedAccelerator === undefined &&
    q.updatedAfter === undefined && q.nodeIds === undefined && q.hostVersionKey === undefined

  const listPage = (q: NodeQuery) => {
    const where = filters(q)
    const order = orderSql(q.sort, "n")
    const total = unfiltered(q)
      ? sql`(SELECT listed::int FROM catalogue_counts)`
      : sql`(SELECT count(*)::int FROM nodes n WHERE ${where})`
    // One statement, one row: the page's nodes joined in order, and the total. The page is
    // chosen on ids alone (an index-only scan for the default order, however deep the page),
    // then only its nodes are read in full.
    return sql<{ nodes: string; total: number }>`
      WITH page AS (SELECT n.id FROM nodes n WHERE ${where}
                    ORDER BY ${sql.literal(order)} LIMIT ${q.limit} OFFSET ${(q.page - 1) * q.limit})
      SELECT coalesce(string_agg(${sql.literal(nodeJson("n", "p", "lv.json"))}, ',' ORDER BY ${sql.literal(order)}), '') AS nodes,
             ${total} AS total
      FROM page JOIN nodes n ON n.id = page.id
      JOIN publishers p ON p.id = n.publisher_id
      ${latestVersion(q)}`.pipe(
      Effect.map((rows) => ({ nodes: rows[0]?.nodes ?? "", total: rows[0]?.total ?? 0 })),
      Effect.orDie
    )
  }

  const findVersion = (nodeId: string, versionOrId: string) => {
    const byId = isUuid(versionOrId)
    return sql<{ node_status: string; publisher_status: string; json: string | null }>`
      SELECT n.status AS node_status, p.status AS publisher_status,
             (SELECT json_strip_nulls(${sql.literal(renderVersion("v"))})::text FROM node_versions v
              WHERE v.node_id = n.id AND v.status <> 'NodeVersionStatusDeleted'
                AND ${byId ? sql`(v.id = ${versionOrId}::uuid OR v.version = ${versionOrId})` : sql`v.version = ${versionOrId}`}
              LIMIT 1) AS json
      FROM nodes n JOIN publishers p ON p.id = n.publisher_id
      WHERE n.id = ${nodeId}`.pipe(
      Effect.map((rows): NodeAccess => {
        const row = rows[0]
        if (!row || row.node_status === "NodeStatusDeleted") return { _tag: "Missing" }
        if (row.node_status === "NodeStatusBanned" || row.publisher_status === "PublisherStatusBanned") {
          return { _tag: "Banned" }
        }
        return row.json === null ? { _tag: "Missing" } : { _tag: "Visible", json: row.json }
      }),
      Effect.orDie
    )
  }

  const findNode = (nodeId: string) =>
    sql<{ json: string; status: NodeStatus; publisher_id: string; repository: string | null }>`
      SELECT ${sql.literal(nodeJson("n", "p", "lv.json"))} AS json, n.status, n.publisher_id, n.repository
      FROM nodes n JOIN publishers p ON p.id = n.publisher_id
      ${latestVersion({ page: 1, limit: 1, sort: [] })}
      WHERE n.id = ${nodeId}`.pipe(
      Effect.map((rows) =>
        Option.map(Option.fromNullable(rows[0]), (row): StoredNode => ({
          json: row.json,
          status: row.status,
          publisherId: row.publisher_id,
          repository: row.repository ?? undefined
        }))
      ),
      Effect.orDie
    )

  /** Missing or Banned from the node's and its publisher's status; undefined when visible. */
  const hidden = (
    row: { node_status: string; publisher_status: string } | undefined
  ): { readonly _tag: "Missing" } | { readonly _tag: "Banned" } | undefined => {
    if (!row || row.node_status === "NodeStatusDeleted") return { _tag: "Missing" }
    if (row.node_status === "NodeStatusBanned" || row.publisher_status === "PublisherStatusBanned") return { _tag: "Banned" }
    return undefined
  }

  const nodeAccess = (nodeId: string) =>
    sql<{ node_status: string; publisher_status: string; json: string }>`
      SELECT n.status AS node_status, p.status AS publisher_status, ${sql.literal(nodeJson("n", "p", "lv.json"))} AS json
      FROM nodes n JOIN publishers p ON p.id = n.publisher_id
      ${latestVersion({ page: 1, limit: 1, sort: [] })}
      WHERE n.id = ${nodeId}`.pipe(
      Effect.map((rows): NodeAccess => hidden(rows[0]) ?? { _tag: "Visible", json: rows[0]!.json }),
      Effect.orDie
    )

  const listVersions = (nodeId: string, statuses: ReadonlyArray<NodeVersionStatus>) =>
    sql<{ node_status: string; publisher_status: string; json: string }>`
      SELECT n.status AS node_status, p.status AS publisher_status,
             coalesce((SELECT json_agg(json_strip_nulls(${sql.literal(renderVersion("v"))})
                                       ORDER BY v.semver_key DESC, v.version DESC)
                       FROM node_versions v
                       WHERE v.node_id = n.id AND v.status = ANY(${statuses as Array<string>})), '[]')::text AS json
      FROM nodes n JOIN publishers p ON p.id = n.publisher_id
      WHERE n.id = ${nodeId}`.pipe(
      Effect.map((rows): NodeAccess => hidden(rows[0]) ?? { _tag: "Visible", json: rows[0]!.json }),
      Effect.orDie
    )

  const install = (nodeId: string, version: string | undefined) =>
    // One statement: the version chosen and the download counted together. The UPDATE takes the
    // node's row lock, so concurrent installs queue on it and each adds one.
    sql<{ node_status: string; publisher_status: string; json: string | null }>`
      WITH target AS (
        SELECT v.* FROM node_versions v
        JOIN nodes n ON n.id = v.node_id JOIN publishers p ON p.id = n.publisher_id
        WHERE v.node_id = ${nodeId} AND v.status = ${installableStatus} AND v.archive_bytes IS NOT NULL
          AND n.status = 'NodeStatusActive' AND p.status = 'PublisherStatusActive'
          ${version === undefined ? sql`` : sql`AND v.version = ${version}`}
        ORDER BY v.semver_key DESC, v.version DESC LIMIT 1),
      counted AS (UPDATE nodes SET downloads = downloads + 1 WHERE id IN (SELECT node_id FROM target) RETURNING id)
      SELECT n.status AS node_status, p.status AS publisher_status,
             (SELECT json_strip_nulls(${sql.literal(renderVersion("target"))})::text FROM target) AS json
      FROM nodes n JOIN publishers p ON p.id = n.publisher_id
      WHERE n.id = ${nodeId}`.pipe(
      Effect.map((rows): InstallResult => {
        const refused = hidden(rows[0])
        if (refused) return refused
        const json = rows[0]!.json
        return json === null ? { _tag: "NoInstallableVersion" } : { _tag: "Installed", json }
      }),
      Effect.orDie
    )

  const versionState = (nodeId: string, version: string) =>
    sql<{ id: string; version: string; status: NodeVersionStatus; has_archive: boolean; node_status: NodeStatus; publisher_status: string }>`
      SELECT v.id::text, v.version, v.status, v.archive_bytes IS NOT NULL AS has_archive,
             n.status AS node_status, p.status AS publisher_status
      FROM node_versions v JOIN nodes n ON n.id = v.node_id JOIN publishers p ON p.id = n.publisher_id
      WHERE v.node_id = ${nodeId}
        AND ${isUuid(version) ? sql`(v.version = ${version} OR v.id = ${version}::uuid)` : sql`v.version = ${version}`}
      ORDER BY v.version = ${version} DESC LIMIT 1`.pipe(
      Effect.map((rows) =>
        Option.map(Option.fromNullable(rows[0]), (r): VersionState => ({
          id: r.id,
          version: r.version,
          status: r.status,
          hasArchive: r.has_archive,
          nodeStatus: r.node_status,
          publisherStatus: r.publisher_status
        }))
      ),
      Effect.orDie
    )

  const versionJsonById = (versionId: string) =>
    sql<{ json: string }>`SELECT json_strip_nulls(${sql.literal(renderVersion("v"))})::text AS json
                          FROM node_versions v WHERE v.id = ${versionId}::uuid`.pipe(
      Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), (r) => r.json)),
      Effect.orDie
    )

  return NodeRepo.of({
    listPage,
    findVersion,
    findNode,
    nodeAccess,
    listVersions,
    install,
    versionState,
    versionJson: versionJsonById,
    ping: sql`SELECT 1`.pipe(
      Effect.as(true),
      Effect.timeoutTo({ duration: "2 seconds", onTimeout: () => false, onSuccess: (ok) => ok }),
      Effect.orElseSucceed(() => false)
    )
  })
})

export const NodeRepoLive = Layer.effect(NodeRepo, makeNodeRepo)
