import { HttpApiBuilder } from "effect/http-api"
import { Effect } from "effect"
import { Api } from "../Api.ts"
import { answer } from "../Errors.ts"
import { Reviews } from "./Service.ts"

export const ReviewsLive = HttpApiBuilder.group(Api, "reviews", (handlers) =>
  Effect.map(Reviews, (reviews) =>
    handlers.handle("postNodeReview", ({ params, query }) => answer(reviews.review(params.nodeId, query.star)))))
