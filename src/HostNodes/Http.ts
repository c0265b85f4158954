import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.ts"
import { answer } from "../Errors.ts"
import { HostNodes } from "./Service.ts"

export const PublicHostNodesLive = HttpApiBuilder.group(Api, "publicHostNodes", (handlers) =>
  Effect.map(HostNodes, (hostNodes) =>
    handlers.handle("listHostNodes", ({ path }) => answer(hostNodes.list(path.nodeId, path.version)))))

export const HostNodesLive = HttpApiBuilder.group(Api, "hostNodes", (handlers) =>
  Effect.map(HostNodes, (hostNodes) =>
    handlers
      .handle("createHostNodes", ({ path, payload }) => answer(hostNodes.create(path.nodeId, path.version, payload)))
      .handle("updateHostNode", ({ path, payload }) =>
        answer(hostNodes.update(path.nodeId, path.version, path.hostNodeName, payload)))))
