import { SqlClient, SqlSchema } from "effect/sql"
import { Context, Effect, Layer, Schema } from "effect"
import { PublisherRole, PublisherStatus } from "../Domain/Publisher.ts"
import type { Claims } from "./Jwt.ts"
import { traced } from "../Tracing.ts"

/** Users are recorded the first time a token of theirs is seen, and kept current after. */
export class UserRepo extends Context.Service<UserRepo>()("UserRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // what this process has already written: a user's every request must not cost a write
    const known = new Map<string, string>()

    const recordSeen = traced("UserRepo.recordSeen")(function*(claims: Claims) {
      const fingerprint = `${claims.email ?? ""}\u0000${claims.name ?? ""}`
      if (known.get(claims.sub) === fingerprint) return
      yield* sql`
        INSERT INTO users (id, email, name) VALUES (${claims.sub}, ${claims.email ?? null}, ${claims.name ?? null})
        ON CONFLICT (id) DO UPDATE SET
          email = coalesce(excluded.email, users.email),
          name = coalesce(excluded.name, users.name),
          last_seen_at = now()`.pipe(Effect.orDie)
      if (known.size > 100_000) known.clear()
      known.set(claims.sub, fingerprint)
    })

    // a user's standing, read here rather than in the publishers' repository: Policy asks it, and
    // the publishers' service asks Policy
    const findStanding = SqlSchema.findOneOption({
      Request: Schema.Struct({ publisherId: Schema.String, userId: Schema.String }),
      Result: Schema.Struct({ status: PublisherStatus, role: Schema.OptionFromNullOr(PublisherRole) }),
      execute: ({ publisherId, userId }) =>
        sql`SELECT p.status, m.role FROM publishers p
            LEFT JOIN publisher_members m ON m.publisher_id = p.id AND m.user_id = ${userId}
            WHERE p.id = ${publisherId} AND p.deleted_at IS NULL`
    })

    return {
      recordSeen,
      /** The publisher's status and the user's role in it (none for strangers); `None` when there is no such publisher. */
      standing: traced("UserRepo.standing")(function*(publisherId: string, userId: string) {
        return yield* Effect.orDie(findStanding({ publisherId, userId }))
      })
    }
  })
}) {
  static readonly layer = Layer.effect(UserRepo, UserRepo.make)
}
