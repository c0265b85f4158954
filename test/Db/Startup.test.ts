import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { freePort } from "../../src/Db/Embedded.ts"
import { query } from "../support/Db.ts"
import { freshDatabase, startService } from "../support/Service.ts"

/** `npm start`'s command on the embedded database in `dataDir`, ready when /ready answers 200. */
const startProcess = async (dataDir: string) => {
  const port = await freePort()
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn" }
  delete env.DATABASE_URL
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], { env, stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  child.stdout!.on("data", (d) => (output += d))
  child.stderr!.on("data", (d) => (output += d))
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the service exited (${child.exitCode}): ${output}`)
    const ready = await fetch(`http://127.0.0.1:${port}/ready`, { signal: AbortSignal.timeout(2000) }).then((r) => r.status, () => 0)
    if (ready === 200) return { child, port, output: () => output }
    await new Promise((r) => setTimeout(r, 100))
  }
  child.kill("SIGKILL")
  throw new Error(`the service did not become ready: ${output}`)
}

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
