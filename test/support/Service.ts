/**
 * The real service for tests: its own database on the run's PostgreSQL server, served over
 * loopback HTTP on a free port, with a fixed HS256 secret so tests can mint tokens.
 */
import { HttpServer } from "effect/http"
import { NodeFileSystem } from "@effect/platform-node"
import { Context, Effect, Layer, Option, Redacted, References } from "effect"
import { randomBytes } from "node:crypto"
import * as path from "node:path"
import { inject } from "vitest"
import { Seeder } from "../../scripts/lib/Seeder.ts"
import { mintToken } from "../../src/Auth/Jwt.ts"
import { AppConfig, type AppConfigShape } from "../../src/Config.ts"
import { TracingLive } from "../../src/Observability/Otel.ts"
import { AppLive, HttpServerLive, ServicesLive } from "../../src/App.ts"
import { closeConnections, databaseNamed, statements } from "./Db.ts"
import { tempDir } from "./TempDir.ts"

export const testJwtSecret = "test-secret-for-the-registry-suite-0123456789"

/** A new database on the run's server, made by `create` (its name given); dropped when the scope closes. */
const newDatabase = (create: (name: string) => string) =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      const admin = { databaseUrl: inject("adminDatabaseUrl") }
      const name = `t_${randomBytes(6).toString("hex")}`
      return Effect.as(statements(admin, create(name)), { url: databaseNamed(admin.databaseUrl, name), name, admin })
    }),
    ({ admin, name, url }) => Effect.andThen(closeConnections(url), statements(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  )

/**
 * A new database with the schema already migrated, copied from the run's template (globalSetup.ts):
 * what the service would make of an empty one, without running the migrations for each test.
 */
export const freshDatabase = newDatabase((name) => `CREATE DATABASE ${name} TEMPLATE ${inject("templateDatabase")} ${inject("copyStrategy")}`)

/** A new, empty database, for the tests of the migrations themselves. */
export const emptyDatabase = newDatabase((name) => `CREATE DATABASE ${name}`)

export interface Running {
  readonly baseUrl: string
  readonly config: AppConfigShape
  readonly databaseUrl: string
  /**
   * Bulk writes on the instance's own writers (its page cache notified as for any write): the
   * tests' catalogues, with fields no endpoint sets (downloads, statuses, creation times).
   */
  readonly writes: Seeder["Service"]
  readonly token: (claims: { sub: string; email?: string; name?: string; admin?: boolean }) => Promise<string>
  readonly fetch: (pathAndQuery: string, init?: RequestInit) => Promise<Response>
}

/** No quota at all (every QUOTA_* setting empty). */
export const unlimitedQuotas: AppConfigShape["quotas"] = {
  operationsPerDay: { default: Option.none(), byOperation: new Map() },
  tasksInFlight: Option.none(),
  uploadBytesPerDay: Option.none(),
  meteringOff: ""
}

export type ConfigOverrides = (config: AppConfigShape) => AppConfigShape

/** Effect's default logger, at warn unless TEST_LOG_LEVEL=debug. */
const testLogging = Layer.succeed(References.MinimumLogLevel, process.env.TEST_LOG_LEVEL === "debug" ? "Debug" : "Warn")

/**
 * Starts one instance of the service on `databaseUrl`; it stops when the scope closes. `logging`
 * replaces the loggers of the instance (the log tests capture its lines). `app` is what serves on
 * the server: `Layer.empty` leaves it listening with nothing attached, as it is while starting.
 */
export const startService = (
  databaseUrl: string,
  overrides: ConfigOverrides = (c) => c,
  logging: Layer.Layer<never> = testLogging,
  app: typeof AppLive | Layer.Layer<never> = AppLive
) =>
  Effect.gen(function*() {
    const dataDir = yield* tempDir("registry-data-")
    const configLayer = AppConfig.layerWith((c) =>
      overrides({
        ...c,
        port: 0,
        host: "127.0.0.1",
        dataDir,
        // archives too: the configured folder was derived from the environment's DATA_DIR
        storage: { ...c.storage, dir: path.join(dataDir, "archives") },
        databaseUrl: Option.some(Redacted.make(databaseUrl)),
        publicBaseUrl: "http://127.0.0.1",
        // the suite sends many wrong tokens from one address; tests of the limit set their own
        auth: { ...c.auth, jwtSecret: Option.some(Redacted.make(testJwtSecret)), failureLimit: 1_000_000 },
        // the suite reads far more than a minute's anonymous reads from 127.0.0.1; tests of the limit set their own
        rateLimit: { ...c.rateLimit, anonymousPerWindow: 0 },
        // the suite starts many tasks as one user; tests of the quotas set their own
        quotas: unlimitedQuotas,
        // two jobs at a time rather than eight: each worker polls on a connection of its own, and
        // a connection to the suite's server cost about 15 ms of CPU (tests of the jobs set their own)
        jobs: { ...c.jobs, concurrency: 2 }
      })
    )
    const layer = app.pipe(
      // on the configuration's port (0: a free one) and host, with its connection limits
      Layer.provideMerge(HttpServerLive),
      Layer.provideMerge(Layer.provideMerge(Seeder.layer, ServicesLive)),
      // traces leave only when the configuration names a collector, as in main.ts
      Layer.provide(TracingLive),
      Layer.provideMerge(configLayer),
      Layer.provide(logging)
    )
    const context = yield* Layer.build(layer)
    const server = Context.get(context, HttpServer.HttpServer)
    const config = Context.get(context, AppConfig)
    const address = server.address
    if (address._tag === "UnixPathAddress") return yield* Effect.die(new Error(`the service listens on ${address.path}, not on a port`))
    const baseUrl = `http://127.0.0.1:${address.port}`
    const running: Running = {
      baseUrl,
      config,
      databaseUrl,
      writes: Context.get(context, Seeder),
      token: (claims) => Effect.runPromise(Effect.provide(mintToken(config, claims), NodeFileSystem.layer)),
      fetch: (pathAndQuery, init) => fetch(baseUrl + pathAndQuery, init)
    }
    return running
  })

/** The usual test subject: one instance on a fresh database. */
export const serviceOnFreshDatabase = (overrides?: ConfigOverrides, logging?: Layer.Layer<never>) =>
  Effect.flatMap(freshDatabase, ({ url }) => startService(url, overrides, logging))

/**
 * Use with the top-level `layer` of @effect/vitest and real clocks:
 * `layer(Service.layer(), { excludeTestServices: true })("...", (it) => { ... })`
 */
export class Service extends Context.Service<Service, Running>()("test/Service") {
  static readonly layer = (overrides?: ConfigOverrides, logging?: Layer.Layer<never>) =>
    Layer.effect(Service, serviceOnFreshDatabase(overrides, logging))
}


/** Two instances of the service on one database, as a scaled-out deployment runs them; `acme` exists. */
export class ServicePair extends Context.Service<ServicePair, { readonly a: Running; readonly b: Running }>()("test/ServicePair") {
  static readonly layer = Layer.effect(
    ServicePair,
    Effect.gen(function*() {
      const { url } = yield* freshDatabase
      const a = yield* startService(url)
      const b = yield* startService(url)
      yield* b.writes.upsertPublishers([{ id: "acme", name: "Acme" }])
      return { a, b }
    })
  )
}
