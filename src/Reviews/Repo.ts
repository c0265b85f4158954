/**
 * Reviews of nodes and the rating they make: one star per user and node, and `nodes.rating`, the
 * exact mean of the node's current stars.
 *
 * A review takes the node's row lock before it writes, and recomputes the mean in a statement of
 * its own after its write. Under READ COMMITTED each statement reads what was committed when it
 * started; a concurrent review of the same node committed before this one got the lock, so the
 * recomputation sees its star. Without the lock, two reviews could each compute the mean before
 * the other committed, and the last to write would drop the other's star from `rating`. The mean
 * is `sum / count` in float8 over exact integers: the correctly rounded quotient, the same double
 * a client computes from the same stars.
 */
import { SqlClient, SqlSchema } from "effect/sql"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { CatalogChanges } from "../Catalog/Changes.ts"
import { NodeRepo, requireVisible } from "../Catalog/Repo.ts"
import { NodeMissing } from "../Domain/Errors.ts"
import { NodeStatus } from "../Domain/Node.ts"
import { PublisherStatus } from "../Domain/Publisher.ts"
import type { Star } from "../Domain/Review.ts"
import { traced } from "../Tracing.ts"

export interface NewReview {
  readonly nodeId: string
  readonly userId: string
  readonly star: Star
}

export class ReviewRepo extends Context.Service<ReviewRepo>()("ReviewRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { change } = yield* CatalogChanges
    const nodes = yield* NodeRepo

    /** The node's standing, its row locked until the transaction ends; none for an unknown node. */
    const lockNode = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: Schema.Struct({ status: NodeStatus, publisherStatus: PublisherStatus }),
      execute: (nodeId) =>
        sql`SELECT n.status, p.status AS "publisherStatus"
            FROM nodes n JOIN publishers p ON p.id = n.publisher_id
            WHERE n.id = ${nodeId} FOR NO KEY UPDATE OF n`
    })

    return {
      /**
       * Records the user's star for a node clients may see (replacing their earlier one) and sets
       * the node's rating to the mean of its stars; answers the node as it is then. Nothing else
       * of the node changes, not even `updated_at`.
       */
      review: traced("ReviewRepo.review")(function*({ nodeId, star, userId }: NewReview) {
        return yield* change(Effect.gen(function*() {
          const node = yield* Effect.orDie(lockNode(nodeId))
          if (Option.isNone(node)) return yield* new NodeMissing({ nodeId })
          yield* requireVisible(nodeId, node.value)
          yield* sql`INSERT INTO node_reviews (node_id, user_id, star) VALUES (${nodeId}, ${userId}, ${star})
            ON CONFLICT (node_id, user_id) DO UPDATE SET star = excluded.star, updated_at = now()`
          yield* sql`UPDATE nodes SET rating =
              (SELECT sum(star)::float8 / count(*)::float8 FROM node_reviews WHERE node_id = ${nodeId})
            WHERE id = ${nodeId}`
          // the node's row is locked: it is still there
          return yield* Effect.orDie(Effect.flatMap(nodes.findNode(nodeId), Effect.fromOption(() => new NodeMissing({ nodeId }))))
        }))
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(ReviewRepo, ReviewRepo.make)
  static readonly layer = ReviewRepo.layerWithoutDependencies.pipe(Layer.provide([CatalogChanges.layer, NodeRepo.layer]))
}
