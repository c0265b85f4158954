/**
 * The migrations when several instances start together on one empty database: each file is
 * applied once. In the test's process (three services of this process), on the suite's server,
 * so that CI runs it on the embedded PostgreSQL and on Debian's.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs/promises"
import { query } from "../support/Db.ts"
import { emptyDatabase, startService } from "../support/Service.ts"

describe("migrations", () => {
  it.live("run once when instances start together", () =>
    Effect.gen(function*() {
      // empty: the other tests' databases are copies of one the suite migrated (globalSetup.ts)
      const { url } = yield* emptyDatabase
      yield* Effect.all([startService(url), startService(url), startService(url)], { concurrency: "unbounded" })
      const rows = yield* query<{ id: string; n: number }>(
        { databaseUrl: url },
        "SELECT id, count(*)::int AS n FROM schema_migrations GROUP BY id"
      )
      const files = (yield* Effect.promise(() => fs.readdir("migrations"))).filter((f) => f.endsWith(".sql"))
      expect(rows).toHaveLength(files.length)
      expect(rows.every((r) => r.n === 1)).toBe(true)
    }))
})
