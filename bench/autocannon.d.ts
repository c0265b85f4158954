// The part of autocannon's programmatic API the benchmark uses (the package ships no types).
declare module "autocannon" {
  namespace autocannon {
    interface Histogram {
      readonly average: number
      readonly mean: number
      readonly stddev: number
      readonly min: number
      readonly max: number
      readonly p50: number
      readonly p90: number
      readonly p99: number
    }
    interface Result {
      /** `total`: requests completed */
      readonly requests: Histogram & { readonly total: number; readonly sent: number }
      readonly latency: Histogram
      readonly throughput: Histogram
      readonly errors: number
      readonly timeouts: number
      readonly non2xx: number
      readonly duration: number
    }
    interface Request {
      method?: string
      path?: string
      headers?: Record<string, string>
      body?: string
    }
    interface Options {
      readonly url: string
      readonly connections?: number
      readonly duration?: number
      readonly timeout?: number
      /** requests per second over all connections (unlimited when absent) */
      readonly overallRate?: number
      readonly requests?: ReadonlyArray<{
        readonly method?: string
        readonly path?: string
        readonly headers?: Record<string, string>
        readonly setupRequest?: (request: Request, context: Record<string, unknown>) => Request
      }>
    }
    interface Instance extends PromiseLike<Result> {
      stop(): void
    }
  }
  function autocannon(options: autocannon.Options): autocannon.Instance
  export default autocannon
}
