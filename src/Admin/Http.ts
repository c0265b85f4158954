import { HttpApiBuilder } from "effect/http-api"
import { Effect, Layer } from "effect"
import { CurrentUser } from "../Domain/Auth.ts"
import { AdminApi, heldPageSize } from "./Api.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
import { Publishers } from "../Publishers/Service.ts"
import { Moderation } from "./Service.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import { ArchiveMissing, Conflict, NodeExists } from "../Domain/ApiErrors.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({
  ...sharedAnswers,
  NodeIdTaken: NodeExists,
  NodesPublisherDeleted: Conflict,
  NoArchive: ArchiveMissing,
  TokensIssuedElsewhere: Conflict,
  UnclaimedStaysActive: Conflict,
  NotHeld: Conflict
})

/** This folder's groups, under what every endpoint shares: its handlers are built against these alone. */
const api = registryApi(AdminApi)

const AdminLive = HttpApiBuilder.group(api, "admin", (handlers) =>
  Effect.gen(function*() {
    const moderation = yield* Moderation
    const publishers = yield* Publishers
    return handlers
      .handle("createUnclaimedNode", ({ payload }) => answer(moderation.createUnclaimedNode(payload)))
      .handle("moderateNode", ({ params, payload }) => answer(moderation.moderateNode(params.nodeId, payload)))
      .handle("moderateVersion", ({ params, payload }) =>
        answer(moderation.moderateVersion(params.nodeId, params.version, payload)))
      .handle("getUser", () =>
        Effect.map(CurrentUser, (user) => ({
          id: user.id,
          ...(user.email === undefined ? {} : { email: user.email }),
          ...(user.name === undefined ? {} : { name: user.name }),
          isAdmin: user.isSiteAdmin
        })))
      .handle("banPublisher", ({ params }) => answer(Effect.asVoid(publishers.moderate(params.publisherId, "PublisherStatusBanned"))))
      .handle("banPublisherNode", ({ params }) => answer(moderation.banPublisherNode(params.publisherId, params.nodeId)))
      .handle("generateAdminToken", () => answer(moderation.generateAdminToken()))
      .handle("moderatePublisher", ({ params, payload }) => answer(publishers.moderate(params.publisherId, payload.status)))
      .handle("listHeldVersions", ({ query }) =>
        answer(moderation.heldVersions({
          page: query.page ?? 1,
          limit: query.limit ?? heldPageSize.fallback,
          publisherId: query.publisher_id,
          rule: query.rule
        })))
      .handle("decideVersionReview", ({ params, payload }) => answer(moderation.decideReview(params.nodeId, params.versionId, payload)))
      .handle("rescanAllVersions", () => answer(moderation.rescanAll()))
      .handle("listAuditLog", ({ query }) => answer(moderation.auditLog(query.page ?? 1, query.limit ?? heldPageSize.fallback)))
  }))

/** This folder's handlers, with the services they use (src/App.ts provides what every feature shares). */
export const AdminHttp = AdminLive.pipe(Layer.provide([Moderation.layer, Publishers.layer]))
