import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ArchiveMissing, BadRequest, Conflict, Forbidden, NodeExists, NotFound } from "../Domain/ApiErrors.ts"
import { Authentication } from "../Domain/Auth.ts"
import { Node, NodeId, NodeStatus, NodeVersion, NodeVersionStatus } from "../Domain/Node.ts"
import { Publisher, PublisherStatus } from "../Domain/Publisher.ts"
import { NonEmptyText, optional, PathParam, Text, TextList } from "../Domain/Schemas.ts"

/** Body of `POST /admin/nodes`: a node waiting in the `unclaimed` publisher for its author. */
export const AdminNodeCreate = Schema.Struct({
  id: NodeId,
  repository: NonEmptyText(2000),
  name: optional(Text(200)),
  description: optional(Text(5000)),
  author: optional(Text(200)),
  license: optional(Text(2000)),
  icon: optional(Text(2000)),
  tags: optional(TextList(50, 100))
}).annotations({ identifier: "AdminNodeCreate" })

/** Body of `PUT /admin/nodes/{nodeId}`: moderation fields only. */
export const AdminNodeUpdate = Schema.Struct({
  status: optional(NodeStatus),
  status_detail: optional(Text(2000)),
  tags_admin: optional(TextList(50, 100)),
  search_ranking: optional(Schema.Int),
  preempted_host_node_names: optional(TextList(500, 200))
}).annotations({ identifier: "AdminNodeUpdate" })

export class AdminApi extends HttpApiGroup.make("admin")
  .add(
    HttpApiEndpoint.post("createUnclaimedNode", "/admin/nodes")
      .setPayload(AdminNodeCreate)
      .addSuccess(Node, { status: 201 })
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(NodeExists)
      .annotate(OpenApi.Summary, "Create an unclaimed node (site admins)")
  )
  .add(
    HttpApiEndpoint.put("moderateNode", "/admin/nodes/:nodeId")
      .setPath(Schema.Struct({ nodeId: PathParam }))
      .setPayload(AdminNodeUpdate)
      .addSuccess(Node)
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(OpenApi.Summary, "Moderate a node (site admins): status, tags_admin, search_ranking, preempted host-node names")
  )
  .add(
    HttpApiEndpoint.put("moderatePublisher", "/admin/publishers/:publisherId")
      .setPath(Schema.Struct({ publisherId: PathParam }))
      .setPayload(Schema.Struct({ status: PublisherStatus }).annotations({ identifier: "AdminPublisherUpdate" }))
      .addSuccess(Publisher)
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(OpenApi.Summary, "Ban or unban a publisher (site admins); a banned publisher's nodes leave every listing")
  )
  .add(
    HttpApiEndpoint.put("moderateVersion", "/admin/nodes/:nodeId/versions/:version")
      .setPath(Schema.Struct({ nodeId: PathParam, version: PathParam }))
      .setPayload(Schema.Struct({ status: NodeVersionStatus, status_reason: optional(Text(2000)) })
        .annotations({ identifier: "AdminNodeVersionUpdate" }))
      .addSuccess(NodeVersion)
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Conflict)
      .addError(ArchiveMissing)
      .annotate(OpenApi.Summary, "Set a version's status with a reason (site admins)")
      .annotate(OpenApi.Description, "Moves of CONTRACT.md's table only (409 otherwise); NodeVersionStatusActive needs an uploaded archive (409 archive_missing).")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Site administration")
{}
