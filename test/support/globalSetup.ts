/**
 * One PostgreSQL server for the whole run: the one DATABASE_URL names, else an embedded one in a
 * temporary folder. On it, one database migrated once for the run, which each test file's
 * databases are copied from (`CREATE DATABASE … TEMPLATE`, see Service.ts): a copy takes a few
 * milliseconds, the migrations a second of the server's and the service's time each.
 * The compiled service in dist/, which the tests that spawn processes run, is built first when
 * it is missing or older than src/.
 */
import { PgClient } from "@effect/sql-pg"
import { NodeFileSystem } from "@effect/platform-node"
import { Effect, Layer, Redacted, References } from "effect"
import { execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import type { TestProject } from "vitest/node"
import { startEmbedded } from "../../src/Db/Embedded.ts"
import { migrate } from "../../src/Db/Migrator.ts"
import { migrateJobSchema } from "../../src/Jobs/Runner.ts"
import { databaseNamed, statements } from "./Db.ts"

declare module "vitest" {
  export interface ProvidedContext {
    /** A URL of the server with rights to create databases. */
    adminDatabaseUrl: string
    /** The run's migrated database, to copy (no connection may stay open on it). */
    templateDatabase: string
    /** How `CREATE DATABASE` copies it: `STRATEGY FILE_COPY` where that is the cheaper, else "". */
    copyStrategy: string
  }
}

const root = path.resolve(import.meta.dirname, "../..")

/** Runs `texts` one by one on a connection of its own to `url`: the last one's rows. */
const execute = (url: string, ...texts: ReadonlyArray<string>) => Effect.runPromise(statements({ databaseUrl: url }, ...texts))

/**
 * A server without fsync copies a small database file by file (FILE_COPY) six times faster than
 * through its write-ahead log (the default since PostgreSQL 15: 50 against 290 ms here); with
 * fsync, FILE_COPY's two checkpoints per copy would cost more than they save.
 */
const copyStrategyOn = async (url: string) => {
  const [settings] = await execute(url, "SELECT current_setting('server_version_num') AS version, current_setting('fsync') AS fsync")
  return Number(settings!["version"]) >= 150000 && settings!["fsync"] === "off" ? "STRATEGY FILE_COPY" : ""
}

/** A database named for this run, migrated by the service's own migrator; dropped by the returned function. */
const migratedTemplate = async (admin: string) => {
  const name = `t_template_${randomBytes(4).toString("hex")}`
  await execute(admin, `CREATE DATABASE ${name}`)
  await Effect.runPromise(migrate.pipe(
    Effect.provide(Layer.mergeAll(PgClient.layer({ url: Redacted.make(databaseNamed(admin, name)) }), NodeFileSystem.layer)),
    // its "applied migration" lines are the same for every run
    Effect.provideService(References.MinimumLogLevel, "Warn")
  ))
  // the job runner's schema too: each service's runner then finds it there and only checks it
  await migrateJobSchema(databaseNamed(admin, name))
  return { name, drop: () => execute(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) }
}

interface Setup {
  readonly adminDatabaseUrl: string
  readonly templateDatabase: string
  readonly copyStrategy: string
  readonly stop: () => Promise<unknown>
}

/** The build, the server and its template. */
const start = async (): Promise<Setup> => {
  execFileSync(process.execPath, ["scripts/build.mjs", "--if-stale"], { cwd: root, stdio: "inherit" })
  const external = process.env.DATABASE_URL
  if (external) {
    const template = await migratedTemplate(external)
    return { adminDatabaseUrl: external, templateDatabase: template.name, copyStrategy: await copyStrategyOn(external), stop: template.drop }
  }
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "registry-test-"))
  const server = await startEmbedded(dir)
  // a throwaway server: nothing on it needs to survive a crash, so it need not wait for the disk
  // (as the CI's Debian server runs, .ci/run)
  await execute(
    server.url,
    "ALTER SYSTEM SET fsync = off",
    "ALTER SYSTEM SET synchronous_commit = off",
    "ALTER SYSTEM SET full_page_writes = off",
    "SELECT pg_reload_conf()"
  )
  const template = await migratedTemplate(server.url)
  return {
    adminDatabaseUrl: server.url,
    templateDatabase: template.name,
    copyStrategy: await copyStrategyOn(server.url),
    stop: async () => {
      await server.stop()
      await fs.rm(dir, { recursive: true, force: true })
    }
  }
}

/**
 * Each project that uses this file (`service`, `process`) runs it; when both run, they share one
 * set-up, started by the first and stopped after the last (vitest runs global set-ups in its
 * main process, where globalThis is one).
 */
const shared = globalThis as { registryTestSetup?: { readonly ready: Promise<Setup>; users: number } }

export default async function setup(project: TestProject) {
  const entry = shared.registryTestSetup ??= { ready: start(), users: 0 }
  entry.users++
  const ready = await entry.ready
  project.provide("adminDatabaseUrl", ready.adminDatabaseUrl)
  project.provide("templateDatabase", ready.templateDatabase)
  project.provide("copyStrategy", ready.copyStrategy)
  return async () => {
    if (--entry.users > 0) return
    delete shared.registryTestSetup
    await ready.stop()
  }
}
