/**
 * `npx tsx bench/startup.ts [--runs N]`: the time from starting the service to its first `/ready`
 * 200 on an existing data folder (the embedded PostgreSQL initialised, migrations applied), the
 * compiled service (`node dist/main.js`, as `npm start` runs it) beside the same code under tsx
 * (`node --import tsx src/main.ts`, as `npm start` ran it before the build), alternately.
 *
 * Each start is split where its log lines arrive: the embedded PostgreSQL listening (modules
 * loaded, server started), the HTTP server listening (migrations checked, layers built), then
 * `/ready`. The node process's CPU seconds at `/ready` (from /proc) do not depend on how busy the
 * machine is, unlike the wall times.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { freePort } from "../src/Db/Embedded.ts"
import { serviceNodeOptions } from "../test/support/Process.ts"
import { cpuSeconds } from "./proc.ts"
import { root, runAlone } from "./standalone.ts"

const log = (line: string) => console.error(`[startup] ${line}`)

const commands = {
  compiled: [...serviceNodeOptions, "dist/main.js"],
  tsx: ["--import", "tsx", "src/main.ts"]
} as const
type Way = keyof typeof commands

interface Start {
  readonly way: Way
  /** Milliseconds from spawning to each moment. */
  readonly postgresMs: number
  readonly listeningMs: number
  readonly readyMs: number
  /** user + system CPU seconds of the node process when /ready first answered 200. */
  readonly cpuSeconds: number
}


const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", () => resolve())
  })

/** Starts the service on `dataDir`, waits for /ready, stops it with SIGTERM and waits for its exit. */
const startOnce = async (way: Way, dataDir: string): Promise<Start> => {
  const port = await freePort()
  const began = performance.now()
  // the embedded database in DATA_DIR, whatever DATABASE_URL this shell has
  const { DATABASE_URL: _, ...inherited } = process.env
  const child = spawn(process.execPath, commands[way], {
    cwd: root,
    env: { ...inherited, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "info", DATA_DIR: dataDir },
    stdio: ["ignore", "pipe", "pipe"]
  })
  const moments = { postgresMs: Number.NaN, listeningMs: Number.NaN }
  let output = ""
  const watch = (chunk: Buffer) => {
    output += chunk.toString()
    const now = performance.now() - began
    if (Number.isNaN(moments.postgresMs) && output.includes("embedded PostgreSQL listening")) moments.postgresMs = now
    if (Number.isNaN(moments.listeningMs) && output.includes("listening on http")) moments.listeningMs = now
  }
  child.stdout.on("data", watch)
  child.stderr.on("data", watch)
  try {
    const deadline = Date.now() + 120_000
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`the service exited (${child.exitCode}): ${output}`)
      const ok = await fetch(`http://127.0.0.1:${port}/ready`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false)
      if (ok) return { way, ...moments, readyMs: performance.now() - began, cpuSeconds: await cpuSeconds(child.pid!) }
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    throw new Error(`the service did not become ready within 120 s: ${output}`)
  } finally {
    child.kill("SIGTERM")
    await exited(child)
  }
}

const median = (xs: ReadonlyArray<number>) => {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const seconds = (ms: number) => (ms / 1000).toFixed(2)

const section = (starts: ReadonlyArray<Start>, runs: number) => {
  const row = (way: Way) => {
    const of = starts.filter((s) => s.way === way)
    const ready = of.map((s) => s.readyMs)
    return `| ${way} | \`node ${commands[way].join(" ")}\` | ${seconds(median(ready))} | ${seconds(Math.min(...ready))} | ` +
      `${seconds(Math.max(...ready))} | ${seconds(median(of.map((s) => s.postgresMs)))} | ` +
      `${seconds(median(of.map((s) => s.listeningMs)))} | ${median(of.map((s) => s.cpuSeconds)).toFixed(2)} |`
  }
  const compiled = median(starts.filter((s) => s.way === "compiled").map((s) => s.readyMs))
  return [
    "## Start-up on an existing data folder",
    "",
    `${runs} starts of each, alternately, on one data folder whose embedded PostgreSQL is initialised and migrated; ` +
    "seconds from spawning the process to the first `/ready` 200, and to the log lines on the way (medians). " +
    `Load average at the end: ${os.loadavg().map((l) => l.toFixed(1)).join(", ")}.`,
    "",
    "| way | command | ready (median) | min | max | PostgreSQL up | HTTP listening | node CPU s at ready |",
    "|---|---|---:|---:|---:|---:|---:|---:|",
    row("compiled"),
    row("tsx"),
    "",
    `Target: the compiled service ready in 3 s or less: ${compiled <= 3000 ? "met" : "**missed**"} (${seconds(compiled)} s).`
  ].join("\n")
}

/** The Markdown section of the report: five starts of each way, two with `quick`; dist/ must be built (bench/run.ts builds it first). */
export const benchStartup = async (options: { readonly quick: boolean }): Promise<string> => {
  const runs = options.quick ? 2 : 5
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "startup-bench-"))
  // run as root, PostgreSQL runs as its own user, which must be able to pass through this folder
  await fs.chmod(dataDir, 0o711)
  try {
    log(`a first start initialises the data folder ${dataDir}`)
    await startOnce("compiled", dataDir)
    const starts: Array<Start> = []
    for (let i = 0; i < runs; i++) {
      for (const way of ["compiled", "tsx"] as const) {
        const start = await startOnce(way, dataDir)
        log(`${way}: ready in ${seconds(start.readyMs)} s (PostgreSQL up ${seconds(start.postgresMs)} s, ` +
          `listening ${seconds(start.listeningMs)} s, ${start.cpuSeconds.toFixed(2)} CPU s)`)
        starts.push(start)
      }
    }
    return section(starts, runs)
  } finally {
    await fs.rm(dataDir, { recursive: true, force: true })
  }
}

runAlone(import.meta.url, benchStartup)
