import { Schema } from "effect"
import { optional, Text } from "./Schemas.ts"

export const HostNodePolicy = Schema.Literal("HostNodePolicyActive", "HostNodePolicyBanned", "HostNodePolicyLocalOnly")
  .annotations({ identifier: "HostNodePolicy" })
export type HostNodePolicy = typeof HostNodePolicy.Type

const hostNodeFields = {
  category: optional(Schema.String),
  deprecated: optional(Schema.Boolean),
  description: optional(Schema.String),
  experimental: optional(Schema.Boolean),
  function: optional(Schema.String),
  input_types: optional(Schema.String),
  output_is_list: optional(Schema.Array(Schema.Boolean)),
  policy: optional(HostNodePolicy),
  return_names: optional(Schema.String),
  return_types: optional(Schema.String)
}

/** A host-node record of a node version (2.6). */
export class HostNode extends Schema.Class<HostNode>("HostNode")({
  host_node_name: Schema.String,
  ...hostNodeFields,
  policy: HostNodePolicy
}) {}

/** What a client may send: the same fields, bounded (the 400 names the field that is too long). */
const hostNodeInputFields = {
  ...hostNodeFields,
  category: optional(Text(200)),
  description: optional(Text(5000)),
  function: optional(Text(200)),
  input_types: optional(Text(20_000)),
  output_is_list: optional(Schema.Array(Schema.Boolean).pipe(Schema.maxItems(200))),
  return_names: optional(Text(5000)),
  return_types: optional(Text(5000))
}

/** The body of the host-node update: the record without its name. */
export const HostNodeUpdate = Schema.Struct(hostNodeInputFields).annotations({ identifier: "HostNodeUpdate" })
export type HostNodeUpdate = typeof HostNodeUpdate.Type

/** One record of the bulk creation: the name is required. */
export const HostNodeCreate = Schema.Struct({
  ...hostNodeInputFields,
  host_node_name: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))
}).annotations({ identifier: "HostNodeCreate" })
export type HostNodeCreate = typeof HostNodeCreate.Type

/** The most records one bulk creation may carry. */
export const maxHostNodesPerRequest = 5000
