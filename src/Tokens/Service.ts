/** Personal access tokens: owners and admins of a publisher create, list and revoke them. */
import { Context, Effect, Layer, Redacted } from "effect"
import { Policy } from "../Auth/Policy.ts"
import { managerRoles } from "../Domain/Publisher.ts"
import { CreatedToken } from "../Domain/Token.ts"
import { TokenRepo } from "./Repo.ts"
import { traced } from "../Tracing.ts"

export class Tokens extends Context.Service<Tokens>()("Tokens", {
  make: Effect.gen(function*() {
    const tokens = yield* TokenRepo
    const policy = yield* Policy
    /** Owners and admins of the publisher; site admins manage tokens only through membership. */
    const requireManager = (publisherId: string) => policy.requireRole(publisherId, managerRoles, { siteAdmin: false })

    return {
      create: traced("Tokens.create")(
        function*(publisherId: string, token: { readonly name: string; readonly description?: string | undefined }) {
          const { user } = yield* requireManager(publisherId)
          const value = yield* tokens.create({ publisherId, name: token.name, description: token.description, createdBy: user.id })
          return new CreatedToken({ token: Redacted.value(value) })
        }
      ),
      list: traced("Tokens.list")(function*(publisherId: string) {
        yield* requireManager(publisherId)
        return yield* tokens.list(publisherId)
      }),
      revoke: traced("Tokens.revoke")(function*(publisherId: string, tokenId: string) {
        yield* requireManager(publisherId)
        yield* tokens.revoke(publisherId, tokenId)
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(Tokens, Tokens.make)
  static readonly layer = Tokens.layerWithoutDependencies.pipe(Layer.provide([TokenRepo.layer, Policy.layer]))
}
