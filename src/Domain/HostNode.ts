import { Schema } from "effect"
import { field, ignoredOnInput, optional, optionalField, refusingUnknownFields, Text } from "./Schemas.ts"

export const HostNodePolicy = Schema.Literals(["HostNodePolicyActive", "HostNodePolicyBanned", "HostNodePolicyLocalOnly"])
  .annotate({ identifier: "HostNodePolicy" })
export type HostNodePolicy = typeof HostNodePolicy.Type

/** What each field of a host-node record means (interface 2.6). */
const meaning = {
  host_node_name: "Unique identifier of the host-node",
  category: "UI category used for grouping",
  deprecated: "Whether the host-node is deprecated; deprecated host-nodes are hidden in the UI",
  description: "Brief description of the host-node",
  experimental: "Whether the host-node is experimental: subject to change or removal",
  function: "Name of the entry-point function",
  input_types: "Definition of the input parameters",
  output_is_list: "One flag per output: whether it is a list",
  policy: "Policy of the host-node",
  return_names: "Names of the outputs",
  return_types: "Types of the outputs"
} as const

const hostNodeFields = {
  category: optionalField(Schema.String, meaning.category),
  deprecated: optionalField(Schema.Boolean, meaning.deprecated),
  description: optionalField(Schema.String, meaning.description),
  experimental: optionalField(Schema.Boolean, meaning.experimental),
  function: optionalField(Schema.String, meaning.function),
  input_types: optionalField(Schema.String, meaning.input_types),
  output_is_list: optionalField(Schema.Array(Schema.Boolean), meaning.output_is_list),
  policy: optionalField(HostNodePolicy, `${meaning.policy} (site admins only)`),
  return_names: optionalField(Schema.String, meaning.return_names),
  return_types: optionalField(Schema.String, meaning.return_types)
}

/** A host-node record of a node version (2.6). */
export class HostNode extends Schema.Class<HostNode>("HostNode")({
  host_node_name: field(Schema.String, meaning.host_node_name),
  ...hostNodeFields,
  policy: field(HostNodePolicy, meaning.policy)
}) {}

/** What a client may send: the same fields, bounded (the 400 names the field that is too long). */
const hostNodeInputFields = {
  ...hostNodeFields,
  category: optionalField(Text(200), meaning.category),
  description: optionalField(Text(5000), meaning.description),
  function: optionalField(Text(200), meaning.function),
  input_types: optionalField(Text(20_000), meaning.input_types),
  output_is_list: optionalField(Schema.Array(Schema.Boolean).check(Schema.isMaxLength(200)), meaning.output_is_list),
  return_names: optionalField(Text(5000), meaning.return_names),
  return_types: optionalField(Text(5000), meaning.return_types)
}

/** The body of the host-node update: the record, whose name (the path's) a client may send back as it read it. */
export const HostNodeUpdate = refusingUnknownFields(Schema.Struct({
  ...hostNodeInputFields,
  host_node_name: optional(ignoredOnInput({ type: "string" }, `${meaning.host_node_name}; the path names the record`))
})).annotate({ identifier: "HostNodeUpdate" })
export type HostNodeUpdate = typeof HostNodeUpdate.Type

/** One record of the bulk creation: the name is required. */
export const HostNodeCreate = Schema.Struct({
  ...hostNodeInputFields,
  host_node_name: field(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200)), meaning.host_node_name)
}).annotate({ identifier: "HostNodeCreate" })
export type HostNodeCreate = typeof HostNodeCreate.Type

/** The most records one bulk creation may carry. */
export const maxHostNodesPerRequest = 5000

/** A record of `GET /host-nodes`: the record with the node and version it belongs to. */
export class ListedHostNode extends Schema.Class<ListedHostNode>("ListedHostNode")({
  ...HostNode.fields,
  node_id: field(Schema.String, "Identifier of the node whose version provides the host-node"),
  node_version: field(Schema.String, "The version string of that version")
}) {}

/** Served page sizes of `GET /host-nodes`: larger requests are clamped, like `limit` (CONTRACT.md). */
export const maxHostNodePageSize = 500
export const defaultHostNodePageSize = 100

/** A page of `GET /host-nodes`. */
export const HostNodePage = Schema.Struct({
  host_nodes: field(Schema.Array(ListedHostNode), "Records of this page, by host-node name, then node, then newest version"),
  page: field(Schema.Int, "Page number, from 1"),
  pageSize: field(Schema.Int, `Records per page, as served (at most ${maxHostNodePageSize})`),
  total: field(Schema.Int, "Number of matching records on all pages"),
  totalPages: field(Schema.Int, "Number of pages: total divided by pageSize, rounded up")
}).annotate({ identifier: "HostNodePage" })
export type HostNodePage = typeof HostNodePage.Type

/**
 * `host_node_extract_status` of a version: `pending` once published, `success` once its records
 * are posted, `failed` when the extraction reports failure (Transitions.ts). Answers carry it as
 * a string (interface 2.2); a version stored before it was kept carries none.
 */
export const HostNodeExtractStatus = Schema.Literals(["pending", "success", "failed"]).annotate({ identifier: "HostNodeExtractStatus" })
export type HostNodeExtractStatus = typeof HostNodeExtractStatus.Type

/** The body of the extraction's failure report: the one status a client sets, and why. */
export const HostNodeExtractionFailure = refusingUnknownFields(Schema.Struct({
  status: field(Schema.Literal("failed"), "The extraction's outcome: `failed` (posting the records is how it succeeds)"),
  reason: optionalField(Text(2000), "Why it failed, for the service's log")
})).annotate({ identifier: "HostNodeExtractionFailure" })
export type HostNodeExtractionFailure = typeof HostNodeExtractionFailure.Type
