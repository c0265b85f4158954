import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { BadRequest, Conflict, Forbidden, NodeBanned, NotFound } from "../Domain/ApiErrors.ts"
import { Authentication } from "../Domain/Auth.ts"
import { HostNode, HostNodeCreate, HostNodeUpdate, maxHostNodesPerRequest } from "../Domain/HostNode.ts"
import { field, PathParam } from "../Domain/Schemas.ts"

const VersionPath = Schema.Struct({ nodeId: field(PathParam, "Identifier of the node"), version: field(PathParam, "The version string, such as 1.2.0") })

export class PublicHostNodesApi extends HttpApiGroup.make("publicHostNodes")
  .add(
    HttpApiEndpoint.get("listHostNodes", "/nodes/:nodeId/versions/:version/host-nodes")
      .setPath(VersionPath)
      .addSuccess(Schema.Array(HostNode))
      .addError(BadRequest)
      .addError(NotFound)
      .addError(NodeBanned)
      .annotate(OpenApi.Summary, "List the host-nodes of a node version")
  )
  .annotate(OpenApi.Title, "Host-nodes")
{}

export class HostNodesApi extends HttpApiGroup.make("hostNodes")
  .add(
    HttpApiEndpoint.post("createHostNodes", "/nodes/:nodeId/versions/:version/host-nodes")
      .setPath(VersionPath)
      .setPayload(Schema.Array(HostNodeCreate).pipe(Schema.maxItems(maxHostNodesPerRequest)))
      .addSuccess(Schema.Array(HostNode), { status: 201 })
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(OpenApi.Summary, "Record the host-nodes of a node version (site admins: the extraction job)")
  )
  .add(
    HttpApiEndpoint.put("updateHostNode", "/nodes/:nodeId/versions/:version/host-nodes/:hostNodeName")
      .setPath(Schema.Struct({ nodeId: field(PathParam, "Identifier of the node"), version: field(PathParam, "The version string, such as 1.2.0"), hostNodeName: field(PathParam, "Name of the host-node") }))
      .setPayload(HostNodeUpdate)
      .addSuccess(HostNode)
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(OpenApi.Summary, "Update a host-node")
      .annotate(OpenApi.Description, "Owners and admins of the node's publisher, and site admins; `policy` is for site admins only. Answers the whole record.")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Host-nodes")
{}
