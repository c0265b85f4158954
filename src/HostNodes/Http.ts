import { HttpApiBuilder } from "effect/http-api"
import { Effect } from "effect"
import { Api } from "../Api.ts"
import { defaultPage } from "../Catalog/Api.ts"
import { defaultHostNodePageSize } from "../Domain/HostNode.ts"
import { HostNodes } from "./Service.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import { Conflict, NotFound } from "../Domain/ApiErrors.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({
  ...sharedAnswers,
  HostNodeMissing: NotFound,
  HostNodeProviderMissing: NotFound,
  HostNodeNamesRepeated: Conflict,
  HostNodeNamesTaken: Conflict
})

export const PublicHostNodesLive = HttpApiBuilder.group(Api, "publicHostNodes", (handlers) =>
  Effect.map(HostNodes, (hostNodes) =>
    handlers
      .handle("listHostNodes", ({ params }) => answer(hostNodes.list(params.nodeId, params.version)))
      .handle("getHostNode", ({ params }) => answer(hostNodes.get(params.nodeId, params.version, params.hostNodeName)))
      .handle("listAllHostNodes", ({ query }) =>
        hostNodes.listAll({
          page: query.page ?? defaultPage,
          pageSize: query.pageSize ?? defaultHostNodePageSize,
          nodeId: query.node_id,
          nodeVersion: query.node_version,
          name: query.host_node_name
        }))
      .handle("getNodeByHostNodeName", ({ params }) => answer(hostNodes.provider(params.hostNodeName)))))

export const HostNodesLive = HttpApiBuilder.group(Api, "hostNodes", (handlers) =>
  Effect.map(HostNodes, (hostNodes) =>
    handlers
      .handle("createHostNodes", ({ params, payload }) => answer(hostNodes.create(params.nodeId, params.version, payload)))
      .handle("updateHostNode", ({ params, payload }) =>
        answer(hostNodes.update(params.nodeId, params.version, params.hostNodeName, payload)))))
