/**
 * Reviews (CONTRACT.md, "Compatibility with the clients in the field"): any signed-in user rates a
 * node clients may see, once; rating again replaces their star. A deleted node is missing, a
 * banned one (or one of a banned publisher) refused, as `GET /nodes/{nodeId}` answers them.
 */
import { Context, Effect, Layer } from "effect"
import { CurrentUser } from "../Domain/Auth.ts"
import type { Star } from "../Domain/Review.ts"
import { ReviewRepo } from "./Repo.ts"
import { traced } from "../Tracing.ts"

export class Reviews extends Context.Service<Reviews>()("Reviews", {
  make: Effect.gen(function*() {
    const reviews = yield* ReviewRepo
    return {
      /** The caller's stars for the node; answers the node with its new rating. */
      review: traced("Reviews.review")(function*(nodeId: string, star: Star) {
        const user = yield* CurrentUser
        return yield* reviews.review({ nodeId, userId: user.id, star })
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(Reviews, Reviews.make)
  static readonly layer = Reviews.layerWithoutDependencies.pipe(Layer.provide(ReviewRepo.layer))
}
