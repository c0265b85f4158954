/**
 * Nodes, versions and publishers as rows: the columns a typed read selects and the schema that
 * turns such a row into its Domain record. This is where table columns meet the records' fields
 * outside the fast path (NodePages.ts), whose JSON a property test holds equal to these records.
 */
import { Option, Schema } from "effect"
import { Node, NodeStatus, NodeVersion, NodeVersionStatus, Translations } from "../Domain/Node.ts"
import { Publisher, PublisherStatus } from "../Domain/Publisher.ts"
import { Strings } from "../Domain/Schemas.ts"
import { DbTime, nullable, rowsOf } from "../Db/Rows.ts"
import { downloadUrl } from "./NodePages.ts"

/** The columns of the version row `v` (a SQL select list). */
export const versionColumns = (v: string, base: Option.Option<string>) =>
  `${v}.id::text AS id, ${v}.node_id, ${v}.version, ${v}.changelog, ${v}.host_node_extract_status, ${v}.created_at,
   ${v}.dependencies, ${v}.deprecated, ${downloadUrl(v, base)} AS download_url, ${v}.status, ${v}.status_reason,
   ${v}.supported_accelerators, ${v}.supported_host_frontend_version, ${v}.supported_host_version,
   ${v}.supported_os, ${v}.tags, ${v}.tags_admin`

/** The columns `versionColumns` selects, as a row schema reads them. */
export const versionFields = {
  id: Schema.String,
  node_id: Schema.String,
  version: Schema.String,
  changelog: nullable(Schema.String),
  host_node_extract_status: nullable(Schema.String),
  created_at: DbTime,
  dependencies: Strings,
  deprecated: Schema.Boolean,
  download_url: nullable(Schema.String),
  status: NodeVersionStatus,
  status_reason: nullable(Schema.String),
  supported_accelerators: Strings,
  supported_host_frontend_version: nullable(Schema.String),
  supported_host_version: nullable(Schema.String),
  supported_os: Strings,
  tags: Strings,
  tags_admin: Strings
}

/** The version a row of `versionFields` holds. */
export const toVersion = (
  { created_at, download_url, ...fields }: Schema.Struct.Type<typeof versionFields>
): NodeVersion => new NodeVersion({ ...fields, createdAt: created_at, ...(download_url === undefined ? {} : { downloadUrl: download_url }) }, true)

export const VersionRow = rowsOf(versionFields, NodeVersion, toVersion)

/** The columns of the publisher row `p`, members aside (a SQL select list). */
export const publisherColumns = (p: string) =>
  `${p}.id, ${p}.name, ${p}.description, ${p}.logo, ${p}.website, ${p}.support, ${p}.source_code_repo, ${p}.status, ${p}.created_at`

export const PublisherRow = rowsOf({
  id: Schema.String,
  name: nullable(Schema.String),
  description: nullable(Schema.String),
  logo: nullable(Schema.String),
  website: nullable(Schema.String),
  support: nullable(Schema.String),
  source_code_repo: nullable(Schema.String),
  status: PublisherStatus,
  created_at: DbTime
}, Publisher, ({ created_at, ...fields }) => new Publisher({ ...fields, createdAt: created_at }, true))

/**
 * The columns of the node row `n` of publisher row `p`, with `latest` the alias of its latest
 * version's row (NULL when it has none). The publisher and the version travel as `to_jsonb` of
 * their own columns.
 */
export const nodeColumns = (n: string, p: string, latest: string, base: Option.Option<string>) =>
  `${n}.id, ${n}.name, ${n}.description, ${n}.author, ${n}.license, ${n}.icon, ${n}.banner_url, ${n}.category,
   ${n}.repository, ${n}.repohost_stars, ${n}.downloads, ${n}.rating, ${n}.search_ranking, ${n}.status,
   ${n}.status_detail, ${n}.supported_os, ${n}.supported_accelerators, ${n}.supported_host_version,
   ${n}.supported_host_frontend_version, ${n}.tags, ${n}.tags_admin, ${n}.preempted_host_node_names,
   jsonb_strip_nulls(${n}.translations) AS translations, ${n}.created_at,
   (SELECT to_jsonb(r) FROM (SELECT ${publisherColumns(p)}) r) AS publisher,
   (SELECT to_jsonb(r) FROM (SELECT ${versionColumns(latest, base)}) r WHERE ${latest}.id IS NOT NULL) AS latest_version`

export const NodeRow = rowsOf({
  id: Schema.String,
  name: nullable(Schema.String),
  description: nullable(Schema.String),
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
  latest_version: nullable(VersionRow)
}, Node, (fields) => new Node(fields, true))
