import { Schema } from "effect"
import { Publisher } from "./Publisher.ts"
import { DateTimeString, optional, Strings } from "./Schemas.ts"

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

export const NodeVersion = Schema.Struct({
  changelog: optional(Schema.String),
  host_node_extract_status: optional(Schema.String),
  createdAt: optional(DateTimeString),
  dependencies: optional(Strings),
  deprecated: optional(Schema.Boolean),
  downloadUrl: optional(Schema.String),
  id: optional(Schema.String),
  node_id: optional(Schema.String),
  status: optional(NodeVersionStatus),
  status_reason: optional(Schema.String),
  supported_accelerators: optional(Strings),
  supported_host_frontend_version: optional(Schema.String),
  supported_host_version: optional(Schema.String),
  supported_os: optional(Strings),
  tags: optional(Strings),
  tags_admin: optional(Strings),
  version: optional(Schema.String)
}).annotations({ identifier: "NodeVersion" })
export type NodeVersion = typeof NodeVersion.Type

/** Language key -> translated metadata of the node. */
export const Translations = Schema.Record({
  key: Schema.String,
  value: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})

export const Node = Schema.Struct({
  author: optional(Schema.String),
  banner_url: optional(Schema.String),
  category: optional(Schema.String.annotations({ description: "Deprecated; use tags" })),
  created_at: optional(DateTimeString),
  description: optional(Schema.String),
  downloads: optional(Schema.Int),
  repohost_stars: optional(Schema.Int),
  icon: optional(Schema.String),
  id: optional(Schema.String),
  latest_version: optional(NodeVersion),
  license: optional(Schema.String),
  name: optional(Schema.String),
  preempted_host_node_names: optional(Strings),
  publisher: optional(Publisher),
  rating: optional(Schema.Number),
  repository: optional(Schema.String),
  search_ranking: optional(Schema.Int),
  status: optional(NodeStatus),
  status_detail: optional(Schema.String),
  supported_accelerators: optional(Strings),
  supported_host_frontend_version: optional(Schema.String),
  supported_host_version: optional(Schema.String),
  supported_os: optional(Strings),
  tags: optional(Strings),
  tags_admin: optional(Strings),
  translations: optional(Translations)
}).annotations({ identifier: "Node" })
export type Node = typeof Node.Type

/** A page of nodes (2.7). */
export const NodeList = Schema.Struct({
  limit: Schema.Int,
  nodes: Schema.Array(Node),
  page: Schema.Int,
  total: Schema.Int,
  totalPages: Schema.Int
}).annotations({ identifier: "NodeList" })
export type NodeList = typeof NodeList.Type
