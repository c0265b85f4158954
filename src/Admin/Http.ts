import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.ts"
import { answer } from "../Errors.ts"
import { Publishers } from "../Publishers/Service.ts"
import { Moderation } from "./Service.ts"

export const AdminLive = HttpApiBuilder.group(Api, "admin", (handlers) =>
  Effect.gen(function*() {
    const moderation = yield* Moderation
    const publishers = yield* Publishers
    return handlers
      .handle("createUnclaimedNode", ({ payload }) => answer(moderation.createUnclaimedNode(payload)))
      .handle("moderateNode", ({ path, payload }) => answer(moderation.moderateNode(path.nodeId, payload)))
      .handle("moderateVersion", ({ path, payload }) =>
        answer(moderation.moderateVersion(path.nodeId, path.version, payload)))
      .handle("moderatePublisher", ({ path, payload }) => answer(publishers.moderate(path.publisherId, payload.status)))
  }))
