import { HttpApiBuilder } from "@effect/platform"
import { Effect, Redacted } from "effect"
import { Api } from "../Api.ts"
import { answer } from "../Errors.ts"
import { Claims } from "./Service.ts"

export const ClaimsLive = HttpApiBuilder.group(Api, "claims", (handlers) =>
  Effect.map(Claims, (claims) =>
    handlers.handle("claimMyNode", ({ path, payload }) =>
      answer(claims.claim(path.publisherId, path.nodeId, Redacted.make(payload.VCS_TOKEN))))))
