/**
 * `npx tsx bench/snapshot.ts [--quick]` (also a scenario of `npm run bench`, "catalogue snapshot"):
 * the catalogue snapshot of issue 30 on 100,000 nodes (`--quick`: 10,000), one version each.
 *
 * A throw-away embedded PostgreSQL is seeded (scripts/seed.ts); the compiled service builds the
 * snapshot in the background. Measured: its build time and sizes (from its row), how long it
 * lags a change, and what a client's full sync costs, side by side in one run: one snapshot
 * request (br and gzip, decoded and parsed) against paging through `GET /nodes?limit=500` (from
 * the database, as after a change, and from the list cache), each with the wall time and the
 * service's CPU (from /proc).
 */
import * as os from "node:os"
import pg from "pg"
import { cpuSeconds } from "./proc.ts"
import { imageVendorStage, seedCatalogue } from "./processes.ts"
import { runAlone } from "./standalone.ts"

const log = (line: string) => console.error(`[bench:snapshot] ${line}`)
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits
const mib = (bytes: number) => `${round(bytes / 1024 / 1024, 1)} MiB`

interface SnapshotRow {
  readonly cursor: string
  readonly nodes: number
  readonly bytes: string
  readonly gzip: number
  readonly br: number
  readonly build_millis: number
}

const newestSnapshot = async (client: pg.Client) =>
  (await client.query<SnapshotRow>(
    `SELECT cursor, nodes, bytes, gzip_bytes::int AS gzip, br_bytes::int AS br, build_millis
     FROM catalogue_snapshots ORDER BY built_at DESC LIMIT 1`
  )).rows[0]

const waitFor = async <A>(read: () => Promise<A | undefined>, seconds: number): Promise<A> => {
  const until = Date.now() + seconds * 1000
  for (;;) {
    const value = await read()
    if (value !== undefined) return value
    if (Date.now() > until) throw new Error(`nothing after ${seconds} s`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

export const benchSnapshot = async (options: { readonly quick: boolean }): Promise<string> => {
  const nodes = options.quick ? 10_000 : 100_000
  const cleanups: Array<() => Promise<unknown>> = []
  try {
    const stage = await imageVendorStage("snapshot", { record: false, log, cleanups })
    log(`seeding ${nodes} nodes x 1 version`)
    await seedCatalogue(stage.databaseUrl, nodes, 1)
    const client = new pg.Client({ connectionString: stage.databaseUrl })
    await client.connect()
    cleanups.push(() => client.end())

    const { base, child } = await stage.startService("service")
    const first = await waitFor(() => newestSnapshot(client), 600)
    log(`built at ${first.cursor}: ${first.nodes} nodes in ${first.build_millis} ms`)

    /** A full sync as a client makes it: wall time, bytes on the wire, the service's CPU, the nodes read. */
    const sync = async (label: string, run: () => Promise<{ nodes: number; wire: number }>) => {
      const cpuBefore = await cpuSeconds(child.pid!)
      const started = performance.now()
      const { nodes: read, wire } = await run()
      const millis = performance.now() - started
      const cpu = ((await cpuSeconds(child.pid!)) - cpuBefore) * 1000
      log(`${label}: ${read} nodes in ${round(millis)} ms, ${mib(wire)} on the wire, service CPU ${round(cpu)} ms`)
      return { label, millis, cpu, wire, read }
    }
    const snapshotIn = (coding: string) => async () => {
      const answer = await fetch(`${base}/catalogue/snapshot`, { headers: { "accept-encoding": coding } })
      const wire = Number(answer.headers.get("content-length") ?? 0)
      const body = (await answer.json()) as { nodes: ReadonlyArray<unknown> }
      return { nodes: body.nodes.length, wire }
    }
    const paging = (fresh: boolean) => async () => {
      let read = 0
      let wire = 0
      for (let page = 1; ; page++) {
        const answer = await fetch(`${base}/nodes?limit=500&page=${page}${fresh ? "&latest=true" : ""}`, { headers: { "accept-encoding": "gzip" } })
        wire += Number(answer.headers.get("content-length") ?? 0)
        const body = (await answer.json()) as { nodes: ReadonlyArray<unknown>; totalPages: number }
        read += body.nodes.length
        if (page >= body.totalPages) return { nodes: read, wire }
      }
    }
    // each once to warm up, then measured
    await snapshotIn("br")()
    await paging(false)()
    const rows = [
      await sync("GET /nodes?limit=500, every page from the database (`latest=true`, gzip)", paging(true)),
      await sync("GET /nodes?limit=500, every page from the list cache (gzip)", paging(false)),
      await sync("snapshot, br", snapshotIn("br")),
      await sync("snapshot, gzip", snapshotIn("gzip"))
    ]

    // how far behind a change the snapshot is
    const changed = Date.now()
    await client.query("UPDATE nodes SET description = 'changed for the bench' WHERE id = (SELECT min(id) FROM nodes WHERE listed)")
    const next = await waitFor(async () => {
      const row = await newestSnapshot(client)
      return row !== undefined && row.cursor !== first.cursor ? row : undefined
    }, 600)
    const lag = Date.now() - changed

    const paged = rows[0]!
    return [
      `## Catalogue snapshot${options.quick ? " (quick)" : ""}`,
      "",
      `${first.nodes} listed nodes, one version each. ${os.cpus().length} CPUs, Node ${process.version}.`,
      "",
      `- size: ${mib(Number(first.bytes))} of JSON; gzip ${mib(first.gzip)}, br ${mib(first.br)}`,
      `- first build: ${first.build_millis} ms (every node rendered, all read in one transaction, both codings compressed)`,
      `- after a change to one node the next snapshot was served ${lag} ms later (its build ${next.build_millis} ms, rendering ` +
      "only what the feed named; each instance checks every 2 s)",
      "",
      "| full sync | wall ms | on the wire | service CPU ms | wall vs paging the database | service CPU vs paging the database |",
      "|---|---|---|---|---|---|",
      ...rows.map((r) =>
        `| ${r.label} | ${round(r.millis)} | ${mib(r.wire)} | ${round(r.cpu)} | ×${round(r.millis / paged.millis, 2)} | ×${round(r.cpu / paged.cpu, 2)} |`
      ),
      ""
    ].join("\n")
  } finally {
    for (const f of cleanups.reverse()) await f().catch((e: unknown) => log(`clean-up: ${String(e)}`))
  }
}

runAlone(import.meta.url, benchSnapshot)
