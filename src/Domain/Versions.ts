/**
 * Versions across nodes: the moderation queue's page and the bulk resolution of
 * `{node_id, version}` pairs that lock files pin.
 */
import { Schema } from "effect"
import { NodeVersion } from "./Node.ts"
import { field, optionalField, refusingUnknownFields, Text } from "./Schemas.ts"

/** Served page sizes of the queue: larger requests are clamped, like `limit` (CONTRACT.md). */
export const maxVersionPageSize = 100

/** A page of the moderation queue. */
export const NodeVersionPage = Schema.Struct({
  page: field(Schema.Int, "Page number, from 1"),
  pageSize: field(Schema.Int, `Versions per page, as served (at most ${maxVersionPageSize})`),
  total: field(Schema.Int, "Number of matching versions on all pages"),
  totalPages: field(Schema.Int, "Number of pages: total divided by pageSize, rounded up"),
  versions: field(Schema.Array(NodeVersion), "Versions of this page, newest first")
}).annotate({ identifier: "NodeVersionPage" })
export type NodeVersionPage = typeof NodeVersionPage.Type

/** The most pairs one bulk request may name: a lock file of a large installation fits several times. */
export const maxBulkVersions = 5000

/** A node and one of its versions, as a lock file pins them. */
export const NodeVersionIdentifier = Schema.Struct({
  node_id: field(Text(200), "Identifier of the node"),
  version: field(Text(200), "The version string, such as 1.2.0")
}).annotate({ identifier: "NodeVersionIdentifier" })
export type NodeVersionIdentifier = typeof NodeVersionIdentifier.Type

export const BulkNodeVersionsRequest = refusingUnknownFields(Schema.Struct({
  node_versions: field(
    Schema.Array(NodeVersionIdentifier).check(Schema.isMaxLength(maxBulkVersions)),
    `The pairs to resolve, at most ${maxBulkVersions}; answered in this order`
  )
})).annotate({ identifier: "BulkNodeVersionsRequest" })
export type BulkNodeVersionsRequest = typeof BulkNodeVersionsRequest.Type

export const BulkNodeVersionStatus = Schema.Literals(["success", "not_found", "error"])
  .annotate({ identifier: "BulkNodeVersionStatus" })
export type BulkNodeVersionStatus = typeof BulkNodeVersionStatus.Type

/** The answer for one pair: the version, or why there is none. */
export const BulkNodeVersionResult = Schema.Struct({
  identifier: field(NodeVersionIdentifier, "The pair as it was asked"),
  status: field(
    BulkNodeVersionStatus,
    "`success`: node_version holds the version; `not_found`: no such node or version (or a deleted one); `error`: refused, error_message says why"
  ),
  node_version: optionalField(NodeVersion, "The version, when status is success"),
  error_message: optionalField(Schema.String, "Why the version is refused, when status is error")
}).annotate({ identifier: "BulkNodeVersionResult" })
export type BulkNodeVersionResult = typeof BulkNodeVersionResult.Type

export const BulkNodeVersionsResponse = Schema.Struct({
  node_versions: field(Schema.Array(BulkNodeVersionResult), "One result per requested pair, in the request's order")
}).annotate({ identifier: "BulkNodeVersionsResponse" })
export type BulkNodeVersionsResponse = typeof BulkNodeVersionsResponse.Type
