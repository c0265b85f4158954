/**
 * `npx tsx bench/rescan.ts [--quick]` (also a scenario of `npm run bench`, "rescan"): the read
 * routes while every archive is rescanned (issue 29: a rescan of 100,000 versions must not slow
 * them by more than 10%).
 *
 * A throw-away embedded PostgreSQL is seeded with 10,000 nodes x 10 versions (scripts/seed.ts;
 * `--quick`: 1,000 x 10), every version given the same small node pack as its archive (hard links
 * in the store, its size and digest in the rows). The compiled service then answers a steady load
 * of `GET /nodes/{id}` for random nodes (bench/paced.ts) while the rescan a site admin queued
 * (`POST /admin/rescan`) is paused and running by turns; latencies and the service's CPU per
 * request (from /proc) are compared side by side, and the versions rescanned meanwhile counted.
 * A last pair of windows without load gives the CPU an archive costs the service and PostgreSQL.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import * as jose from "jose"
import pg from "pg"
import { zipOf } from "../test/support/Zip.ts"
import { paced, type PacedResult, percentile } from "./paced.ts"
import { cpuSeconds, postgresCpuSeconds } from "./proc.ts"
import { benchJwtSecret, imageVendorStage, seedCatalogue } from "./processes.ts"
import { runAlone } from "./standalone.ts"

const log = (line: string) => console.error(`[bench:rescan] ${line}`)
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits

export const benchRescan = async (options: { readonly quick: boolean }): Promise<string> => {
  const nodes = options.quick ? 1_000 : 10_000
  const seconds = options.quick ? 6 : 10
  // a p99 of one window turns on a few stalls, either way: pairs of the same run differed from
  // x0.16 to x5.5, so the verdict is on all the windows pooled
  const rounds = options.quick ? 6 : 10
  const rate = 200
  const cleanups: Array<() => Promise<unknown>> = []
  try {
    const stage = await imageVendorStage("rescan", { record: false, log, cleanups })
    log(`seeding ${nodes} nodes x 10 versions`)
    await seedCatalogue(stage.databaseUrl, nodes, 10)
    const client = new pg.Client({ connectionString: stage.databaseUrl })
    await client.connect()
    cleanups.push(() => client.end())

    // one honest pack as every version's archive: hard links cost no space
    const dataDir = path.join(os.tmpdir(), `rescan-archives-${process.pid}`)
    const archives = path.join(dataDir, "archives")
    await fs.mkdir(archives, { recursive: true })
    cleanups.push(() => fs.rm(dataDir, { recursive: true, force: true }))
    const pack = await zipOf({
      "__init__.py": "from .nodes import NODE_CLASS_MAPPINGS\n",
      "nodes.py": "import torch\n\nclass Blur:\n    def run(self, image):\n        return (image,)\n".repeat(40),
      "requirements.txt": "opencv-python>=4.8\n",
      "web/widget.js": "app.registerExtension({ name: 'blur' })\n".repeat(20)
    })
    const { rows } = await client.query<{ id: string }>(
      "UPDATE node_versions SET archive_bytes = $1, archive_sha256 = $2 WHERE status = 'NodeVersionStatusActive' RETURNING id::text",
      [pack.length, createHash("sha256").update(pack).digest()]
    )
    // a file takes at most 65,000 links (ext4): one copy of the pack per 50,000 archives
    const linksPerCopy = 50_000
    for (let i = 0; i < rows.length; i += 500) {
      const source = path.join(dataDir, `pack-${Math.floor(i / linksPerCopy)}.zip`)
      if (i % linksPerCopy === 0) await fs.writeFile(source, pack)
      await Promise.all(rows.slice(i, i + 500).map((r) => fs.link(source, path.join(archives, `${r.id}.zip`))))
    }
    log(`${rows.length} active versions hold a ${pack.length}-byte archive`)
    const nodeIds = (await client.query<{ id: string }>("SELECT id FROM nodes WHERE listed ORDER BY id")).rows.map((r) => r.id)

    const { base, child } = await stage.startService("service", { STORAGE_DIR: archives })
    const admin = await new jose.SignJWT({ admin: true }).setProtectedHeader({ alg: "HS256" }).setSubject("bench-admin")
      .setIssuedAt().setExpirationTime("1h").sign(new TextEncoder().encode(benchJwtSecret))
    const scanned = async () => Number((await client.query<{ n: string }>("SELECT count(*) AS n FROM version_scans")).rows[0]!.n)

    const load = async (label: string) => {
      const before = await cpuSeconds(child.pid!)
      const scansBefore = await scanned()
      const result: PacedResult = await paced({
        base,
        rate,
        connections: 16,
        seconds,
        request: (i) => ({ method: "GET", path: `/nodes/${nodeIds[(i * 7919) % nodeIds.length]}` })
      })
      const cpu = (await cpuSeconds(child.pid!)) - before
      const scans = (await scanned()) - scansBefore
      log(`${label}: p50 ${round(result.latency.p50)} ms, p99 ${round(result.latency.p99)} ms, ${scans} archives scanned`)
      return { label, result, cpuPerRequestMs: (cpu / result.requests.total) * 1000, scans }
    }
    /** The service and PostgreSQL with no load for `seconds`: their CPU (s), and the archives scanned meanwhile. */
    const unloaded = async () => {
      const before = [await cpuSeconds(child.pid!), await postgresCpuSeconds(stage.postmaster), await scanned()] as const
      await new Promise((r) => setTimeout(r, seconds * 1000))
      return {
        service: (await cpuSeconds(child.pid!)) - before[0],
        postgres: (await postgresCpuSeconds(stage.postmaster)) - before[1],
        scans: (await scanned()) - before[2]
      }
    }
    /** The CPU an archive's rescan costs with no load: a window running less one paused, per archive. */
    const alone = async () => {
      await paused(true)
      const still = await unloaded()
      await paused(false)
      const running = await unloaded()
      const perArchive = (f: (w: typeof still) => number) => round(((f(running) - f(still)) / Math.max(running.scans, 1)) * 1000)
      const cost = { scans: running.scans, serviceMs: perArchive((w) => w.service), postgresMs: perArchive((w) => w.postgres) }
      log(`no load: ${cost.scans} archives scanned, CPU per archive: service ${cost.serviceMs} ms, PostgreSQL ${cost.postgresMs} ms`)
      return cost
    }

    // the jobs every start queues (digest and dependency backfills, the first catalogue snapshot)
    // first: measured during them, idle and rescan alike would be theirs
    const settled = Date.now() + 300_000
    const queued = async () => Number((await client.query<{ n: string }>("SELECT count(*) AS n FROM graphile_worker._private_jobs")).rows[0]!.n)
    while ((await queued()) > 0 && Date.now() < settled) await new Promise((r) => setTimeout(r, 500))
    log(`start-up jobs done; ${await queued()} left`)
    await load("warm-up")

    // The rescan is paused between its windows: a transaction holds version_scans, so the job
    // waits on its next insert, its scan thread idle (reads of that table go on). The windows
    // alternate, paused and running, so that the machine's drift falls on both alike.
    const pause = new pg.Client({ connectionString: stage.databaseUrl })
    await pause.connect()
    cleanups.push(() => pause.end())
    const paused = async (yes: boolean) => {
      if (yes) await pause.query("BEGIN; LOCK TABLE version_scans IN EXCLUSIVE MODE")
      else await pause.query("COMMIT")
    }
    await paused(true)
    const asked = await fetch(`${base}/admin/rescan`, { method: "POST", headers: { authorization: `Bearer ${admin}` } })
    if (asked.status !== 202) throw new Error(`POST /admin/rescan answered ${asked.status}: ${await asked.text()}`)
    await paused(false)
    // the first batch under way
    const waitUntil = Date.now() + 30_000
    while ((await scanned()) === 0 && Date.now() < waitUntil) await new Promise((r) => setTimeout(r, 200))
    const windows: Array<Awaited<ReturnType<typeof load>> & { readonly running: boolean }> = []
    for (let pair = 1; pair <= rounds; pair++) {
      await paused(true)
      windows.push({ ...(await load(`paused ${pair}`)), running: false })
      await paused(false)
      windows.push({ ...(await load(`running ${pair}`)), running: true })
    }
    const pooled = (running: boolean) => {
      const chosen = windows.filter((w) => w.running === running)
      const latencies = chosen.flatMap((w) => w.result.latencies).sort((a, b) => a - b)
      return {
        label: running ? "rescan running" : "rescan paused",
        p50: percentile(latencies, 50),
        p90: percentile(latencies, 90),
        p99: percentile(latencies, 99),
        failed: chosen.reduce((n, w) => n + w.result.non2xx + w.result.errors + w.result.timeouts, 0),
        cpuPerRequestMs: chosen.reduce((n, w) => n + w.cpuPerRequestMs, 0) / chosen.length,
        scans: chosen.reduce((n, w) => n + w.scans, 0)
      }
    }
    const quiet = await alone()
    const idle = pooled(false)
    const during = pooled(true)
    const ratio = (f: (r: typeof idle) => number) => round(f(during) / f(idle), 2)
    const perSecond = during.scans / (seconds * rounds)
    const pairs = Array.from({ length: rounds }, (_, i) => {
      const [a, b] = [windows[2 * i]!, windows[2 * i + 1]!]
      return { p50: b.result.latency.p50 / a.result.latency.p50, p99: b.result.latency.p99 / a.result.latency.p99 }
    })
    const median = (values: ReadonlyArray<number>) => percentile([...values].sort((a, b) => a - b), 50)
    return [
      `## Reads during a rescan${options.quick ? " (quick)" : ""}`,
      "",
      `${rows.length} versions with an archive (${nodes} nodes); \`GET /nodes/{id}\` of random nodes at a steady ${rate}/s ` +
      `(16 connections) in ${rounds} pairs of ${seconds}-s windows: \`POST /admin/rescan\`'s job paused, then running. ` +
      `${os.cpus().length} CPUs, Node ${process.version}.`,
      "",
      "| rescan | p50 ms | p90 ms | p99 ms | failed | service CPU ms/request | archives scanned |",
      "|---|---|---|---|---|---|---|",
      ...[idle, during].map((r) =>
        `| ${r.label} | ${round(r.p50)} | ${round(r.p90)} | ${round(r.p99)} | ${r.failed} | ${round(r.cpuPerRequestMs, 2)} | ${r.scans} |`
      ),
      "",
      `- running/paused, all windows together: p50 ×${ratio((r) => r.p50)}, p99 ×${ratio((r) => r.p99)} (target: at most ×1.1)`,
      `- running/paused, p50/p99 of each pair: ${pairs.map((p) => `×${round(p.p50, 2)}/×${round(p.p99, 2)}`).join(", ")}; ` +
      `their medians ×${round(median(pairs.map((p) => p.p50)), 2)}/×${round(median(pairs.map((p) => p.p99)), 2)}`,
      `- with no load, ${quiet.scans} archives in ${seconds} s; CPU per archive (less that of a paused window as long): ` +
      `service ${quiet.serviceMs} ms, PostgreSQL ${quiet.postgresMs} ms`,
      `- rescan speed under this load: ${round(perSecond, 2)} archives/s; 100,000 versions would take ${round(100_000 / Math.max(perSecond, 0.001) / 3600, 1)} h`,
      `- 1-minute load average at the end: ${round(os.loadavg()[0]!, 2)}`,
      ""
    ].join("\n")
  } finally {
    for (const f of cleanups.reverse()) await f().catch((e: unknown) => log(`clean-up: ${String(e)}`))
  }
}

runAlone(import.meta.url, benchRescan)
