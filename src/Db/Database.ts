import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import { Data, Effect, Layer, Option, Redacted, Schedule } from "effect"
import pg from "pg"
import { AppConfig } from "../Config.ts"
import { type EmbeddedServer, startEmbedded } from "./Embedded.ts"
import { migrate } from "./Migrator.ts"
import { DatabaseOutages, retryAfterSeconds, unreachable } from "./Outages.ts"
import { span } from "../Tracing.ts"
import { observePool } from "../Observability/Metrics.ts"

/** The embedded server kept in `DATA_DIR`, stopped when the scope closes. */
const embeddedServer = Effect.gen(function*() {
  const config = yield* AppConfig
  const server = yield* Effect.acquireRelease(
    Effect.tryPromise({
      try: () => startEmbedded(config.dataDir, (line) => console.error(`[embedded-postgres] ${line}`)),
      catch: (cause) => new Error(`Could not start the embedded PostgreSQL in ${config.dataDir}`, { cause })
    }),
    (server) => Effect.promise(() => server.stop())
  ).pipe(Effect.orDie)
  yield* Effect.logInfo(`embedded PostgreSQL listening on 127.0.0.1:${server.port} (data in ${config.dataDir})`)
  return server
})

/** Restarts after a failed restart wait 0.5 s, doubling up to 10 s. */
const restartBackoff = Schedule.exponential("500 millis").pipe(Schedule.union(Schedule.spaced("10 seconds")))

/**
 * Keeps the embedded server running: when its postmaster dies (killed, out of memory), the
 * outage is reported and the server started again on the same port, so that the pool's
 * connections come back by themselves. A restart runs to its end even when the service stops
 * meanwhile, so that the scope's `stop` finds the server it started.
 */
export const supervise = (server: EmbeddedServer) =>
  Effect.gen(function*() {
    const outages = yield* DatabaseOutages
    const running = Effect.promise(() => server.running())
    yield* running.pipe(Effect.repeat({ schedule: Schedule.spaced("500 millis"), while: (alive) => alive }))
    yield* outages.report("the embedded PostgreSQL server exited")
    yield* Effect.tryPromise(() => server.restart()).pipe(
      Effect.uninterruptible,
      Effect.tapError((e) => Effect.logWarning(`restarting the embedded PostgreSQL failed, trying again: ${e.cause}`)),
      Effect.retry(restartBackoff)
    )
    yield* Effect.logWarning(`embedded PostgreSQL restarted on 127.0.0.1:${server.port}`)
  }).pipe(Effect.forever)

// bigint columns (downloads) fit in a double for any realistic count: read them as numbers
const pgTypes = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === pg.types.builtins.INT8 ? Number : pg.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser
}

/** Longest a connection may take (without it a connection to an unreachable host, or a wait for a busy pool, never ends). */
const connectTimeoutMillis = 10_000

/**
 * The pg pool on `url`, reachable (a first `SELECT 1` answered), ended with the scope. It is built
 * here rather than by `PgClient.layer`, which keeps its pool to itself: the metrics read its
 * connection counts (Observability/Metrics.ts).
 */
const pgPool = (url: Redacted.Redacted) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const pool = new pg.Pool({
        connectionString: Redacted.value(url),
        max: 20,
        connectionTimeoutMillis: connectTimeoutMillis,
        types: pgTypes,
        application_name: "@effect/sql-pg"
      })
      // an idle connection that fails is dropped by the pool; unheard, the event would end the process
      pool.on("error", () => {})
      return pool
    }),
    (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
  ).pipe(
    Effect.tap((pool) =>
      Effect.tryPromise({
        try: () => pool.query("SELECT 1"),
        catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to connect" })
      }).pipe(Effect.timeoutFail({
        duration: connectTimeoutMillis,
        onTimeout: () => new SqlError({ cause: new Error("Connection timed out"), message: "PgClient: Connection timed out" })
      }))
    ),
    Effect.tap(observePool)
  )

/** The pool on `url`, with the outage record over it. */
const poolOn = (url: Redacted.Redacted) =>
  DatabaseOutages.Default.pipe(Layer.provideMerge(PgClient.layerFromPool({ acquire: pgPool(url) })))

/**
 * The SqlClient every repository uses, on `DATABASE_URL` or the supervised embedded server,
 * with the schema migrated before anything else runs.
 */
export const DatabaseLive = Layer.unwrapScoped(Effect.gen(function*() {
  const config = yield* AppConfig
  if (Option.isSome(config.databaseUrl)) return poolOn(config.databaseUrl.value)
  const server = yield* embeddedServer
  return Layer.scopedDiscard(Effect.forkScoped(supervise(server))).pipe(
    Layer.provideMerge(poolOn(Redacted.make(server.url)))
  )
})).pipe(
  Layer.tap((ctx) => Effect.provide(migrate, ctx))
)

/** The database did not answer a trivial statement in time, or is away. */
export class DatabaseDown extends Data.TaggedError("DatabaseDown")<{}> {
  override get message() {
    return "The database does not answer"
  }
  get retryAfterSeconds() {
    return retryAfterSeconds
  }
}

/**
 * Succeeds when the database answers `SELECT 1` within 2 seconds (readiness). During an outage it
 * fails at once: the outage's own probe tells when the database is back.
 */
export const databaseAnswers = Effect.gen(function*() {
  const outages = yield* DatabaseOutages
  if (yield* outages.isDown) return yield* new DatabaseDown()
  const sql = yield* SqlClient.SqlClient
  yield* sql`SELECT 1`.pipe(
    Effect.timeout("2 seconds"),
    Effect.tapError((e) => Option.match(unreachable(e), { onNone: () => Effect.void, onSome: outages.report })),
    Effect.mapError(() => new DatabaseDown())
  )
}).pipe(span("Database.answers"))
