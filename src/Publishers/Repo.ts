import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import type { PublisherRole } from "../Domain/Publisher.ts"

export class PublisherRepo extends Context.Tag("PublisherRepo")<PublisherRepo, {
  readonly exists: (publisherId: string) => Effect.Effect<boolean>
  /** The user's role in the publisher, if a member. */
  readonly roleOf: (publisherId: string, userId: string) => Effect.Effect<Option.Option<PublisherRole>>
}>() {}

export const PublisherRepoLive = Layer.effect(
  PublisherRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return PublisherRepo.of({
      exists: (publisherId) =>
        sql`SELECT 1 FROM publishers WHERE id = ${publisherId}`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),
      roleOf: (publisherId, userId) =>
        sql<{ role: PublisherRole }>`SELECT role FROM publisher_members
          WHERE publisher_id = ${publisherId} AND user_id = ${userId}`.pipe(
          Effect.map((rows) => Option.fromNullable(rows[0]?.role)),
          Effect.orDie
        )
    })
  })
)
