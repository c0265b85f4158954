import { SqlClient } from "@effect/sql"
import { Effect, Layer, Context } from "effect"
import type { Claims } from "./Jwt.ts"

/** Users are recorded the first time a token of theirs is seen, and kept current after. */
export class UserRepo extends Context.Tag("UserRepo")<UserRepo, {
  readonly recordSeen: (claims: Claims) => Effect.Effect<void>
}>() {
  static readonly layer = Layer.effect(
    UserRepo,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // what this process has already written: a user's every request must not cost a write
      const known = new Map<string, string>()
      return {
        recordSeen: (claims) => {
          const fingerprint = `${claims.email ?? ""}\u0000${claims.name ?? ""}`
          if (known.get(claims.sub) === fingerprint) return Effect.void
          return sql`
            INSERT INTO users (id, email, name) VALUES (${claims.sub}, ${claims.email ?? null}, ${claims.name ?? null})
            ON CONFLICT (id) DO UPDATE SET
              email = coalesce(excluded.email, users.email),
              name = coalesce(excluded.name, users.name),
              last_seen_at = now()`.pipe(
            Effect.tap(() => Effect.sync(() => {
              if (known.size > 100_000) known.clear()
              known.set(claims.sub, fingerprint)
            })),
            Effect.orDie
          )
        }
      }
    })
  )
}
