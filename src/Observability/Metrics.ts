/**
 * What `/metrics` reports (docs/metrics.md lists every family): Effect metrics recorded where
 * things happen (requests, the list cache, vendor calls, uploads), and values read when scraped
 * (the database pools, the process). Labels take a bounded set of values: route patterns, never
 * URLs.
 */
import { HttpClient, type HttpClientError, type HttpClientResponse } from "effect/http"
import { Cause, Effect, type Exit, Metric, type Scope } from "effect"
import * as fs from "node:fs"
import type * as net from "node:net"
import { monitorEventLoopDelay, performance } from "node:perf_hooks"
import { type Family, familiesOf, render } from "./Prometheus.ts"

/** Seconds, from 5 ms to a minute: an answer from the cache to a vendor's slowest. */
const latencyBuckets = Metric.boundariesFromIterable([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60])

/**
 * The metrics `make` gives for one label set, made once per label set and kept: a metric given
 * its attributes at each update builds them again each time, several times per request, which
 * showed in every request's CPU profile on Effect 3. Label values come from bounded sets (route
 * patterns, methods, statuses, results, vendors, outcomes, kinds), so few are kept.
 */
const labelled = <M>(make: (attributes: Metric.Metric.AttributeSet) => M) => {
  const made = new Map<string, M>()
  return (labels: Record<string, string>): M => {
    const id = Object.values(labels).join("\u0000")
    let metrics = made.get(id)
    if (metrics === undefined) {
      metrics = make(labels)
      made.set(id, metrics)
    }
    return metrics
  }
}

/** A counter and a histogram of the same labels: one more, taking `seconds`. */
const countedAndTimed = (counter: Metric.Counter<number>, histogram: Metric.Histogram<number>) => {
  const pairs = labelled((attributes) => [Metric.withAttributes(counter, attributes), Metric.withAttributes(histogram, attributes)] as const)
  return (labels: Record<string, string>, seconds: number) => {
    const [count, time] = pairs(labels)
    return Effect.andThen(Metric.update(count, 1), Metric.update(time, seconds))
  }
}

const requests = countedAndTimed(
  Metric.counter("http_requests_total", { description: "HTTP requests answered, by route pattern, method and status", incremental: true }),
  Metric.histogram("http_request_duration_seconds", {
    boundaries: latencyBuckets,
    description: "Time from a request's arrival to its answer's headers, by route pattern, method and status"
  })
)

/** Counts an answered request and its latency under its route pattern ("unmatched" for none). */
export const recordRequest = (route: string, method: string, status: number, seconds: number) =>
  requests({ route, method, status: String(status) }, seconds)

/** A counter by labels. */
export const labelledCounter = (name: string, description: string) => {
  const counter = Metric.counter(name, { description, incremental: true })
  return labelled((attributes) => Metric.withAttributes(counter, attributes))
}

const listCache = labelledCounter(
  "list_cache_requests_total",
  "Pages of GET /nodes asked of the list cache, by result: hit, miss, or bypass (latest=true)"
)

/** Counts a page served from the list cache (`hit`), computed for it (`miss`) or past it (`bypass`). */
export const recordListCache = (result: "hit" | "miss" | "bypass") => Metric.update(listCache({ result }), 1)

const vendorCalls = countedAndTimed(
  Metric.counter("vendor_calls_total", {
    description: "Calls to vendors by outcome: success (2xx), http_error (any other status), network_error, timeout (cut before an answer)",
    incremental: true
  }),
  Metric.histogram("vendor_call_duration_seconds", {
    boundaries: latencyBuckets,
    description: "Time from a vendor call's start to the vendor's answer headers, by vendor and outcome"
  })
)

type VendorOutcome = "success" | "http_error" | "network_error" | "timeout"

const outcomeOf = (exit: Exit.Exit<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError>): VendorOutcome =>
  exit._tag === "Success"
    ? exit.value.status >= 200 && exit.value.status < 300 ? "success" : "http_error"
    : Cause.hasInterruptsOnly(exit.cause)
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
  Metric.update(uploaded({ kind }), bytes)

// --- read when scraped -----------------------------------------------------------------------

/**
 * One connection of a database pool, seen from its socket. @effect/sql-pg 4 keeps its pool to
 * itself (no counts, no hook at checkout), so a connection's state is read from its bytes:
 * PostgreSQL ends each answer with ReadyForQuery, whose status byte says idle (`I`) or in a
 * transaction; a connection is in use from the client's next byte sent until then. Over TLS the
 * status is not readable: there a connection counts as in use while its last bytes sent have had
 * no answer yet.
 */
interface WatchedConnection {
  readonly socket: net.Socket
  /** Ended with an idle ReadyForQuery (or, over TLS, with any answer) when `socket.bytesWritten` was this. */
  answeredAt: number
  /** The last ReadyForQuery said idle (not in a transaction). */
  idle: boolean
  /** TLS: the bytes are not PostgreSQL's messages. */
  encrypted: boolean
  /** The last bytes of the previous chunk: a ReadyForQuery may straddle two. */
  tail: Uint8Array
}

interface WatchedPool {
  readonly maxConnections: number
  readonly connections: Set<WatchedConnection>
}

/** The database pools of this process (one per service instance; tests run several). */
const pools = new Set<WatchedPool>()

/** `Z`, length 5: a ReadyForQuery message; its status byte follows. */
const readyForQuery = [0x5a, 0, 0, 0, 5]

/** The status of the ReadyForQuery that `bytes` ends with, if it ends with one. */
const readyStatus = (bytes: Uint8Array): number | undefined => {
  const at = bytes.length - 6
  if (at < 0) return undefined
  for (let i = 0; i < 5; i++) if (bytes[at + i] !== readyForQuery[i]) return undefined
  return bytes[at + 5]
}

const watch = (pool: WatchedPool, socket: net.Socket) => {
  const connection: WatchedConnection = { socket, answeredAt: 0, idle: false, encrypted: false, tail: new Uint8Array(0) }
  pool.connections.add(connection)
  socket.once("close", () => pool.connections.delete(connection))
  let first = true
  socket.on("data", (chunk: Buffer) => {
    // the server's one-byte answer to an SSLRequest: `S` means TLS from here on
    if (first && chunk.length === 1 && chunk[0] === 0x53) connection.encrypted = true
    first = false
    if (connection.encrypted) {
      connection.answeredAt = socket.bytesWritten
      connection.idle = true
      return
    }
    const bytes = chunk.length >= 6 ? chunk : Buffer.concat([connection.tail, chunk])
    const status = readyStatus(bytes)
    if (status !== undefined) {
      connection.idle = status === 0x49
      connection.answeredAt = socket.bytesWritten
    }
    connection.tail = bytes.subarray(Math.max(0, bytes.length - 5))
  })
}

/**
 * Reports a pool of at most `maxConnections` in the metrics for as long as the scope lasts.
 * Its connections are the sockets that `connect` opens (PgClient's `stream` option).
 */
export const observePool = (maxConnections: number): Effect.Effect<(connect: () => net.Socket) => net.Socket, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => {
        const pool: WatchedPool = { maxConnections, connections: new Set() }
        pools.add(pool)
        return pool
      }),
      (pool) => Effect.sync(() => void pools.delete(pool))
    ),
    (pool) => (connect) => {
      const socket = connect()
      watch(pool, socket)
      return socket
    }
  )

const inUse = (c: WatchedConnection) => !c.idle || c.socket.bytesWritten > c.answeredAt

const sum = (of: (pool: WatchedPool) => number) => [...pools].reduce((total, pool) => total + of(pool), 0)

const count = (pool: WatchedPool, busy: boolean) => [...pool.connections].filter((c) => inUse(c) === busy).length

const poolFamilies = (): Array<Family> => [
  {
    name: "db_pool_connections",
    help: "Connections of the database pool, by state: in_use (checked out) or idle",
    type: "gauge",
    samples: [
      { labels: [["state", "in_use"]], value: sum((p) => count(p, true)) },
      { labels: [["state", "idle"]], value: sum((p) => count(p, false)) }
    ]
  },
  {
    // @effect/sql-pg 4 does not tell how many statements wait for a connection: no sample
    name: "db_pool_waiting",
    help: "Queries waiting for a connection of the database pool",
    type: "gauge",
    samples: []
  },
  {
    name: "db_pool_max_connections",
    help: "The most connections the database pool opens",
    type: "gauge",
    samples: [{ labels: [], value: sum((p) => p.maxConnections) }]
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
