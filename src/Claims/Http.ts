import { HttpApiBuilder } from "effect/http-api"
import { Effect, Redacted } from "effect"
import { Api } from "../Api.ts"
import { answer } from "../Errors.ts"
import { ClaimResult } from "./Api.ts"
import { Claims } from "./Service.ts"

export const ClaimsLive = HttpApiBuilder.group(Api, "claims", (handlers) =>
  Effect.map(Claims, (claims) =>
    handlers.handle("claimMyNode", ({ params, payload }) =>
      // a Schema.Class encodes its instances only
      answer(claims.claim(params.publisherId, params.nodeId, Redacted.make(payload.VCS_TOKEN))).pipe(
        Effect.map((claimed) => new ClaimResult(claimed, { disableChecks: true }))
      ))))
