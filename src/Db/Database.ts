import { SqlClient } from "effect/sql"
import { PgClient, PgTypes } from "@effect/sql-pg"
import { Context, Data, Effect, Layer, Option, Redacted, Result, Schedule } from "effect"
import * as net from "node:net"
import { AppConfig } from "../Config.ts"
import { type EmbeddedServer, startEmbedded } from "./Embedded.ts"
import { migrate } from "./Migrator.ts"
import { DatabaseOutages, retryAfterSeconds, unreachable } from "./Outages.ts"
import { span } from "../Tracing.ts"
import { observePool } from "../Observability/Metrics.ts"

/** The embedded server kept in `DATA_DIR`, stopped when the scope closes. */
const embeddedServer = Effect.gen(function*() {
  const config = yield* AppConfig
  // its notices (a cluster initialised, a stale server stopped) are log lines like any other
  const context = yield* Effect.context<never>()
  const notice = (line: string, level?: "warn") =>
    Effect.runSyncWith(context)((level === "warn" ? Effect.logWarning : Effect.logInfo)(`embedded PostgreSQL: ${line}`))
  const server = yield* Effect.acquireRelease(
    Effect.tryPromise({
      try: () => startEmbedded(config.dataDir, notice),
      catch: (cause) => new Error(`Could not start the embedded PostgreSQL in ${config.dataDir}`, { cause })
    }),
    (server) => Effect.promise(() => server.stop())
  ).pipe(Effect.orDie)
  yield* Effect.logInfo(`embedded PostgreSQL listening on 127.0.0.1:${server.port} (data in ${config.dataDir})`)
  return server
})

/** Restarts after a failed restart wait 0.5 s, doubling up to 10 s. */
const restartBackoff = Schedule.min([Schedule.exponential("500 millis"), Schedule.spaced("10 seconds")])

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

/** bigint columns (downloads) fit in a double for any realistic count: read them as numbers. */
const pgTypes = PgTypes.makeRegistry()
pgTypes.register(PgTypes.OID.int8, {
  decode: (bytes) =>
    bytes.length === 8
      ? Result.succeed(Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigInt64(0)))
      : Result.fail(new PgTypes.CodecError({ message: "int8 takes 8 bytes" })),
  encode: (value: number | bigint) => {
    const bytes = new Uint8Array(8)
    new DataView(bytes.buffer).setBigInt64(0, BigInt(value))
    return Result.succeed(bytes)
  }
})

/** Longest a connection may take to open (without it a connection to an unreachable host never ends). */
const connectTimeoutMillis = 10_000

// 20 for statements, and one that the list cache's LISTEN holds (Catalog/PageCache.ts)
const maxConnections = 21

/**
 * The TCP socket of one connection to the server of `url`, or `undefined` for a URL that names
 * no TCP server (a Unix socket folder): the driver then opens its own, which the metrics miss.
 */
const tcpOf = (url: Redacted.Redacted) => {
  const parsed = URL.canParse(Redacted.value(url)) ? new URL(Redacted.value(url)) : undefined
  if (parsed === undefined || parsed.hostname === "" || parsed.searchParams.has("host")) return undefined
  const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1")
  const port = parsed.port === "" ? 5432 : Number(parsed.port)
  return () => net.connect({ host, port, noDelay: true })
}

/**
 * The client on `url`, its pool of at most 21 connections ended with the scope. Its connections'
 * sockets are opened here, so that the metrics see them (Observability/Metrics.ts): PgClient 4
 * keeps its pool's counts to itself.
 */
const clientOn = (url: Redacted.Redacted) =>
  PgClient.layerFrom(Effect.gen(function*() {
    const watched = yield* observePool(maxConnections)
    const tcp = tcpOf(url)
    return yield* PgClient.make({
      url,
      maxConnections,
      connectTimeout: connectTimeoutMillis,
      // as the pg pool did before Effect 4: an idle connection is closed after 10 s, not 60 s
      idleTimeout: "10 seconds",
      // PgClient 4 keeps its statements prepared, and after five runs PostgreSQL may plan one
      // for any parameters: the search's generic plan cost PostgreSQL twice the CPU of the plan
      // made for the words asked (bench, "search"). Parsing stays cached; plans are made per call.
      startupParameters: { plan_cache_mode: "force_custom_plan" },
      types: pgTypes,
      ...(tcp === undefined ? {} : { stream: () => watched(tcp) })
    })
  }))

/**
 * The URL the pool connects to (`DATABASE_URL` or the embedded server's): for a library that
 * brings its own driver and pool, the job runner's (src/Jobs/Runner.ts).
 */
export class DatabaseUrl extends Context.Service<DatabaseUrl, Redacted.Redacted>()("DatabaseUrl") {}

/** The pool on `url`, with the outage record over it, and the URL itself. */
const poolOn = (url: Redacted.Redacted) =>
  Layer.merge(DatabaseOutages.layer.pipe(Layer.provideMerge(clientOn(url))), Layer.succeed(DatabaseUrl, url))

/**
 * The SqlClient every repository uses, on `DATABASE_URL` or the supervised embedded server,
 * with the schema migrated before anything else runs.
 */
export const DatabaseLive = Layer.unwrap(Effect.gen(function*() {
  const config = yield* AppConfig
  if (Option.isSome(config.databaseUrl)) return poolOn(config.databaseUrl.value)
  const server = yield* embeddedServer
  return Layer.effectDiscard(Effect.forkScoped(supervise(server))).pipe(
    Layer.provideMerge(poolOn(Redacted.make(server.url)))
  )
})).pipe(
  Layer.tap((context) => Effect.provide(migrate, context))
)

/** The database did not answer a trivial statement in time, or is away. */
export class DatabaseDown extends Data.TaggedError("DatabaseDown") {
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
