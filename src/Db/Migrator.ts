import { FileSystem } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { span } from "../Tracing.ts"

/** `migrations/` at the top of the repository: numbered SQL files, applied in order, each once. */
export const migrationsDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../migrations")

interface Migration {
  readonly id: number
  readonly name: string
  readonly file: string
}

const readMigrations = Effect.gen(function*() {
  const files = yield* (yield* FileSystem.FileSystem).readDirectory(migrationsDir)
  return files
    .flatMap((file): Array<Migration> => {
      const m = /^(\d+)_(.+)\.sql$/.exec(file)
      return m ? [{ id: Number(m[1]), name: m[2]!, file: path.join(migrationsDir, file) }] : []
    })
    .sort((a, b) => a.id - b.id)
})

/**
 * Applies the migrations not yet applied. Instances starting together serialise on an advisory
 * lock, so each migration runs exactly once; each runs in the same transaction as its record.
 */
export const migrate = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const fs = yield* FileSystem.FileSystem
  const migrations = yield* readMigrations
  const applied = yield* sql.withTransaction(Effect.gen(function*() {
    yield* sql`SELECT pg_advisory_xact_lock(hashtext('registry_migrations'))`
    yield* sql`CREATE TABLE IF NOT EXISTS schema_migrations (
      id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`
    const done = new Set((yield* sql<{ id: number }>`SELECT id FROM schema_migrations`).map((r) => r.id))
    const pending = migrations.filter((m) => !done.has(m.id))
    for (const m of pending) {
      const text = yield* fs.readFileString(m.file)
      yield* sql.unsafe(text)
      yield* sql`INSERT INTO schema_migrations (id, name) VALUES (${m.id}, ${m.name})`
    }
    return pending
  }))
  for (const m of applied) yield* Effect.logInfo(`applied migration ${m.id}_${m.name}`)
}).pipe(span("Migrator.migrate"))
