import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.ts"
import { answer } from "../Errors.ts"
import { Tokens } from "./Service.ts"

export const TokensLive = HttpApiBuilder.group(Api, "tokens", (handlers) =>
  Effect.map(Tokens, (tokens) =>
    handlers
      .handle("createToken", ({ path, payload }) => answer(tokens.create(path.publisherId, payload)))
      .handle("listTokens", ({ path }) => answer(tokens.list(path.publisherId)))
      .handle("revokeToken", ({ path }) => answer(tokens.revoke(path.publisherId, path.tokenId)))))
