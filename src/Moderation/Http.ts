import { HttpApiBuilder } from "effect/http-api"
import { Effect, Layer } from "effect"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import { Conflict } from "../Domain/ApiErrors.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
import { ScanRulesApi, VersionReviewApi } from "./Api.ts"
import { VersionReviews } from "./Service.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({ ...sharedAnswers, ReviewClosed: Conflict, ReviewAlreadyRequested: Conflict })

/** This folder's groups, under what every endpoint shares: its handlers are built against these alone. */
const api = registryApi(ScanRulesApi, VersionReviewApi)

const ScanRulesLive = HttpApiBuilder.group(api, "scanRules", (handlers) =>
  Effect.map(VersionReviews, (moderation) => handlers.handle("listScanRules", () => Effect.succeed(moderation.rules))))

const VersionReviewLive = HttpApiBuilder.group(api, "versionReview", (handlers) =>
  Effect.map(VersionReviews, (moderation) =>
    handlers
      .handle("getVersionReview", ({ params }) => answer(moderation.review(params.publisherId, params.nodeId, params.versionId)))
      .handle("postVersionReviewMessage", ({ params, payload }) =>
        answer(moderation.postMessage(params.publisherId, params.nodeId, params.versionId, payload.body)))
      .handle("requestVersionReview", ({ params }) =>
        answer(moderation.requestReview(params.publisherId, params.nodeId, params.versionId)))))

/** This folder's handlers, with the services they use (src/App.ts provides what every feature shares). */
export const ModerationHttp = Layer.mergeAll(ScanRulesLive, VersionReviewLive).pipe(Layer.provide(VersionReviews.layer))
