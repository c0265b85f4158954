/**
 * Nodes and their versions (interface 2.2, 2.3, 2.7). The records are classes: repositories
 * decode rows into them, handlers return them and HttpApi encodes them. A field the service always
 * sends is required; an optional one is absent when it has no value, never `null`.
 */
import { Schema } from "effect"
import { Publisher } from "./Publisher.ts"
import { optional, Strings, Timestamp } from "./Schemas.ts"

export const NodeStatus = Schema.Literal("NodeStatusActive", "NodeStatusDeleted", "NodeStatusBanned")
  .annotations({ identifier: "NodeStatus" })
export type NodeStatus = typeof NodeStatus.Type

export const NodeVersionStatus = Schema.Literal(
  "NodeVersionStatusActive",
  "NodeVersionStatusDeleted",
  "NodeVersionStatusBanned",
  "NodeVersionStatusPending",
  "NodeVersionStatusFlagged"
).annotations({ identifier: "NodeVersionStatus" })
export type NodeVersionStatus = typeof NodeVersionStatus.Type

/** Versions whose archive is served and installed: active ones (deprecated ones included). */
export const installableStatus: NodeVersionStatus = "NodeVersionStatusActive"

/** A node id: what publishers may choose. */
export const NodeId = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, {
    message: () => "expected 1 to 100 characters: letters, digits, '.', '_' or '-', starting with a letter or digit"
  })
)

export class NodeVersion extends Schema.Class<NodeVersion>("NodeVersion")({
  changelog: optional(Schema.String),
  host_node_extract_status: optional(Schema.String),
  createdAt: Timestamp,
  dependencies: Strings,
  deprecated: Schema.Boolean,
  downloadUrl: optional(Schema.String),
  id: Schema.String,
  node_id: Schema.String,
  status: NodeVersionStatus,
  status_reason: optional(Schema.String),
  supported_accelerators: Strings,
  supported_host_frontend_version: optional(Schema.String),
  supported_host_version: optional(Schema.String),
  supported_os: Strings,
  tags: Strings,
  tags_admin: Strings,
  version: Schema.String
}) {}

/** Language key -> translated metadata of the node. */
export const Translations = Schema.Record({
  key: Schema.String,
  value: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})

export class Node extends Schema.Class<Node>("Node")({
  author: optional(Schema.String),
  banner_url: optional(Schema.String),
  category: optional(Schema.String.annotations({ description: "Deprecated; use tags" })),
  created_at: Timestamp,
  description: optional(Schema.String),
  downloads: Schema.Int,
  repohost_stars: Schema.Int,
  icon: optional(Schema.String),
  id: Schema.String,
  latest_version: optional(NodeVersion),
  license: optional(Schema.String),
  name: optional(Schema.String),
  preempted_host_node_names: Strings,
  publisher: Publisher,
  rating: optional(Schema.Number),
  repository: optional(Schema.String),
  search_ranking: optional(Schema.Int),
  status: NodeStatus,
  status_detail: optional(Schema.String),
  supported_accelerators: Strings,
  supported_host_frontend_version: optional(Schema.String),
  supported_host_version: optional(Schema.String),
  supported_os: Strings,
  tags: Strings,
  tags_admin: Strings,
  translations: optional(Translations)
}) {}

/** A page of nodes (2.7). */
export const NodeList = Schema.Struct({
  limit: Schema.Int,
  nodes: Schema.Array(Node),
  page: Schema.Int,
  total: Schema.Int,
  totalPages: Schema.Int
}).annotations({ identifier: "NodeList" })
export type NodeList = typeof NodeList.Type

/** The columns `GET /nodes` sorts by (CONTRACT.md). */
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

/** One ordering column of a listing, ascending unless `desc`. */
export interface SortKey {
  readonly column: SortColumn
  readonly desc: boolean
}
