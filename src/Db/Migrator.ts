import { SqlClient } from "effect/sql"
import { Effect, FileSystem } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { span } from "../Tracing.ts"

/**
 * `migrations/` at the top of the repository: numbered SQL files, applied in order, each once.
 * Found next to the nearest package.json above this module, which is src/Db/ in the sources and
 * dist/ in the bundle that `npm start` runs.
 */
export const migrationsDir = (() => {
  const here = path.dirname(fileURLToPath(import.meta.url))
  for (let dir = here; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, "package.json"))) return path.join(dir, "migrations")
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${here}: where are the migrations?`)
  }
})()

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

/** What runs from `at` to its end without a statement's `;` counting: a string, a quoted name, a comment, a dollar-quoted body. */
const quoted = /'(?:[^']|'')*'|"(?:[^"]|"")*"|--[^\n]*|\/\*[\s\S]*?\*\/|(\$[A-Za-z_]*\$)[\s\S]*?\1/y

/**
 * The statements of a migration file, in order. The driver speaks only PostgreSQL's extended
 * protocol, which takes one statement at a time (the file as one text would be refused: "cannot
 * insert multiple commands into a prepared statement"), so a file is cut at each `;` outside a
 * string, a quoted name, a comment or a dollar-quoted function body. Strings in the migrations
 * are standard ones (`''` escapes a quote; no `E'...'`), their comments are not nested.
 */
export const statementsOf = (text: string): Array<string> => {
  const statements: Array<string> = []
  let start = 0
  let at = 0
  while (at < text.length) {
    quoted.lastIndex = at
    if (quoted.test(text)) {
      at = quoted.lastIndex
    } else if (text[at] === ";") {
      statements.push(text.slice(start, at))
      start = ++at
    } else {
      at++
    }
  }
  statements.push(text.slice(start))
  // what is left of a piece without its comments and blanks says whether it is a statement
  return statements.filter((statement) => statement.replace(/--[^\n]*|\/\*[\s\S]*?\*\//g, "").trim() !== "")
}

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
      // each is run once: nothing is gained by keeping it prepared
      for (const statement of statementsOf(text)) yield* sql.unsafe(statement).unprepared
      yield* sql`INSERT INTO schema_migrations (id, name) VALUES (${m.id}, ${m.name})`
    }
    return pending
  }))
  for (const m of applied) yield* Effect.logInfo(`applied migration ${m.id}_${m.name}`)
}).pipe(span("Migrator.migrate"))
