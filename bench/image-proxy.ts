/**
 * `npx tsx bench/image-proxy.ts [--quick]`: what the image proxy adds to a vendor's latency.
 *
 * A loopback fake vendor (test/support/FakeImageVendor.ts, answering at once) and the service
 * (src/main.ts as a child process on a throw-away embedded PostgreSQL, pointed at the fake) are
 * measured side by side in one run: the same requests straight to the fake and through the
 * proxy, for starting a style transfer (POST, without and with an Idempotency-Key) and polling a
 * task (GET), finished (the proxy answers without the vendor) and unfinished (it asks the vendor
 * each time). Each pair is measured
 * twice: one connection sending requests one after another (timed here with sub-millisecond
 * precision: the added latency), and autocannon with many connections (throughput, p50/p99
 * under load). Prints a Markdown table; `benchImageProxy` answers it for bench/run.ts.
 */
import autocannon from "autocannon"
import { randomUUID } from "node:crypto"
import * as http from "node:http"
import * as os from "node:os"
import * as jose from "jose"
import { runAlone } from "./standalone.ts"
import { benchJwtSecret, benchVendorKey, imageVendorStage } from "./processes.ts"
import { cpuSeconds } from "./proc.ts"

// autocannon sends request bodies too (bench/autocannon.d.ts declares what the catalogue bench uses)
declare module "autocannon" {
  namespace autocannon {
    interface Request {
      body?: string
    }
  }
}

const log = (line: string) => console.error(`[bench:image] ${line}`)
const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits

const vendorKey = benchVendorKey
const jwtSecret = benchJwtSecret
/** What the proxy may add at p50 (issue 24): to a start, and to a poll of a finished task. */
const targetAddedP50Ms = { start: 2, finishedPoll: 1 }

const styleBody = JSON.stringify({
  image: "https://images.example/portrait.jpg",
  reference_image: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=",
  engine: "colorful_anime",
  style_strength: 80
})

/** The same request straight to the fake vendor and through the proxy; `target`: the most the proxy may add at p50. */
interface Pair {
  readonly name: string
  readonly target?: number
  readonly direct: Target
  readonly proxy: Target
}

interface Target {
  readonly method: "GET" | "POST"
  readonly url: string
  readonly headers: Record<string, string>
  readonly body?: string
  /** Headers made anew for every request (a fresh Idempotency-Key). */
  readonly fresh?: () => Record<string, string>
}

const headersOf = (target: Target) => target.fresh === undefined ? target.headers : { ...target.headers, ...target.fresh() }

/** `count` requests one after another on one kept-alive connection; latencies in ms. */
const sequential = async (target: Target, count: number) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const once = () =>
    new Promise<number>((resolve, reject) => {
      const started = performance.now()
      const req = http.request(target.url, { method: target.method, headers: headersOf(target), agent }, (res) => {
        res.resume()
        res.on("end", () => res.statusCode === 200 ? resolve(performance.now() - started) : reject(new Error(`${target.url} answered ${res.statusCode}`)))
      })
      req.on("error", reject)
      req.end(target.body)
    })
  const result = await timed(once, count)
  agent.destroy()
  return result
}

/** `count` runs of `once` one after another, and its p50 and p99 in ms. */
const timed = async (once: () => Promise<number>, count: number) => {
  const times: Array<number> = []
  for (let i = 0; i < count; i++) times.push(await once())
  times.sort((a, b) => a - b)
  const at = (p: number) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))]!
  return { p50: at(50), p99: at(99) }
}

/**
 * `count` one-row INSERTs straight to PostgreSQL, each its own transaction: what the commit that a
 * start waits for (the task's record, flushed to disk before the client hears of it) costs alone.
 */
const durableInserts = async (url: string, count: number) => {
  const { default: pg } = await import("pg")
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query("CREATE TABLE bench_commit_floor (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())")
    const once = async () => {
      const started = performance.now()
      await client.query("INSERT INTO bench_commit_floor DEFAULT VALUES")
      return performance.now() - started
    }
    await timed(once, 50)
    return await timed(once, count)
  } finally {
    await client.end()
  }
}

/** autocannon at `connections`: requests per second, p50 and p99 (whole ms), failures. */
const loaded = async (target: Target, connections: number, seconds: number) => {
  const run = (duration: number) =>
    autocannon({
      url: target.url,
      connections,
      duration,
      requests: [{ setupRequest: (r) => ({ ...r, method: target.method, headers: headersOf(target), ...(target.body ? { body: target.body } : {}) }) }]
    })
  await run(1)
  const r = await run(seconds)
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, failures: r.errors + r.timeouts + r.non2xx }
}

export const benchImageProxy = async (options: { readonly quick: boolean }): Promise<string> => {
  const settings = { sequential: options.quick ? 200 : 1000, connections: 16, seconds: options.quick ? 3 : 8 }
  const cleanups: Array<() => Promise<unknown>> = []
  try {
    const { databaseUrl, fake, startService } = await imageVendorStage("image", { record: false, log, cleanups })
    const { base: service, child } = await startService("service")
    /** `run` with the service's CPU time per request over it (from /proc, so that a busy machine does not inflate it). */
    const serviceCpu = async (run: () => Promise<{ p50: number; p99: number }>) => {
      const before = await cpuSeconds(child.pid!)
      const result = await run()
      return { ...result, cpuMs: ((await cpuSeconds(child.pid!)) - before) * 1000 / settings.sequential }
    }
    log(`service on ${service}, fake vendor on ${fake.url}`)

    const token = await new jose.SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("bench-user")
      .setIssuedAt().setExpirationTime("1h").sign(new TextEncoder().encode(jwtSecret))
    const json = { "content-type": "application/json" }
    const toVendor = { ...json, "x-api-key": vendorKey }
    const toProxy = { ...json, authorization: `Bearer ${token}` }

    const startTask = async () => {
      const started = await fetch(`${service}/proxy/imagevendor/v1/ai/image-style-transfer`, { method: "POST", headers: toProxy, body: styleBody })
      if (started.status !== 200) throw new Error(`starting a task through the proxy answered ${started.status}`)
      return (await started.json() as { task_id: string }).task_id
    }
    const pollOf = (taskId: string): Pick<Pair, "direct" | "proxy"> => ({
      direct: { method: "GET", url: `${fake.url}/v1/ai/image-style-transfer/${taskId}`, headers: { "x-api-key": vendorKey } },
      proxy: { method: "GET", url: `${service}/proxy/imagevendor/v1/ai/image-style-transfer/${taskId}`, headers: { authorization: `Bearer ${token}` } }
    })
    // the fake answers polls IN_PROGRESS unless scripted: one task it calls COMPLETED, polled once
    // through the proxy so that the service has recorded it finished
    const finishedId = await startTask()
    fake.script(finishedId, ["COMPLETED"])
    const finishing = await fetch(pollOf(finishedId).proxy.url, { headers: pollOf(finishedId).proxy.headers })
    const finished = await finishing.json() as { data: { status: string } }
    if (finished.data.status !== "COMPLETED") throw new Error(`the finished task's poll answered ${finished.data.status}`)
    const unfinishedId = await startTask()

    const pairs: ReadonlyArray<Pair> = [
      {
        name: "POST style transfer",
        target: targetAddedP50Ms.start,
        direct: { method: "POST", url: `${fake.url}/v1/ai/image-style-transfer`, headers: toVendor, body: styleBody },
        proxy: { method: "POST", url: `${service}/proxy/imagevendor/v1/ai/image-style-transfer`, headers: toProxy, body: styleBody }
      },
      {
        name: "POST style transfer, new Idempotency-Key each",
        target: targetAddedP50Ms.start,
        direct: { method: "POST", url: `${fake.url}/v1/ai/image-style-transfer`, headers: toVendor, body: styleBody },
        proxy: {
          method: "POST",
          url: `${service}/proxy/imagevendor/v1/ai/image-style-transfer`,
          headers: toProxy,
          body: styleBody,
          fresh: () => ({ "idempotency-key": randomUUID() })
        }
      },
      { name: "GET poll, finished task", target: targetAddedP50Ms.finishedPoll, ...pollOf(finishedId) },
      { name: "GET poll, unfinished task", ...pollOf(unfinishedId) }
    ]

    const rows: Array<string> = []
    const verdicts: Array<string> = []
    for (const pair of pairs) {
      log(`${pair.name}: ${settings.sequential} sequential requests each way`)
      // warm both paths (connections, JIT) before timing
      await sequential(pair.direct, 50)
      await sequential(pair.proxy, 50)
      const seqDirect = await sequential(pair.direct, settings.sequential)
      const seqProxy = await serviceCpu(() => sequential(pair.proxy, settings.sequential))
      log(`${pair.name}: autocannon, ${settings.connections} connections, ${settings.seconds} s each way`)
      const loadDirect = await loaded(pair.direct, settings.connections, settings.seconds)
      const loadProxy = await loaded(pair.proxy, settings.connections, settings.seconds)
      const addedP50 = seqProxy.p50 - seqDirect.p50
      const addedP99 = seqProxy.p99 - seqDirect.p99
      rows.push(
        `| ${pair.name} | direct | ${round(seqDirect.p50)} | ${round(seqDirect.p99)} | | ${round(loadDirect.rps, 0)} | ${loadDirect.p50} | ${loadDirect.p99} | ${loadDirect.failures} |`,
        `| ${pair.name} | proxy | ${round(seqProxy.p50)} | ${round(seqProxy.p99)} | ${round(seqProxy.cpuMs, 3)} | ${round(loadProxy.rps, 0)} | ${loadProxy.p50} | ${loadProxy.p99} | ${loadProxy.failures} |`,
        `| ${pair.name} | **added** | **${round(addedP50)}** | **${round(addedP99)}** | | | ${loadProxy.p50 - loadDirect.p50} | ${loadProxy.p99 - loadDirect.p99} | |`
      )
      verdicts.push(
        pair.target === undefined
          ? `- ${pair.name}: added p50 ${round(addedP50)} ms (no target: one vendor exchange more than the direct call's)`
          : `- ${pair.name}: added p50 ${round(addedP50)} ms (target <= ${pair.target} ms): ${addedP50 <= pair.target ? "met" : "NOT met"}`
      )
    }
    // what any request costs this service on this machine, vendor or not: one exchange, one SQL statement
    const ready: Target = { method: "GET", url: `${service}/ready`, headers: {} }
    await sequential(ready, 50)
    const seqReady = await serviceCpu(() => sequential(ready, settings.sequential))
    const loadReady = await loaded(ready, settings.connections, settings.seconds)
    rows.push(`| floor: GET /ready (one SQL statement, no vendor) | service | ${round(seqReady.p50)} | ${round(seqReady.p99)} | ${round(seqReady.cpuMs, 3)} | ${round(loadReady.rps, 0)} | ${loadReady.p50} | ${loadReady.p99} | ${loadReady.failures} |`)
    const commit = await durableInserts(databaseUrl, settings.sequential)
    rows.push(`| floor: one-row INSERT, its own transaction, straight to PostgreSQL (the commit a start waits for) | PostgreSQL | ${round(commit.p50)} | ${round(commit.p99)} | | | | | |`)
    verdicts.push(`- a durable commit alone takes p50 ${round(commit.p50)} ms on this disk: a start pays it, a poll does not`)
    const load = os.loadavg()[0]!
    return [
      `## Image proxy${options.quick ? " (quick)" : ""}`,
      "",
      `A loopback fake vendor answering at once, straight and through the proxy (bearer JWT, validation, PostgreSQL ` +
      `task record; a finished task's poll is answered without the vendor, an unfinished one's asks it each time). Sequential: one connection, ` +
      `${settings.sequential} requests after 50 of warm-up, timed with sub-millisecond precision, with the service's CPU time per request (from /proc: ` +
      `what a busy machine does not inflate). Load: autocannon, ` +
      `${settings.connections} connections, ${settings.seconds} s after 1 s of warm-up (whole milliseconds). ${os.cpus().length} CPUs, Node ${process.version}.`,
      "",
      "| request | path | sequential p50 ms | sequential p99 ms | service CPU ms/req | load req/s | load p50 ms | load p99 ms | failures |",
      "|---|---|---|---|---|---|---|---|---|",
      ...rows,
      "",
      ...verdicts,
      `- 1-minute load average at the end: ${round(load)} on ${os.cpus().length} CPUs${load > os.cpus().length ? " — the machine was busy with other work: latencies are inflated" : ""}`,
      ""
    ].join("\n")
  } finally {
    for (const f of cleanups.reverse()) await f().catch((e: unknown) => log(`clean-up: ${String(e)}`))
  }
}

runAlone(import.meta.url, benchImageProxy)
