import { HttpApiBuilder } from "effect/http-api"
import { Effect, Redacted } from "effect"
import { Api } from "../Api.ts"
import { ClaimResult } from "./Api.ts"
import { Claims } from "./Service.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import { InvalidVcsToken, NodeAlreadyClaimed, RateLimited, RepositoryNotOwned, RepositoryNotRecognised, ServiceUnavailable } from "../Domain/ApiErrors.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({
  ...sharedAnswers,
  AlreadyClaimed: NodeAlreadyClaimed,
  RepositoryUnrecognised: RepositoryNotRecognised,
  NotRepositoryAdmin: RepositoryNotOwned,
  RepohostInvalidToken: InvalidVcsToken,
  RepohostRateLimited: RateLimited,
  RepohostUnavailable: ServiceUnavailable
})

export const ClaimsLive = HttpApiBuilder.group(Api, "claims", (handlers) =>
  Effect.map(Claims, (claims) =>
    handlers.handle("claimMyNode", ({ params, payload }) =>
      // a Schema.Class encodes its instances only
      answer(claims.claim(params.publisherId, params.nodeId, Redacted.make(payload.VCS_TOKEN))).pipe(
        Effect.map((claimed) => new ClaimResult(claimed, { disableChecks: true }))
      ))))
