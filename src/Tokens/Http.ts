import { HttpApiBuilder } from "effect/http-api"
import { Effect, Layer } from "effect"
import { TokensApi } from "./Api.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
import { Tokens } from "./Service.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import { NotFound } from "../Domain/ApiErrors.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({
  ...sharedAnswers,
  TokenMissing: NotFound
})

/** This folder's groups, under what every endpoint shares: its handlers are built against these alone. */
const api = registryApi(TokensApi)

const TokensLive = HttpApiBuilder.group(api, "tokens", (handlers) =>
  Effect.map(Tokens, (tokens) =>
    handlers
      .handle("createToken", ({ params, payload }) => answer(tokens.create(params.publisherId, payload)))
      .handle("listTokens", ({ params }) => answer(tokens.list(params.publisherId)))
      .handle("revokeToken", ({ params }) => answer(tokens.revoke(params.publisherId, params.tokenId)))))

/** This folder's handlers, with the services they use (src/App.ts provides what every feature shares). */
export const TokensHttp = TokensLive.pipe(Layer.provide(Tokens.layer))
