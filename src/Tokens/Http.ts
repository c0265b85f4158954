import { HttpApiBuilder } from "effect/http-api"
import { Effect } from "effect"
import { Api } from "../Api.ts"
import { Tokens } from "./Service.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import { NotFound } from "../Domain/ApiErrors.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({
  ...sharedAnswers,
  TokenMissing: NotFound
})

export const TokensLive = HttpApiBuilder.group(Api, "tokens", (handlers) =>
  Effect.map(Tokens, (tokens) =>
    handlers
      .handle("createToken", ({ params, payload }) => answer(tokens.create(params.publisherId, payload)))
      .handle("listTokens", ({ params }) => answer(tokens.list(params.publisherId)))
      .handle("revokeToken", ({ params }) => answer(tokens.revoke(params.publisherId, params.tokenId)))))
