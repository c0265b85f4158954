/**
 * `/metrics` over real HTTP (docs/operating.md, "Metrics"): behind METRICS_TOKEN on the main port (401
 * without it, the exposition with it), on METRICS_PORT alone, and nowhere when neither is set.
 * Every line of the exposition is read by the strict reader of test/support/Prometheus.ts, and
 * the families move as the requests made say: requests by route pattern, the list cache's hits
 * and misses, a vendor's calls by outcome, uploaded bytes, the pool, the process. Every family
 * served is in docs/metrics.md with its type and labels, and every one there is served; only
 * counters end in `_total`, and no counter goes down between two scrapes.
 *
 * Effect's metric registry is global to the test process, so counts are compared before and after.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { freePort } from "../../src/Db/Embedded.ts"
import { contentType } from "../../src/Observability/Prometheus.ts"
import { expectError, expectStatus, getText, send, sendText } from "../support/Http.ts"
import { paths, styleBody, tokenOf, withFakeVendor } from "../support/ImageProxy.ts"
import { FakeImageVendor } from "../support/FakeImageVendor.ts"
import { mediaUploadTarget } from "../support/MediaUpload.ts"
import { type ParsedFamily, parseExposition, valueOf } from "../support/Prometheus.ts"
import { type Running, Service } from "../support/Service.ts"
import * as fs from "node:fs"
import * as path from "node:path"

const metricsToken = "scrape-secret-5d1c9e"

/** The metrics of `service`'s main port, parsed; the scrape must succeed. */
const scrape = (service: Running) =>
  Effect.map(getText(service, "/metrics", { token: metricsToken }), (reply) => {
    expectStatus(reply, 200, "GET /metrics")
    expect(reply.headers.get("content-type")).toBe(contentType)
    return parseExposition(reply.text)
  })

interface DocumentedFamily {
  readonly type: string
  readonly labels: ReadonlyArray<string>
}

/** The rows of docs/metrics.md's tables: `| \`name\` | type | \`label\`, ... | meaning |`. */
const documentedFamilies = (): Map<string, DocumentedFamily> => {
  const text = fs.readFileSync(path.join(import.meta.dirname, "../../docs/metrics.md"), "utf8")
  const rows = text.matchAll(/^\| `([a-zA-Z_:][a-zA-Z0-9_:]*)` \| (counter|gauge|histogram) \|([^|]*)\|/gm)
  return new Map([...rows].map(([, name, type, labels]) => [name!, { type: type!, labels: [...labels!.matchAll(/`([a-zA-Z_]\w*)`/g)].map((m) => m[1]!) }]))
}

/** Every sample of a counter, and a histogram's buckets and counts (counters too), by name and labels. */
const countedSamples = (families: Map<string, ParsedFamily>) =>
  new Map(
    [...families.values()].flatMap((family) =>
      family.samples
        .filter((s) => family.type === "counter" || (family.type === "histogram" && !s.name.endsWith("_sum")))
        .map((s) => [`${s.name}${JSON.stringify(Object.entries(s.labels).sort())}`, s.value] as const)
    )
  )

layer(withFakeVendor((c) => ({ ...c, metrics: { ...c.metrics, port: Option.none(), token: Option.some(Redacted.make(metricsToken)) } })), {
  excludeTestServices: true
})("/metrics behind METRICS_TOKEN on the main port", (it) => {
  it.effect("without the token, or with another, it is 401 ErrorResponse asking for a bearer token", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const token of [undefined, "wrong", `${metricsToken}x`]) {
        const answer = yield* send(service, "GET", "/metrics", { token })
        expectError(answer, 401, "unauthorized")
        expect(answer.headers.get("www-authenticate")).toBe("Bearer")
      }
      const basic = yield* sendText(service, "GET", "/metrics", { headers: { authorization: `Basic ${btoa(`x:${metricsToken}`)}` } })
      expect(basic.status).toBe(401)
    }))

  it.effect("is not in the public Api document", () =>
    Effect.gen(function*() {
      const document = yield* getText(yield* Service, "/openapi.json")
      expect(JSON.parse(document.text).paths["/metrics"]).toBeUndefined()
    }))

  it.effect("counts requests under their route pattern, method and status, with a latency histogram", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const labels = { route: "/nodes/:nodeId", method: "GET", status: "404" }
      const before = yield* scrape(service)
      expectStatus(yield* getText(service, "/nodes/no-such-node-1"), 404, "unknown node")
      expectStatus(yield* getText(service, "/nodes/no-such-node-2"), 404, "unknown node")
      expectStatus(yield* getText(service, "/no/such/path"), 404, "unknown path")
      const after = yield* scrape(service)
      expect(valueOf(after, "http_requests_total", labels) - valueOf(before, "http_requests_total", labels)).toBe(2)
      const count = (f: typeof after) => valueOf(f, "http_request_duration_seconds", labels, "http_request_duration_seconds_count")
      expect(count(after) - count(before)).toBe(2)
      expect(after.get("http_request_duration_seconds")!.type).toBe("histogram")
      // raw URLs never become labels
      const routes = new Set(after.get("http_requests_total")!.samples.map((s) => s.labels.route))
      expect([...routes].filter((r) => r!.includes("no-such"))).toEqual([])
      expect(valueOf(after, "http_requests_total", { route: "unmatched", status: "404" })).toBeGreaterThan(0)
      // the scrapes themselves count under their own path
      expect(valueOf(after, "http_requests_total", { route: "/metrics", status: "200" })).toBeGreaterThan(0)
    }))

  it.effect("GET /nodes twice: one list-cache miss, then one hit (and the form-factor counter)", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const before = yield* scrape(service)
      // a query of its own: its page is in no cache yet
      const first = yield* getText(service, "/nodes?limit=7&form_factor=git-linux")
      expect(first.headers.get("x-cache")).toBe("miss")
      const second = yield* getText(service, "/nodes?limit=7&form_factor=git-linux")
      expect(second.headers.get("x-cache")).toBe("hit")
      const after = yield* scrape(service)
      const delta = (family: string, labels: Record<string, string>) => valueOf(after, family, labels) - valueOf(before, family, labels)
      expect(delta("list_cache_requests_total", { result: "miss" })).toBe(1)
      expect(delta("list_cache_requests_total", { result: "hit" })).toBe(1)
      expect(delta("nodes_list_requests_total", { form_factor: "git-linux" })).toBe(2)
    }))

  it.effect("a vendor call counts by outcome, with its latency", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeImageVendor
      fake.reset()
      const token = yield* tokenOf(service, "ann")
      const before = yield* scrape(service)
      expectStatus(yield* send(service, "POST", paths.style, { token, body: styleBody }), 200, "style transfer")
      fake.behave({ kind: "status", status: 503 })
      expectError(yield* send(service, "POST", paths.style, { token, body: styleBody }), 502, "upstream_error")
      fake.behave({ kind: "reset" })
      expect((yield* send(service, "POST", paths.style, { token, body: styleBody })).status).toBe(502)
      const after = yield* scrape(service)
      const delta = (outcome: string) => {
        const labels = { vendor: "imagevendor", outcome }
        return valueOf(after, "vendor_calls_total", labels) - valueOf(before, "vendor_calls_total", labels)
      }
      expect([delta("success"), delta("http_error"), delta("network_error")]).toEqual([1, 1, 1])
      const count = (f: typeof after) =>
        valueOf(f, "vendor_call_duration_seconds", { vendor: "imagevendor", outcome: "success" }, "vendor_call_duration_seconds_count")
      expect(count(after) - count(before)).toBe(1)
    }))

  it.effect("an upload counts its bytes", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const target = yield* mediaUploadTarget(service, "ann", "clip.bin")
      const before = yield* scrape(service)
      const uploaded = yield* Effect.promise(() =>
        fetch(target, { method: "PUT", body: new Uint8Array(12_345), headers: { "content-type": "application/octet-stream" } })
      )
      expect(uploaded.status).toBeLessThan(300)
      const after = yield* scrape(service)
      expect(valueOf(after, "uploaded_bytes_total", { kind: "media" }) - valueOf(before, "uploaded_bytes_total", { kind: "media" })).toBe(12_345)
    }))

  it.effect("every family served is documented with its type and labels; only counters end in _total; counters never go down", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeImageVendor
      fake.reset()
      const token = yield* tokenOf(service, "ann")
      // what records each family of the registry at least once: a page of GET /nodes, a
      // compressed answer, a vendor call, an upload
      expectStatus(yield* getText(service, "/nodes?limit=2&form_factor=git-windows"), 200, "GET /nodes")
      const compressed = yield* sendText(service, "GET", "/openapi.json", { headers: { "accept-encoding": "gzip" } })
      expect(compressed.headers.get("content-encoding")).toBe("gzip")
      expectStatus(yield* send(service, "POST", paths.style, { token, body: styleBody }), 200, "style transfer")
      const target = yield* mediaUploadTarget(service, "ann", "docs.bin")
      expect((yield* Effect.promise(() => fetch(target, { method: "PUT", body: new Uint8Array(10) }))).status).toBeLessThan(300)

      const first = yield* scrape(service)
      expectStatus(yield* getText(service, "/nodes?limit=2&form_factor=git-windows"), 200, "GET /nodes")
      expectStatus(yield* getText(service, "/no/such/path"), 404, "unknown path")
      const second = yield* scrape(service)

      const documented = documentedFamilies()
      expect(documented.size, "rows read from docs/metrics.md").toBeGreaterThan(20)
      for (const family of second.values()) {
        const doc = documented.get(family.name)
        expect(doc, `${family.name} is served but not in docs/metrics.md`).toBeDefined()
        expect(family.type, `${family.name}'s type`).toBe(doc!.type)
        if (family.type !== "counter") expect(family.name, `${family.name} is a ${family.type}`).not.toMatch(/_total$/)
        for (const sample of family.samples) {
          const labels = Object.keys(sample.labels).filter((l) => !(sample.name.endsWith("_bucket") && l === "le"))
          expect(labels.sort(), `${sample.name}'s labels`).toEqual([...doc!.labels].sort())
        }
      }
      // a documented family that is never served misleads as much as one served undocumented
      const served = [...documented.keys()].filter((name) => second.has(name) || (name === "process_open_fds" && process.platform !== "linux"))
      expect(served).toEqual([...documented.keys()])

      const before = countedSamples(first)
      for (const [sample, value] of countedSamples(second)) {
        expect(value, `${sample} between two scrapes`).toBeGreaterThanOrEqual(before.get(sample) ?? 0)
      }
      expect(valueOf(second, "nodes_list_requests_total", { form_factor: "git-windows" }))
        .toBe(valueOf(first, "nodes_list_requests_total", { form_factor: "git-windows" }) + 1)
    }))

  it.effect("the pool's and the process's gauges have sane values", () =>
    Effect.gen(function*() {
      const metrics = yield* scrape(yield* Service)
      expect(valueOf(metrics, "db_pool_max_connections")).toBeGreaterThanOrEqual(20)
      expect(valueOf(metrics, "db_pool_connections", { state: "idle" })).toBeGreaterThanOrEqual(1)
      expect(valueOf(metrics, "db_pool_connections", { state: "in_use" })).toBeGreaterThanOrEqual(0)
      expect(metrics.get("db_pool_waiting")!.type).toBe("gauge")
      expect(valueOf(metrics, "process_resident_memory_bytes")).toBeGreaterThan(10 * 1024 * 1024)
      expect(valueOf(metrics, "nodejs_heap_size_used_bytes")).toBeGreaterThan(0)
      expect(valueOf(metrics, "process_cpu_seconds_total")).toBeGreaterThan(0)
      expect(metrics.get("process_cpu_seconds_total")!.type).toBe("counter")
      const started = valueOf(metrics, "process_start_time_seconds")
      expect(started).toBeLessThan(Date.now() / 1000)
      expect(started).toBeGreaterThan(Date.now() / 1000 - 3600)
      expect(valueOf(metrics, "process_open_fds")).toBeGreaterThan(3)
      expect(valueOf(metrics, "nodejs_eventloop_active_seconds_total")).toBeGreaterThan(0)
      expect(metrics.has("nodejs_eventloop_delay_p99_seconds")).toBe(true)
      for (const family of metrics.values()) expect(family.help, family.name).toBeTruthy()
    }))
})

/** The service with `/metrics` on a port of its own (no token), and that port. */
const onOwnPort = Layer.unwrap(Effect.map(Effect.promise(freePort), (port) =>
  Layer.merge(
    Service.layer((c) => ({ ...c, metrics: { port: Option.some(port), host: "127.0.0.1", token: Option.none() } })),
    Layer.succeed(MetricsPort, port)
  )))

class MetricsPort extends Context.Service<MetricsPort, number>()("test/MetricsPort") {}

layer(onOwnPort, { excludeTestServices: true })("/metrics on METRICS_PORT", (it) => {
  it.effect("its own port serves the exposition and nothing else; the main port has no /metrics", () =>
    Effect.gen(function*() {
      const port = yield* MetricsPort
      const service = yield* Service
      const scraped = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/metrics`).then(async (r) => ({ status: r.status, type: r.headers.get("content-type"), text: await r.text() })))
      expect(scraped.status).toBe(200)
      expect(scraped.type).toBe(contentType)
      expect(parseExposition(scraped.text).has("http_requests_total")).toBe(true)

      const other = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/nodes`).then(async (r) => ({ status: r.status, body: (await r.json()) as { error: string } })))
      expect(other.status).toBe(404)
      expect(other.body.error).toBe("not_found")

      expectError(yield* send(service, "GET", "/metrics"), 404, "not_found")
    }))
})

layer(Service.layer((c) => ({ ...c, metrics: { ...c.metrics, port: Option.none(), token: Option.none() } })), { excludeTestServices: true })(
  "/metrics with neither METRICS_PORT nor METRICS_TOKEN",
  (it) => {
    it.effect("is an unknown path", () =>
      Effect.gen(function*() {
        expectError(yield* send(yield* Service, "GET", "/metrics", { token: metricsToken }), 404, "not_found")
      }))
  }
)
