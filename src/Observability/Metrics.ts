/**
 * What `/metrics` reports (README, "Metrics"): Effect metrics recorded where things happen
 * (requests, the list cache, vendor calls, uploads), and values read when scraped (the database
 * pools, the process). Labels take a bounded set of values: route patterns, never URLs.
 */
import { HttpClient, type HttpClientError, type HttpClientResponse } from "@effect/platform"
import { Cause, Effect, type Exit, Metric, MetricBoundaries, MetricKey, type MetricKeyType, MetricLabel, type Scope } from "effect"
import * as fs from "node:fs"
import { monitorEventLoopDelay, performance } from "node:perf_hooks"
import type pg from "pg"
import { type Family, familiesOf, render } from "./Prometheus.ts"

/** Seconds, from 5 ms to a minute: an answer from the cache to a vendor's slowest. */
const latencyBuckets = MetricBoundaries.fromIterable([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60])

/**
 * The metrics `make` gives for one label set, made once per label set and kept. A metric tagged
 * at each update (`Metric.tagged`, `Metric.taggedWithLabels`) builds a new label array each time,
 * so Effect's hook cache (a WeakMap keyed by that array) always misses and its registry hashes
 * the whole key again: several times per request, which showed in every request's CPU profile.
 * Label values come from bounded sets (route patterns, methods, statuses, results, vendors,
 * outcomes, kinds), so few are kept.
 */
const labelled = <M>(make: (tags: ReadonlyArray<MetricLabel.MetricLabel>) => M) => {
  const made = new Map<string, M>()
  return (labels: Record<string, string>): M => {
    const id = Object.values(labels).join("\u0000")
    let metrics = made.get(id)
    if (metrics === undefined) {
      metrics = make(Object.entries(labels).map(([key, value]) => MetricLabel.make(key, value)))
      made.set(id, metrics)
    }
    return metrics
  }
}

/** The metric of `key` under `tags`. */
const taggedMetric = <Type extends MetricKeyType.MetricKeyType<any, any>>(key: MetricKey.MetricKey<Type>) =>
  (tags: ReadonlyArray<MetricLabel.MetricLabel>) => Metric.fromMetricKey(MetricKey.taggedWithLabels(key, tags))

/** A counter and a histogram of the same labels: one more, taking `seconds`. */
const countedAndTimed = (counter: MetricKey.MetricKey.Counter<number>, histogram: MetricKey.MetricKey.Histogram) => {
  const pairs = labelled((tags) => [taggedMetric(counter)(tags), taggedMetric(histogram)(tags)] as const)
  return (labels: Record<string, string>, seconds: number) => {
    const [count, time] = pairs(labels)
    return Effect.zipRight(Metric.increment(count), Metric.update(time, seconds))
  }
}

const requests = countedAndTimed(
  MetricKey.counter("http_requests_total", { description: "HTTP requests answered, by route pattern, method and status" }),
  MetricKey.histogram(
    "http_request_duration_seconds",
    latencyBuckets,
    "Time from a request's arrival to its answer's headers, by route pattern, method and status"
  )
)

/** Counts an answered request and its latency under its route pattern ("unmatched" for none). */
export const recordRequest = (route: string, method: string, status: number, seconds: number) =>
  requests({ route, method, status: String(status) }, seconds)

/** A counter by labels. */
export const labelledCounter = (name: string, description: string) =>
  labelled(taggedMetric(MetricKey.counter(name, { description })))

const listCache = labelledCounter(
  "list_cache_requests_total",
  "Pages of GET /nodes asked of the list cache, by result: hit, miss, or bypass (latest=true)"
)

/** Counts a page served from the list cache (`hit`), computed for it (`miss`) or past it (`bypass`). */
export const recordListCache = (result: "hit" | "miss" | "bypass") => Metric.increment(listCache({ result }))

const vendorCalls = countedAndTimed(
  MetricKey.counter("vendor_calls_total", {
    description: "Calls to vendors by outcome: success (2xx), http_error (any other status), network_error, timeout (cut before an answer)"
  }),
  MetricKey.histogram(
    "vendor_call_duration_seconds",
    latencyBuckets,
    "Time from a vendor call's start to the vendor's answer headers, by vendor and outcome"
  )
)

type VendorOutcome = "success" | "http_error" | "network_error" | "timeout"

const outcomeOf = (exit: Exit.Exit<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError>): VendorOutcome =>
  exit._tag === "Success"
    ? exit.value.status >= 200 && exit.value.status < 300 ? "success" : "http_error"
    : Cause.isInterruptedOnly(exit.cause)
    ? "timeout"
    : "network_error"

/**
 * A vendor's client that counts its calls and times them up to the answer's headers. Each client
 * bounds its calls with a timeout, which interrupts the call: a call cut before its answer is
 * counted as `timeout` (a caller leaving a streamed upload cuts it too).
 */
export const measuredVendor = (vendor: "imagevendor" | "musicvendor" | "repohost") =>
  HttpClient.transform<HttpClientError.HttpClientError, never, HttpClientError.HttpClientError, never>((call) =>
    Effect.suspend(() => {
      const start = performance.now()
      return Effect.onExit(call, (exit) => vendorCalls({ vendor, outcome: outcomeOf(exit) }, (performance.now() - start) / 1000))
    })
  )

const uploaded = labelledCounter(
  "uploaded_bytes_total",
  "Bytes of uploads accepted and stored, by kind: archive, media (API nodes' files), music_video"
)

/** Counts the bytes of an upload that was stored. */
export const recordUpload = (kind: "archive" | "media" | "music_video", bytes: number) =>
  Metric.incrementBy(uploaded({ kind }), bytes)

// --- read when scraped -----------------------------------------------------------------------

/** The database pools of this process (one per service instance; tests run several). */
const pools = new Set<pg.Pool>()

/** Reports `pool` in the metrics for as long as the scope lasts. */
export const observePool = (pool: pg.Pool): Effect.Effect<void, never, Scope.Scope> =>
  Effect.acquireRelease(Effect.sync(() => void pools.add(pool)), () => Effect.sync(() => void pools.delete(pool)))

const sum = (of: (pool: pg.Pool) => number) => [...pools].reduce((total, pool) => total + of(pool), 0)

const poolFamilies = (): Array<Family> => [
  {
    name: "db_pool_connections",
    help: "Connections of the database pool, by state: in_use (checked out) or idle",
    type: "gauge",
    samples: [
      { labels: [["state", "in_use"]], value: sum((p) => p.totalCount - p.idleCount) },
      { labels: [["state", "idle"]], value: sum((p) => p.idleCount) }
    ]
  },
  {
    name: "db_pool_waiting",
    help: "Queries waiting for a connection of the database pool",
    type: "gauge",
    samples: [{ labels: [], value: sum((p) => p.waitingCount) }]
  },
  {
    name: "db_pool_max_connections",
    help: "The most connections the database pool opens",
    type: "gauge",
    samples: [{ labels: [], value: sum((p) => p.options.max ?? 10) }]
  }
]

const gauge = (name: string, help: string, value: number): Family => ({ name, help, type: "gauge", samples: [{ labels: [], value }] })
const counter = (name: string, help: string, value: number): Family => ({ name, help, type: "counter", samples: [{ labels: [], value }] })

/** The open file descriptors, where the system lists them (Linux); `undefined` elsewhere. */
const openFds = () => {
  try {
    // the listing's own descriptor is among those listed
    return fs.readdirSync("/proc/self/fd").length - 1
  } catch {
    return undefined
  }
}

const startTimeSeconds = Date.now() / 1000 - process.uptime()

/**
 * Node's process metrics. The event-loop delay is sampled from when metrics are served (the
 * scope) and reported, and reset, at each scrape: its p99 and max since the previous scrape.
 */
export const processMetrics = Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => {
      const delay = monitorEventLoopDelay({ resolution: 10 })
      delay.enable()
      return delay
    }),
    (delay) => Effect.sync(() => delay.disable())
  ),
  (delay) => (): Array<Family> => {
    const cpu = process.cpuUsage()
    const memory = process.memoryUsage()
    const loop = performance.eventLoopUtilization()
    const fds = openFds()
    // before any sample the histogram reports its maximum as a huge number
    const [p99, max] = delay.count === 0 ? [0, 0] : [delay.percentile(99) / 1e9, delay.max / 1e9]
    delay.reset()
    return [
      counter("process_cpu_user_seconds_total", "User CPU time spent", cpu.user / 1e6),
      counter("process_cpu_system_seconds_total", "System CPU time spent", cpu.system / 1e6),
      counter("process_cpu_seconds_total", "User and system CPU time spent", (cpu.user + cpu.system) / 1e6),
      gauge("process_resident_memory_bytes", "Resident memory size", memory.rss),
      gauge("process_start_time_seconds", "Start time of the process since the Unix epoch", startTimeSeconds),
      ...(fds === undefined ? [] : [gauge("process_open_fds", "Open file descriptors", fds)]),
      gauge("nodejs_heap_size_used_bytes", "V8 heap in use", memory.heapUsed),
      gauge("nodejs_heap_size_total_bytes", "V8 heap allocated", memory.heapTotal),
      gauge("nodejs_external_memory_bytes", "Memory of C++ objects bound to JavaScript objects (buffers)", memory.external),
      counter(
        "nodejs_eventloop_active_seconds_total",
        "Time the event loop spent working rather than waiting; its rate is the loop's utilization",
        loop.active / 1000
      ),
      gauge("nodejs_eventloop_delay_p99_seconds", "99th percentile of the event loop's delay since the previous scrape", p99),
      gauge("nodejs_eventloop_delay_max_seconds", "Longest delay of the event loop since the previous scrape", max)
    ]
  }
)

/** The exposition of every metric: the registry's, the pools' and the process's (`processFamilies`, from `processMetrics`). */
export const exposition = (processFamilies: () => Array<Family>) =>
  Effect.map(Metric.snapshot, (pairs) => render([...familiesOf(pairs), ...poolFamilies(), ...processFamilies()]))
