import { HttpApiBuilder } from "effect/http-api"
import { Effect, Layer, Redacted } from "effect"
import { ClaimApi, ClaimResult } from "./Api.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
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

/** This folder's groups, under what every endpoint shares: its handlers are built against these alone. */
const api = registryApi(ClaimApi)

const ClaimsLive = HttpApiBuilder.group(api, "claims", (handlers) =>
  Effect.map(Claims, (claims) =>
    handlers.handle("claimMyNode", ({ params, payload }) =>
      // a Schema.Class encodes its instances only
      answer(claims.claim(params.publisherId, params.nodeId, Redacted.make(payload.VCS_TOKEN))).pipe(
        Effect.map((claimed) => new ClaimResult(claimed, { disableChecks: true }))
      ))))

/** This folder's handlers, with the services they use (src/App.ts provides what every feature shares). */
export const ClaimsHttp = ClaimsLive.pipe(Layer.provide(Claims.layer))
