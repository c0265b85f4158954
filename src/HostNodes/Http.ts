import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.ts"
import { defaultPage } from "../Catalog/Api.ts"
import { defaultHostNodePageSize } from "../Domain/HostNode.ts"
import { answer } from "../Errors.ts"
import { HostNodes } from "./Service.ts"

export const PublicHostNodesLive = HttpApiBuilder.group(Api, "publicHostNodes", (handlers) =>
  Effect.map(HostNodes, (hostNodes) =>
    handlers
      .handle("listHostNodes", ({ path }) => answer(hostNodes.list(path.nodeId, path.version)))
      .handle("getHostNode", ({ path }) => answer(hostNodes.get(path.nodeId, path.version, path.hostNodeName)))
      .handle("listAllHostNodes", ({ urlParams }) =>
        hostNodes.listAll({
          page: urlParams.page ?? defaultPage,
          pageSize: urlParams.pageSize ?? defaultHostNodePageSize,
          nodeId: urlParams.node_id,
          nodeVersion: urlParams.node_version,
          name: urlParams.host_node_name
        }))
      .handle("getNodeByHostNodeName", ({ path }) => answer(hostNodes.provider(path.hostNodeName)))))

export const HostNodesLive = HttpApiBuilder.group(Api, "hostNodes", (handlers) =>
  Effect.map(HostNodes, (hostNodes) =>
    handlers
      .handle("createHostNodes", ({ path, payload }) => answer(hostNodes.create(path.nodeId, path.version, payload)))
      .handle("updateHostNode", ({ path, payload }) =>
        answer(hostNodes.update(path.nodeId, path.version, path.hostNodeName, payload)))))
