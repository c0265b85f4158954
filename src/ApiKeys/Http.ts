import { HttpApiBuilder } from "effect/http-api"
import { Effect } from "effect"
import { Api } from "../Api.ts"
import { ApiKeys } from "./Service.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import { NotFound } from "../Domain/ApiErrors.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({
  ...sharedAnswers,
  ApiKeyMissing: NotFound
})

export const ApiKeysLive = HttpApiBuilder.group(Api, "apiKeys", (handlers) =>
  Effect.map(ApiKeys, (keys) =>
    handlers
      .handle("createApiKey", ({ payload }) => answer(keys.create(payload)))
      .handle("listApiKeys", () => answer(keys.list()))
      .handle("revokeApiKey", ({ params }) => answer(keys.revoke(params.keyId)))))
