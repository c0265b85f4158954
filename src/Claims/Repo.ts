/** The one write of claiming: an unclaimed node moves to its author's publisher, once. */
import { SqlClient } from "effect/sql"
import { Context, Data, Effect, Layer } from "effect"
import { CatalogChanges } from "../Catalog/Changes.ts"
import { onForeignKeyViolation } from "../Db/Rows.ts"
import { PublisherMissing } from "../Domain/Errors.ts"
import { unclaimedPublisherId } from "../Domain/Publisher.ts"
import { traced } from "../Tracing.ts"

export class AlreadyClaimed extends Data.TaggedError("AlreadyClaimed")<{ readonly nodeId: string }> {
  override get message() {
    return `Node '${this.nodeId}' has already been claimed`
  }
}

export class ClaimRepo extends Context.Service<ClaimRepo>()("ClaimRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { change, lockPublishers, refreshListed } = yield* CatalogChanges
    return {
      /**
       * Moves an unclaimed node to the publisher. The check and the move are one statement, so of
       * concurrent claims (from any instance) exactly one moves it.
       */
      claim: traced("ClaimRepo.claim")(function*(nodeId: string, publisherId: string) {
        yield* change(Effect.gen(function*() {
          // the lock order: both publishers (the node leaves one for the other), then the node
          yield* lockPublishers([unclaimedPublisherId, publisherId])
          const rows = yield* sql`UPDATE nodes SET publisher_id = ${publisherId}, updated_at = now()
            WHERE id = ${nodeId} AND publisher_id = ${unclaimedPublisherId} RETURNING id`.pipe(
            // the publisher was deleted after the claim's checks (migration 0009's trigger)
            onForeignKeyViolation(() => new PublisherMissing({ publisherId }))
          )
          if (rows.length === 0) return yield* new AlreadyClaimed({ nodeId })
          // the new publisher's status decides whether the node is listed
          yield* refreshListed(sql`n.id = ${nodeId}`)
        }))
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(ClaimRepo, ClaimRepo.make)
  static readonly layer = ClaimRepo.layerWithoutDependencies.pipe(Layer.provide(CatalogChanges.layer))
}
