import { HttpApiBuilder } from "effect/http-api"
import { HttpServerResponse } from "effect/http"
import { Effect, Layer, Schema } from "effect"
import { maxPublishersPerPage, PublicPublishersApi, PublishersApi } from "./Api.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
import { defaultPage } from "../Catalog/Api.ts"
import { PublisherMember } from "../Domain/Publisher.ts"
import { MemberChange } from "./Repo.ts"
import { Publishers } from "./Service.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import { Conflict, LastOwner, NotFound, PublisherExists, PublisherHasNodes, PublisherIdReserved, UserNotFound } from "../Domain/ApiErrors.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({
  ...sharedAnswers,
  PublisherIdTaken: PublisherExists,
  PublisherIdIsReserved: PublisherIdReserved,
  UnknownUser: UserNotFound,
  NotAMember: NotFound,
  LastOwnerStays: LastOwner,
  UnclaimedStaysActive: Conflict,
  PublisherNotEmpty: PublisherHasNodes,
  UnclaimedStays: Conflict
})

const memberResponse = HttpServerResponse.schemaJson(Schema.toCodecJson(PublisherMember))

/** This folder's groups, under what every endpoint shares: its handlers are built against these alone. */
const api = registryApi(PublicPublishersApi, PublishersApi)

const PublicPublishersLive = HttpApiBuilder.group(api, "publicPublishers", (handlers) =>
  Effect.map(Publishers, (publishers) =>
    handlers
      .handle("validatePublisher", ({ query }) => publishers.validate(query.username))
      .handle("listPublishers", ({ query }) => {
        const limit = query.limit ?? maxPublishersPerPage
        return publishers.list({ offset: ((query.page ?? defaultPage) - 1) * limit, limit })
      })
      .handle("getPublisher", ({ params }) => answer(publishers.get(params.publisherId)))))

const PublishersLive = HttpApiBuilder.group(api, "publishers", (handlers) =>
  Effect.map(Publishers, (publishers) =>
    handlers
      .handle("createPublisher", ({ payload }) => answer(publishers.create(payload)))
      .handle("updatePublisher", ({ params, payload }) => answer(publishers.update(params.publisherId, payload)))
      .handle("deletePublisher", ({ params }) => answer(publishers.delete(params.publisherId)))
      .handle("getPermissionOnPublisher", ({ params }) => answer(publishers.permission(params.publisherId)))
      .handle("getPermissionOnPublisherNodes", ({ params }) => answer(publishers.nodePermission(params.publisherId, params.nodeId)))
      .handle("listMyPublishers", () => publishers.mine())
      .handle("addMember", ({ params, payload }) =>
        publishers.setMember(params.publisherId, payload.user_id, payload.role).pipe(
          answer,
          // a new member is 201 (the endpoint's status); a changed role is the same record, 200
          Effect.flatMap(({ change, member }): Effect.Effect<PublisherMember | HttpServerResponse.HttpServerResponse> =>
            MemberChange.$is("Added")(change)
              ? Effect.succeed(member)
              : Effect.orDie(memberResponse(member, { status: 200 }))
          )
        ))
      .handle("removeMember", ({ params }) => answer(publishers.removeMember(params.publisherId, params.userId)))))

/** This folder's handlers, with the services they use (src/App.ts provides what every feature shares). */
export const PublishersHttp = Layer.mergeAll(PublicPublishersLive, PublishersLive).pipe(Layer.provide(Publishers.layer))
