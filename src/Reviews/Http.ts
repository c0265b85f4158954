import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.ts"
import { answer } from "../Errors.ts"
import { Reviews } from "./Service.ts"

export const ReviewsLive = HttpApiBuilder.group(Api, "reviews", (handlers) =>
  Effect.map(Reviews, (reviews) =>
    handlers.handle("postNodeReview", ({ path, urlParams }) => answer(reviews.review(path.nodeId, urlParams.star)))))
