import { HttpApiBuilder } from "effect/http-api"
import { Effect } from "effect"
import { Api } from "../Api.ts"
import { Reviews } from "./Service.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering(sharedAnswers)

export const ReviewsLive = HttpApiBuilder.group(Api, "reviews", (handlers) =>
  Effect.map(Reviews, (reviews) =>
    handlers.handle("postNodeReview", ({ params, query }) => answer(reviews.review(params.nodeId, query.star)))))
