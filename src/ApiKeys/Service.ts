/** User API keys: a signed-in user creates, lists and revokes their own. */
import { Context, Effect, Layer } from "effect"
import { CreatedApiKey, ApiKeyList } from "../Domain/ApiKey.ts"
import { CurrentUser } from "../Domain/Auth.ts"
import { traced } from "../Tracing.ts"
import { ApiKeyRepo } from "./Repo.ts"

export class ApiKeys extends Context.Service<ApiKeys>()("ApiKeys", {
  make: Effect.gen(function*() {
    const keys = yield* ApiKeyRepo
    return {
      create: traced("ApiKeys.create")(
        function*(key: { readonly name: string; readonly description?: string | undefined }) {
          const user = yield* CurrentUser
          const created = yield* keys.create({ userId: user.id, name: key.name, description: key.description })
          return new CreatedApiKey({ api_key: created })
        }
      ),
      list: traced("ApiKeys.list")(function*() {
        const user = yield* CurrentUser
        return new ApiKeyList({ api_keys: yield* keys.list(user.id) })
      }),
      /** Another user's key answers as a missing one: its existence is not the caller's business. */
      revoke: traced("ApiKeys.revoke")(function*(keyId: string) {
        const user = yield* CurrentUser
        yield* keys.revoke(user.id, keyId)
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(ApiKeys, ApiKeys.make)
  static readonly layer = ApiKeys.layerWithoutDependencies.pipe(Layer.provide(ApiKeyRepo.layer))
}
