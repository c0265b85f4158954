import { HttpApiBuilder } from "effect/http-api"
import { Effect, Layer, Redacted } from "effect"
import { AuthFailures } from "../Auth/Failures.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import { BadRequest, Conflict, IdentityTokenRefused, NotFound, RateLimited, ServiceUnavailable } from "../Domain/ApiErrors.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
import { TrustedPublishersApi, TrustedPublishingApi } from "./Api.ts"
import { TrustedPublishing } from "./Service.ts"
import { TrustedPublishingAudience } from "../Domain/TrustedPublisher.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({
  ...sharedAnswers,
  TrustedPublisherMissing: NotFound,
  TrustedPublisherRefused: BadRequest,
  TooManyTrustedPublishers: Conflict,
  IdentityRefused: IdentityTokenRefused,
  IssuerUnavailable: ServiceUnavailable,
  TooManyFailures: RateLimited
})

/** This folder's groups, under what every endpoint shares: its handlers are built against these alone. */
const api = registryApi(TrustedPublishersApi, TrustedPublishingApi)

const TrustedPublishersLive = HttpApiBuilder.group(api, "trustedPublishers", (handlers) =>
  Effect.map(TrustedPublishing, (trusted) =>
    handlers
      .handle("createTrustedPublisher", ({ params, payload }) => answer(trusted.create(params.publisherId, params.nodeId, payload)))
      .handle("listTrustedPublishers", ({ params }) => answer(trusted.list(params.publisherId, params.nodeId)))
      .handle("deleteTrustedPublisher", ({ params }) =>
        answer(trusted.remove(params.publisherId, params.nodeId, params.trustedPublisherId)))))

/** A refused identity token counts against the caller's address, as a refused personal access token does. */
const TrustedPublishingLive = HttpApiBuilder.group(api, "trustedPublishing", (handlers) =>
  Effect.gen(function*() {
    const trusted = yield* TrustedPublishing
    const failures = yield* AuthFailures
    const audience = new TrustedPublishingAudience(trusted.audience)
    return handlers
      .handle("exchangeTrustedPublishingToken", ({ payload }) =>
        answer(failures.guard(trusted.exchange(Redacted.make(payload.token)), (e) => e._tag === "IdentityRefused")))
      .handle("getTrustedPublishingAudience", () => Effect.succeed(audience))
  }))

/** This folder's handlers, with the services they use (src/App.ts provides what every feature shares). */
export const TrustedPublishingHttp = Layer.mergeAll(TrustedPublishersLive, TrustedPublishingLive).pipe(
  Layer.provide(TrustedPublishing.layer)
)
