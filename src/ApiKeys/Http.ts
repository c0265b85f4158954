import { HttpApiBuilder } from "effect/http-api"
import { Effect, Layer } from "effect"
import { ApiKeysApi } from "./Api.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
import { ApiKeys } from "./Service.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import { NotFound } from "../Domain/ApiErrors.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({
  ...sharedAnswers,
  ApiKeyMissing: NotFound
})

/** This folder's groups, under what every endpoint shares: its handlers are built against these alone. */
const api = registryApi(ApiKeysApi)

const ApiKeysLive = HttpApiBuilder.group(api, "apiKeys", (handlers) =>
  Effect.map(ApiKeys, (keys) =>
    handlers
      .handle("createApiKey", ({ payload }) => answer(keys.create(payload)))
      .handle("listApiKeys", () => answer(keys.list()))
      .handle("revokeApiKey", ({ params }) => answer(keys.revoke(params.keyId)))))

/** This folder's handlers, with the services they use (src/App.ts provides what every feature shares). */
export const ApiKeysHttp = ApiKeysLive.pipe(Layer.provide(ApiKeys.layer))
