import { HttpApiBuilder } from "@effect/platform"
import { Effect, Redacted } from "effect"
import { Api } from "../Api.ts"
import { managerRoles, requireRole } from "../Auth/Policy.ts"
import { NotFound } from "../Errors.ts"
import { TokenRepo } from "./Repo.ts"

/** Owners and admins of the publisher; site admins manage tokens only through membership. */
const requireManager = (publisherId: string) => requireRole(publisherId, managerRoles, { siteAdmin: false })

export const TokensLive = HttpApiBuilder.group(Api, "tokens", (handlers) =>
  Effect.gen(function*() {
    const tokens = yield* TokenRepo
    return handlers
      .handle("createToken", ({ path, payload }) =>
        Effect.gen(function*() {
          const { user } = yield* requireManager(path.publisherId)
          const value = yield* tokens.create({
            publisherId: path.publisherId,
            name: payload.name,
            description: payload.description,
            createdBy: user.id
          })
          return { token: Redacted.value(value) }
        }))
      .handle("listTokens", ({ path }) =>
        Effect.zipRight(requireManager(path.publisherId), tokens.list(path.publisherId)))
      .handle("revokeToken", ({ path }) =>
        Effect.gen(function*() {
          yield* requireManager(path.publisherId)
          if (!(yield* tokens.revoke(path.publisherId, path.tokenId))) {
            return yield* new NotFound({ message: `Publisher '${path.publisherId}' has no token '${path.tokenId}'` })
          }
        }))
  }))
