import { HttpApiBuilder } from "effect/http-api"
import { Effect } from "effect"
import { Api } from "../Api.ts"
import { answer } from "../Errors.ts"
import { ApiKeys } from "./Service.ts"

export const ApiKeysLive = HttpApiBuilder.group(Api, "apiKeys", (handlers) =>
  Effect.map(ApiKeys, (keys) =>
    handlers
      .handle("createApiKey", ({ payload }) => answer(keys.create(payload)))
      .handle("listApiKeys", () => answer(keys.list()))
      .handle("revokeApiKey", ({ params }) => answer(keys.revoke(params.keyId)))))
