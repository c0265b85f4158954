import { HttpApiBuilder } from "effect/http-api"
import { Effect, Layer } from "effect"
import { ReviewsApi } from "./Api.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
import { Reviews } from "./Service.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering(sharedAnswers)

/** This folder's groups, under what every endpoint shares: its handlers are built against these alone. */
const api = registryApi(ReviewsApi)

const ReviewsLive = HttpApiBuilder.group(api, "reviews", (handlers) =>
  Effect.map(Reviews, (reviews) =>
    handlers.handle("postNodeReview", ({ params, query }) => answer(reviews.review(params.nodeId, query.star)))))

/** This folder's handlers, with the services they use (src/App.ts provides what every feature shares). */
export const ReviewsHttp = ReviewsLive.pipe(Layer.provide(Reviews.layer))
