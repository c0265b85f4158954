import { SqlClient } from "effect/sql"
import { Context, Effect, Layer } from "effect"
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

    return { recordSeen }
  })
}) {
  static readonly layer = Layer.effect(UserRepo, UserRepo.make)
}
