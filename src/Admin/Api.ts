import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Schema, Struct } from "effect"
import { ArchiveMissing, Conflict, Forbidden, NodeExists, NotFound } from "../Domain/ApiErrors.ts"
import { Authentication } from "../Domain/Auth.ts"
import { Node, NodeId, NodeStatus, NodeVersion, NodeVersionStatus } from "../Domain/Node.ts"
import { Publisher, PublisherStatus } from "../Domain/Publisher.ts"
import { nodeFields, VersionCreate } from "../Publishing/Api.ts"
import {
  field,
  ignoringUnknownFields,
  NonEmptyText,
  optionalField,
  PathParam,
  refusingBody,
  refusingUnknownFields,
  Text,
  TextList
} from "../Domain/Schemas.ts"

/**
 * Body of `POST /admin/nodes`: a node waiting in the `unclaimed` publisher for its author. Other
 * fields are ignored: the admin front-end's form sends `category` too.
 */
export const AdminNodeCreate = ignoringUnknownFields(Schema.Struct({
  id: field(NodeId, "Unique identifier of the node: letters, digits, '.', '_' and '-', starting with a letter or digit"),
  repository: field(NonEmptyText(2000), "URL of the node's source repository, whose administrators may claim the node"),
  ...Struct.pick(nodeFields, ["name", "description", "author", "license", "icon", "tags"])
})).annotate({ identifier: "AdminNodeCreate" })

/**
 * Body of `PUT /admin/nodes/{nodeId}`: moderation fields and the node's host compatibility. Other
 * fields are ignored: the admin front-end sends the node it read with its changes (`{...node, status}`).
 */
export const AdminNodeUpdate = ignoringUnknownFields(Schema.Struct({
  status: optionalField(NodeStatus, "New status of the node"),
  status_detail: optionalField(Text(2000), "Why the node has its status"),
  tags_admin: optionalField(TextList(50, 100), "Admin-only tags for security warnings and admin metadata"),
  // stored as a PostgreSQL integer: a larger value is a 400, not a failed statement
  search_ranking: optionalField(
    Schema.Int.check(Schema.isBetween({ minimum: -2_147_483_648, maximum: 2_147_483_647 })),
    "Value used to sort search results; lower ranks first"
  ),
  preempted_host_node_names: optionalField(TextList(500, 200), "Names of host-nodes that this node preempts"),
  // the admin front-end copies a version's compatibility onto its node
  ...Struct.pick(nodeFields, ["supported_host_version", "supported_host_frontend_version"])
})).annotate({ identifier: "AdminNodeUpdate" })

/**
 * Body of `PUT /admin/nodes/{nodeId}/versions/{version}`: a status move and the version's
 * compatibility, every field optional (the admin front-end's compatibility editor sends the
 * compatibility alone). Other fields are ignored, as on every route that takes the clients'
 * alias names: with an alias setting off, those names are unknown, not refused.
 */
export const AdminNodeVersionUpdate = ignoringUnknownFields(Schema.Struct({
  status: optionalField(NodeVersionStatus, "New status of the version"),
  status_reason: optionalField(Text(2000), "Why the version has its status; without status, it explains the current one"),
  ...Struct.pick(VersionCreate.fields, ["supported_os", "supported_accelerators", "supported_host_version", "supported_host_frontend_version"])
})).annotate({ identifier: "AdminNodeVersionUpdate" })

export class AdminApi extends HttpApiGroup.make("admin")
  .add(
    HttpApiEndpoint.post("createUnclaimedNode", "/admin/nodes", {
      payload: AdminNodeCreate,
      success: Node.pipe(HttpApiSchema.status(201)),
      error: [Forbidden, NodeExists]
    })
      .annotate(OpenApi.Summary, "Create an unclaimed node (site admins)")
  )
  .add(
    HttpApiEndpoint.put("moderateNode", "/admin/nodes/:nodeId", {
      params: Schema.Struct({ nodeId: field(PathParam, "Identifier of the node") }),
      payload: AdminNodeUpdate,
      success: Node,
      error: [Forbidden, NotFound, Conflict]
    })
      .annotate(OpenApi.Summary, "Moderate a node (site admins): status, tags_admin, search_ranking, preempted host-node names, host compatibility")
  )
  .add(
    HttpApiEndpoint.put("moderatePublisher", "/admin/publishers/:publisherId", {
      params: Schema.Struct({ publisherId: field(PathParam, "Identifier of the publisher") }),
      payload: refusingUnknownFields(Schema.Struct({ status: field(PublisherStatus, "New status of the publisher") }))
        .annotate({ identifier: "AdminPublisherUpdate" }),
      success: Publisher,
      error: [Forbidden, NotFound, Conflict]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Ban or unban a publisher (site admins); a banned publisher's nodes leave every listing")
  )
  .add(
    HttpApiEndpoint.put("moderateVersion", "/admin/nodes/:nodeId/versions/:version", {
      params: Schema.Struct({ nodeId: field(PathParam, "Identifier of the node"), version: field(PathParam, "The version string (such as 1.2.0) or the version's id") }),
      payload: AdminNodeVersionUpdate,
      success: NodeVersion,
      error: [Forbidden, NotFound, Conflict, ArchiveMissing]
    })
      .annotate(OpenApi.Summary, "Set a version's status with a reason, or its compatibility (site admins)")
      .annotate(
        OpenApi.Description,
        "Fields left out are unchanged; an empty body changes nothing and answers the version. Status moves of CONTRACT.md's table only " +
          "(409 otherwise); NodeVersionStatusActive needs an uploaded archive (409 archive_missing). The compatibility fields replace " +
          "the version's own, which the host_version filter of GET /nodes reads; a deleted version's compatibility is 404. " +
          "A status move and the compatibility are one change: both or neither."
      )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Site administration")
{}
