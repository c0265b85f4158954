import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Schema } from "effect"
import { Api } from "../Api.ts"
import { defaultPage } from "../Catalog/Api.ts"
import { PublisherMember } from "../Domain/Publisher.ts"
import { answer } from "../Errors.ts"
import { maxPublishersPerPage } from "./Api.ts"
import { MemberChange } from "./Repo.ts"
import { Publishers } from "./Service.ts"

const encodeMember = Schema.encode(PublisherMember)

export const PublicPublishersLive = HttpApiBuilder.group(Api, "publicPublishers", (handlers) =>
  Effect.map(Publishers, (publishers) =>
    handlers
      .handle("validatePublisher", ({ urlParams }) => publishers.validate(urlParams.username))
      .handle("listPublishers", ({ urlParams }) => {
        const limit = urlParams.limit ?? maxPublishersPerPage
        return publishers.list({ offset: ((urlParams.page ?? defaultPage) - 1) * limit, limit })
      })
      .handle("getPublisher", ({ path }) => answer(publishers.get(path.publisherId)))))

export const PublishersLive = HttpApiBuilder.group(Api, "publishers", (handlers) =>
  Effect.map(Publishers, (publishers) =>
    handlers
      .handle("createPublisher", ({ payload }) => answer(publishers.create(payload)))
      .handle("updatePublisher", ({ path, payload }) => answer(publishers.update(path.publisherId, payload)))
      .handle("deletePublisher", ({ path }) => answer(publishers.delete(path.publisherId)))
      .handle("getPermissionOnPublisher", ({ path }) => answer(publishers.permission(path.publisherId)))
      .handle("getPermissionOnPublisherNodes", ({ path }) => answer(publishers.nodePermission(path.publisherId, path.nodeId)))
      .handle("listMyPublishers", () => publishers.mine())
      .handle("addMember", ({ path, payload }) =>
        publishers.setMember(path.publisherId, payload.user_id, payload.role).pipe(
          answer,
          // a new member is 201 (the endpoint's status); a changed role is the same record, 200
          Effect.flatMap(({ change, member }): Effect.Effect<PublisherMember | HttpServerResponse.HttpServerResponse> =>
            MemberChange.$is("Added")(change)
              ? Effect.succeed(member)
              : encodeMember(member).pipe(
                Effect.flatMap((body) => HttpServerResponse.json(body, { status: 200 })),
                Effect.orDie
              )
          )
        ))
      .handle("removeMember", ({ path }) => answer(publishers.removeMember(path.publisherId, path.userId)))))
