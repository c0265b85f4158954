/**
 * An open-loop load at a steady rate: request i starts at i / rate seconds, whatever the earlier
 * answers take, and its latency counts from that scheduled start (a request that had to wait for
 * a free connection has waited in the queue a client would see: no coordinated omission).
 *
 * autocannon's `overallRate` is not steady: each connection sends its share of a second as fast
 * as it is answered when the second begins, then waits for the next one. 200 req/s over 32
 * connections arrived as a burst of 200 requests once a second, and anything measured beside it
 * waited behind the burst (a 60 ms median, a 300 ms p99, for writes that take 10 ms alone).
 */
import * as http from "node:http"

export interface PacedRequest {
  readonly method: string
  readonly path: string
  readonly headers?: Record<string, string>
  readonly body?: string
}

/** What `measure` reads of a load's result (autocannon's names). */
export interface LoadResult {
  readonly requests: { readonly average: number; readonly total: number }
  readonly latency: { readonly mean: number; readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number }
  readonly errors: number
  readonly timeouts: number
  readonly non2xx: number
}

/** A paced load's result, with every latency (ms, in the order the answers came). */
export interface PacedResult extends LoadResult {
  readonly latencies: ReadonlyArray<number>
}

const timeoutMillis = 10_000

/** The p-th percentile of ascending `sorted` values (the nearest rank). */
export const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

/** `rate` requests a second for `seconds`, over at most `connections` kept-alive connections. */
export const paced = (options: {
  readonly base: string
  readonly rate: number
  readonly connections: number
  readonly seconds: number
  readonly request: (i: number) => PacedRequest
}): Promise<PacedResult> => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections })
  const latencies: Array<number> = []
  let errors = 0
  let timeouts = 0
  let non2xx = 0
  const total = Math.round(options.rate * options.seconds)
  const start = performance.now()

  const send = (i: number, due: number) =>
    new Promise<void>((resolve) => {
      const { body, headers, method, path } = options.request(i)
      let timedOut = false
      const request = http.request(`${options.base}${path}`, { agent, method, headers, timeout: timeoutMillis }, (response) => {
        response.resume()
        response.on("end", () => {
          latencies.push(performance.now() - due)
          if (response.statusCode === undefined || response.statusCode < 200 || response.statusCode > 299) non2xx++
          resolve()
        })
        response.on("error", () => {
          errors++
          resolve()
        })
      })
      request.on("timeout", () => {
        timedOut = true
        timeouts++
        request.destroy()
      })
      request.on("error", () => {
        if (!timedOut) errors++
        resolve()
      })
      request.end(body)
    })

  return new Promise<PacedResult>((resolve) => {
    const inFlight: Array<Promise<void>> = []
    let next = 0
    const tick = () => {
      // every request due by now starts now, timed from when it was due
      const now = performance.now()
      while (next < total && start + (next * 1000) / options.rate <= now) {
        inFlight.push(send(next, start + (next * 1000) / options.rate))
        next++
      }
      if (next < total) {
        setTimeout(tick, Math.max(0, start + (next * 1000) / options.rate - performance.now()))
        return
      }
      void Promise.all(inFlight).then(() => {
        agent.destroy()
        const sorted = [...latencies].sort((a, b) => a - b)
        const round = (n: number) => Math.round(n * 100) / 100
        resolve({
          requests: { average: latencies.length / options.seconds, total: latencies.length },
          latency: {
            mean: round(sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length)),
            p50: round(percentile(sorted, 50)),
            p90: round(percentile(sorted, 90)),
            p99: round(percentile(sorted, 99)),
            max: round(sorted.at(-1) ?? Number.NaN)
          },
          errors,
          timeouts,
          non2xx,
          latencies
        })
      })
    }
    tick()
  })
}
