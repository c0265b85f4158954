import { HttpApiBuilder } from "effect/http-api"
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
      .handle("moderateNode", ({ params, payload }) => answer(moderation.moderateNode(params.nodeId, payload)))
      .handle("moderateVersion", ({ params, payload }) =>
        answer(moderation.moderateVersion(params.nodeId, params.version, payload)))
      .handle("moderatePublisher", ({ params, payload }) => answer(publishers.moderate(params.publisherId, payload.status)))
  }))
