/**
 * `npx tsx bench/rescan.ts [--quick]`: the read routes while every archive is rescanned (issue 29:
 * a rescan of 100,000 versions must not slow them by more than 10%).
 *
 * A throw-away embedded PostgreSQL is seeded with 10,000 nodes x 10 versions (scripts/seed.ts;
 * `--quick`: 1,000 x 10), every version given the same small node pack as its archive (hard links
 * in the store, its size and digest in the rows). The compiled service then answers a steady load
 * of `GET /nodes/{id}` for random nodes (bench/paced.ts), first idle, then while the rescan a
 * site admin queued (`POST /admin/rescan`) runs, and idle again; latencies and the service's CPU
 * per request (from /proc) are compared side by side, and the versions rescanned meanwhile counted.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import * as jose from "jose"
import pg from "pg"
import { zipOf } from "../test/support/Zip.ts"
import { paced, type LoadResult } from "./paced.ts"
import { cpuSeconds } from "./proc.ts"
import { benchJwtSecret, imageVendorStage, seedCatalogue } from "./processes.ts"
import { runAlone } from "./standalone.ts"

const log = (line: string) => console.error(`[bench:rescan] ${line}`)
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits

export const benchRescan = async (options: { readonly quick: boolean }): Promise<string> => {
  const nodes = options.quick ? 1_000 : 10_000
  const seconds = options.quick ? 8 : 20
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
      const result: LoadResult = await paced({
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

    // the jobs every start queues (digest and dependency backfills, the first catalogue snapshot)
    // first: measured during them, idle and rescan alike would be theirs
    const settled = Date.now() + 300_000
    const queued = async () => Number((await client.query<{ n: string }>("SELECT count(*) AS n FROM graphile_worker._private_jobs")).rows[0]!.n)
    while ((await queued()) > 0 && Date.now() < settled) await new Promise((r) => setTimeout(r, 500))
    log(`start-up jobs done; ${await queued()} left`)
    await load("warm-up")
    const idle = await load("idle")
    const asked = await fetch(`${base}/admin/rescan`, { method: "POST", headers: { authorization: `Bearer ${admin}` } })
    if (asked.status !== 202) throw new Error(`POST /admin/rescan answered ${asked.status}: ${await asked.text()}`)
    // the first batch under way
    const waitUntil = Date.now() + 30_000
    while ((await scanned()) === 0 && Date.now() < waitUntil) await new Promise((r) => setTimeout(r, 200))
    const during = await load("during the rescan")
    const rows2 = [idle, during]
    const ratio = (f: (r: typeof idle) => number) => round(f(during) / f(idle), 2)
    const perSecond = during.scans / seconds
    const failed = (r: typeof idle) => r.result.non2xx + r.result.errors + r.result.timeouts
    return [
      `## Reads during a rescan${options.quick ? " (quick)" : ""}`,
      "",
      `${rows.length} versions with an archive (${nodes} nodes); \`GET /nodes/{id}\` of random nodes at a steady ${rate}/s for ${seconds} s ` +
      `(16 connections), idle, then while \`POST /admin/rescan\`'s job runs. ${os.cpus().length} CPUs, Node ${process.version}.`,
      "",
      "| load | p50 ms | p90 ms | p99 ms | failed | service CPU ms/request | archives scanned |",
      "|---|---|---|---|---|---|---|",
      ...rows2.map((r) =>
        `| ${r.label} | ${round(r.result.latency.p50)} | ${round(r.result.latency.p90)} | ${round(r.result.latency.p99)} | ${failed(r)} | ${round(r.cpuPerRequestMs, 2)} | ${r.scans} |`
      ),
      "",
      `- during/idle: p50 ×${ratio((r) => r.result.latency.p50)}, p99 ×${ratio((r) => r.result.latency.p99)} (target: at most ×1.1)`,
      `- rescan speed under this load: ${round(perSecond)} archives/s; 100,000 versions would take ${round(100_000 / Math.max(perSecond, 0.001) / 3600, 1)} h`,
      `- 1-minute load average at the end: ${round(os.loadavg()[0]!, 2)}`,
      ""
    ].join("\n")
  } finally {
    for (const f of cleanups.reverse()) await f().catch((e: unknown) => log(`clean-up: ${String(e)}`))
  }
}

runAlone(import.meta.url, benchRescan)
