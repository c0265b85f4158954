import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type ChildProcess } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { query } from "../support/Db.ts"
import { spawnService } from "../support/Process.ts"
import { freshDatabase, startService } from "../support/Service.ts"

/** `npm start`'s command on the embedded database in `dataDir`. */
const startProcess = (dataDir: string) => spawnService({ env: { DATA_DIR: dataDir, DATABASE_URL: undefined } })

const exited = (child: ChildProcess) => new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))

describe("start-up on the embedded database", () => {
  it.live("starts again after being killed with SIGKILL, on the same data", () =>
    Effect.promise(async () => {
      const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "registry-start-"))
      try {
        const first = await startProcess(dataDir)
        const secret = await fs.readFile(path.join(dataDir, "jwt-secret"), "utf8")
        first.child.kill("SIGKILL")
        await exited(first.child)
        // its PostgreSQL server is still running: the next start must clean it up
        const second = await startProcess(dataDir)
        expect(await fs.readFile(path.join(dataDir, "jwt-secret"), "utf8")).toBe(secret)
        const health = await fetch(`http://127.0.0.1:${second.port}/health`)
        expect(await health.json()).toEqual({ status: "ok" })
        second.child.kill("SIGTERM")
        expect(await exited(second.child)).toBe(0)
        // a clean stop leaves no server behind
        await expect(fs.access(path.join(dataDir, "pg", "postmaster.pid"))).rejects.toThrow()
      } finally {
        await fs.rm(dataDir, { recursive: true, force: true })
      }
    }), 120_000)
})

describe("migrations", () => {
  it.scopedLive("run once when instances start together", () =>
    Effect.gen(function*() {
      const { url } = yield* freshDatabase
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
