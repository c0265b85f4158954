import { HttpApiBuilder } from "effect/http-api"
import { Effect, Layer } from "effect"
import { PublicHostNodesApi, HostNodesApi } from "./Api.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
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

/** This folder's groups, under what every endpoint shares: its handlers are built against these alone. */
const api = registryApi(PublicHostNodesApi, HostNodesApi)

const PublicHostNodesLive = HttpApiBuilder.group(api, "publicHostNodes", (handlers) =>
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

const HostNodesLive = HttpApiBuilder.group(api, "hostNodes", (handlers) =>
  Effect.map(HostNodes, (hostNodes) =>
    handlers
      .handle("createHostNodes", ({ params, payload }) => answer(hostNodes.create(params.nodeId, params.version, payload)))
      .handle("updateHostNodeExtractStatus", ({ params, payload }) =>
        answer(hostNodes.extractionFailed(params.nodeId, params.version, payload.reason)))
      .handle("updateHostNode", ({ params, payload }) =>
        answer(hostNodes.update(params.nodeId, params.version, params.hostNodeName, payload)))))

/** This folder's handlers, with the services they use (src/App.ts provides what every feature shares). */
export const HostNodesHttp = Layer.mergeAll(PublicHostNodesLive, HostNodesLive).pipe(Layer.provide(HostNodes.layer))
