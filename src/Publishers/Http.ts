import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { Api } from "../Api.ts"
import { jsonText } from "../Domain/JsonText.ts"
import { Viewer } from "../Auth/Authentication.ts"
import { CurrentUser } from "../Auth/CurrentUser.ts"
import { requireRole } from "../Auth/Policy.ts"
import { CatalogWrites } from "../Catalog/Writes.ts"
import { reservedPublisherIds } from "../Domain/Publisher.ts"
import { move, publisherStatusMoves } from "../Domain/Transitions.ts"
import { BadRequest, Conflict, Forbidden, NotFound } from "../Errors.ts"
import { PublisherRepo } from "./Repo.ts"

/** The publisher's JSON, with members for members and site admins. */
const publisherFor = (publisherId: string, viewer: Option.Option<{ id: string; isSiteAdmin: boolean }>) =>
  Effect.gen(function*() {
    const publishers = yield* PublisherRepo
    const showMembers = Option.isSome(viewer) &&
      (viewer.value.isSiteAdmin || Option.isSome(yield* publishers.roleOf(publisherId, viewer.value.id)))
    const found = yield* publishers.findJson(publisherId, showMembers)
    if (Option.isNone(found)) return yield* new NotFound({ message: `No publisher '${publisherId}'` })
    return jsonText(found.value)
  })

export const PublicPublishersLive = HttpApiBuilder.group(Api, "publicPublishers", (handlers) =>
  Effect.gen(function*() {
    const publishers = yield* PublisherRepo
    return handlers.handle("getPublisher", ({ path }) =>
      Effect.flatMap(Viewer, (viewer) => publisherFor(path.publisherId, viewer)).pipe(
        Effect.provideService(PublisherRepo, publishers)
      ))
  }))

export const PublishersLive = HttpApiBuilder.group(Api, "publishers", (handlers) =>
  Effect.gen(function*() {
    const publishers = yield* PublisherRepo
    const writes = yield* CatalogWrites
    const withRepo = Effect.provideService(PublisherRepo, publishers)

    const ownersOnly = (publisherId: string) => withRepo(requireRole(publisherId, ["owner"], { siteAdmin: false }))

    return handlers
      .handle("createPublisher", ({ payload }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          if (reservedPublisherIds.has(payload.id)) {
            return yield* new Conflict({ code: "publisher_id_reserved", message: `The publisher id '${payload.id}' is reserved` })
          }
          if (!(yield* publishers.create(payload, user.id))) {
            return yield* new Conflict({ code: "publisher_exists", message: `The publisher id '${payload.id}' is taken` })
          }
          const created = yield* publishers.findJson(payload.id, true)
          return jsonText(Option.getOrThrow(created), 201)
        }))
      .handle("updatePublisher", ({ path, payload }) =>
        Effect.gen(function*() {
          const { user } = yield* withRepo(requireRole(path.publisherId, ["owner", "admin"], { siteAdmin: true }))
          if (payload.id !== undefined && payload.id !== path.publisherId) {
            return yield* new BadRequest({ message: `Invalid value for 'id': the body's id must be '${path.publisherId}'` })
          }
          if (payload.status !== undefined) {
            if (!user.isSiteAdmin) {
              return yield* new Forbidden({ message: "Only site admins may change a publisher's status" })
            }
            if (path.publisherId === "unclaimed" && payload.status !== "PublisherStatusActive") {
              return yield* new Conflict({ message: "The reserved publisher 'unclaimed' cannot be banned" })
            }
            const current = Option.getOrThrow(yield* publishers.status(path.publisherId))
            const verdict = move(publisherStatusMoves, current as typeof payload.status, payload.status)
            if (verdict === "refused") {
              return yield* new Conflict({ message: `A publisher cannot move from ${current} to ${payload.status}` })
            }
            if (verdict === "allowed") yield* writes.setPublisherStatus(path.publisherId, payload.status)
          }
          const { name, description, logo, website, support, source_code_repo } = payload
          yield* writes.updatePublisher(path.publisherId, { name, description, logo, website, support, source_code_repo })
          return yield* withRepo(publisherFor(path.publisherId, Option.some(user)))
        }))
      .handle("listMyPublishers", () =>
        Effect.flatMap(CurrentUser, (user) => Effect.map(publishers.listForUser(user.id), (body) => jsonText(body))))
      .handle("addMember", ({ path, payload }) =>
        Effect.gen(function*() {
          yield* ownersOnly(path.publisherId)
          const result = yield* publishers.setMember(path.publisherId, payload.user_id, payload.role)
          if (result === "unknown_user") {
            return yield* new NotFound({
              code: "user_not_found",
              message: `No user '${payload.user_id}': users are recorded when they first call the API`
            })
          }
          if (result === "last_owner") {
            return yield* new Conflict({ code: "last_owner", message: "A publisher keeps at least one owner" })
          }
          const member = yield* publishers.memberJson(path.publisherId, payload.user_id)
          return jsonText(Option.getOrThrow(member), result === "added" ? 201 : 200)
        }))
      .handle("removeMember", ({ path }) =>
        Effect.gen(function*() {
          yield* ownersOnly(path.publisherId)
          const result = yield* publishers.removeMember(path.publisherId, path.userId)
          if (result === "not_member") {
            return yield* new NotFound({ message: `'${path.userId}' is not a member of '${path.publisherId}'` })
          }
          if (result === "last_owner") {
            return yield* new Conflict({ code: "last_owner", message: "A publisher keeps at least one owner" })
          }
        }))
  }))
