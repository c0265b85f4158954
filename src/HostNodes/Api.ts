import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import { optionalParam, Page, PageSize } from "../Catalog/Api.ts"
import { Conflict, Forbidden, NodeBanned, NotFound } from "../Domain/ApiErrors.ts"
import { Authentication } from "../Domain/Auth.ts"
import {
  defaultHostNodePageSize,
  HostNode,
  HostNodeCreate,
  HostNodeExtractionFailure,
  HostNodePage,
  HostNodeUpdate,
  maxHostNodePageSize,
  maxHostNodesPerRequest
} from "../Domain/HostNode.ts"
import { Node } from "../Domain/Node.ts"
import { field, PathParam, refusingBody, refusingUnknownFields, Text } from "../Domain/Schemas.ts"

const VersionPath = Schema.Struct({ nodeId: field(PathParam, "Identifier of the node"), version: field(PathParam, "The version string, such as 1.2.0") })
const RecordPath = Schema.Struct({ ...VersionPath.fields, hostNodeName: field(PathParam, "Name of the host-node") })

export const ListAllHostNodesParams = Schema.Struct({
  page: Page,
  pageSize: PageSize(maxHostNodePageSize, defaultHostNodePageSize, "Records"),
  node_id: optionalParam(Text(200), "Only records of this node"),
  node_version: optionalParam(Text(200), "Only records of versions with this version string"),
  host_node_name: optionalParam(Text(200), "Only records of this host-node name")
})
export type ListAllHostNodesParams = typeof ListAllHostNodesParams.Type

const publicOnly = "Records of active versions of listed nodes only (the node and its publisher active)."

export class PublicHostNodesApi extends HttpApiGroup.make("publicHostNodes")
  .add(
    HttpApiEndpoint.get("listHostNodes", "/nodes/:nodeId/versions/:version/host-nodes", {
      params: VersionPath,
      success: Schema.Array(HostNode),
      error: [NotFound, NodeBanned]
    })
      .annotate(OpenApi.Summary, "List the host-nodes of a node version")
  )
  .add(
    HttpApiEndpoint.get("getHostNode", "/nodes/:nodeId/versions/:version/host-nodes/:hostNodeName", {
      params: RecordPath,
      success: HostNode,
      error: [NotFound, NodeBanned]
    })
      .annotate(OpenApi.Summary, "Get one host-node of a node version")
      .annotate(
        OpenApi.Description,
        "404 when the version has no such host-node, or the version is not active; a banned node (or publisher) is 403 node_banned."
      )
  )
  .add(
    HttpApiEndpoint.get("listAllHostNodes", "/host-nodes", {
      query: ListAllHostNodesParams,
      success: HostNodePage
    })
      .annotate(OpenApi.Summary, "List host-nodes across nodes (paginated)")
      .annotate(
        OpenApi.Description,
        `${publicOnly} By host-node name (byte order), then node id, then newest version first.`
      )
  )
  .add(
    HttpApiEndpoint.get("getNodeByHostNodeName", "/host-nodes/:hostNodeName/node", {
      params: Schema.Struct({ hostNodeName: field(PathParam, "Name of the host-node") }),
      success: Node,
      error: [NotFound]
    })
      .annotate(OpenApi.Summary, "Get the node that provides a host-node")
      .annotate(
        OpenApi.Description,
        "The listed node whose latest active version has a host-node of this name (a record with policy " +
          "HostNodePolicyBanned does not count); 404 when there is none. When several do: the node that lists the " +
          "name in preempted_host_node_names first, then the lowest search_ranking (unset last), then the most " +
          "downloads, then the node id."
      )
  )
  .annotate(OpenApi.Title, "Host-nodes")
{}

export class HostNodesApi extends HttpApiGroup.make("hostNodes")
  .add(
    HttpApiEndpoint.post("createHostNodes", "/nodes/:nodeId/versions/:version/host-nodes", {
      params: VersionPath,
      payload: refusingUnknownFields(Schema.Array(HostNodeCreate).pipe(Schema.check(Schema.isMaxLength(maxHostNodesPerRequest)))),
      success: Schema.Array(HostNode).pipe(HttpApiSchema.status(201)),
      error: [Forbidden, NotFound, Conflict]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Record the host-nodes of a node version (site admins: the extraction job)")
      .annotate(
        OpenApi.Description,
        "All the records or none. The version's host_node_extract_status is then `success` (an empty body records that it has none)."
      )
  )
  .add(
    HttpApiEndpoint.put("updateHostNodeExtractStatus", "/nodes/:nodeId/versions/:version/host-node-extract-status", {
      params: VersionPath,
      payload: HostNodeExtractionFailure,
      success: HttpApiSchema.NoContent,
      error: [Forbidden, NotFound, Conflict]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Report that a version's host-node extraction failed (site admins: the extraction job)")
      .annotate(
        OpenApi.Description,
        "Sets host_node_extract_status to `failed` (publishing sets `pending`, posting the records `success`). " +
          "Reporting it again changes nothing; once the records are in, it is refused (409 conflict) and the status stays `success`."
      )
  )
  .add(
    HttpApiEndpoint.put("updateHostNode", "/nodes/:nodeId/versions/:version/host-nodes/:hostNodeName", {
      params: RecordPath,
      payload: HostNodeUpdate,
      success: HostNode,
      error: [Forbidden, NotFound, Conflict]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Update a host-node")
      .annotate(OpenApi.Description, "Owners and admins of the node's publisher, and site admins; `policy` is for site admins only. Answers the whole record.")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Host-nodes")
{}
