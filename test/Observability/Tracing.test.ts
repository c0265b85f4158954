/**
 * OpenTelemetry traces over OTLP/HTTP JSON (docs/operating.md, "Tracing"): a loopback collector receives
 * `POST /v1/traces`, the service is pointed at it with OTEL_EXPORTER_OTLP_ENDPOINT's setting
 * and a short export delay (OTEL_BSP_SCHEDULE_DELAY), and a `GET /nodes` that misses the list
 * cache must arrive as one trace: the request's server span, named by its route pattern, with
 * the SQL statements' spans under it. The exporter's own requests are not traced, and a
 * collector that is down costs the service nothing but its spans.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { freePort } from "../../src/Db/Embedded.ts"
import { cacheOf, eventually } from "../support/Eventually.ts"
import { expectStatus, getText, send } from "../support/Http.ts"
import { closeServer } from "../support/Loopback.ts"
import { type ConfigOverrides, Service } from "../support/Service.ts"

interface OtlpValue {
  readonly stringValue?: string
  readonly intValue?: number | string
}
interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: OtlpValue }>
}
interface Export {
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  readonly body: {
    readonly resourceSpans: ReadonlyArray<{
      readonly resource: { readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: OtlpValue }> }
      readonly scopeSpans: ReadonlyArray<{ readonly spans: ReadonlyArray<OtlpSpan> }>
    }>
  }
}

/** A loopback OTLP/HTTP collector that keeps every export it receives, and answers `200 {}` to anything. */
class Collector extends Context.Service<Collector, { readonly url: string; readonly exports: Array<Export> }>()("test/Collector") {
  static readonly layer = Layer.effect(
    Collector,
    Effect.acquireRelease(
      Effect.callback<{ readonly server: http.Server; readonly url: string; readonly exports: Array<Export> }>((resume) => {
        const exports: Array<Export> = []
        const server = http.createServer((req, res) => {
          let text = ""
          req.on("data", (chunk) => (text += chunk))
          req.on("end", () => {
            if (req.url === "/v1/traces") exports.push({ path: req.url, headers: req.headers, body: JSON.parse(text) })
            res.writeHead(200, { "content-type": "application/json" }).end("{}")
          })
        })
        server.listen(0, "127.0.0.1", () =>
          resume(Effect.succeed({ server, exports, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })))
      }),
      ({ server }) => Effect.promise(() => closeServer(server))
    )
  )
}

/** The image vendor's key, in a header of the deployment's choosing: it must not reach the collector. */
const vendorKey = "imgv-key-never-exported-8c2f"

const exportingTo = (endpoint: string): ConfigOverrides => (c) => ({
  ...c,
  vendorMode: "live",
  imageVendor: { baseUrl: Option.some(endpoint), apiKey: Option.some(Redacted.make(vendorKey)), apiKeyHeader: "X-Vendor-Key" },
  tracing: {
    tracesUrl: Option.some(`${endpoint}/v1/traces`),
    serviceName: "registry-under-test",
    headers: Redacted.make({ "x-collector-key": "k1" }),
    exportIntervalMillis: 100
  }
})

const spansOf = (exports: ReadonlyArray<Export>) => exports.flatMap((e) => e.body.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)))
const attribute = (span: OtlpSpan, key: string) => span.attributes.find((a) => a.key === key)?.value

/** OTLP's span kinds. */
const SERVER = 2
const CLIENT = 3

const withCollector = Layer.unwrap(Effect.map(Collector, (collector) => Service.layer(exportingTo(collector.url)))).pipe(
  Layer.provideMerge(Collector.layer)
)

layer(withCollector, { excludeTestServices: true })("traces exported to an OTLP collector", (it) => {
  it.effect("a GET /nodes that misses the cache: its SQL spans sit under its request's server span", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const collector = yield* Collector
      // the list cache is on (its listener is up), so the miss below is filled through the cache,
      // whose lookups run outside the asking request's context
      expect(yield* cacheOf(service, "/nodes?limit=1")).toBe("hit")
      const answer = yield* getText(service, "/nodes?limit=3&sort=downloads;desc")
      expectStatus(answer, 200, "GET /nodes")
      expect(answer.headers.get("x-cache")).toBe("miss")

      const isRequest = (s: OtlpSpan) => s.kind === SERVER && attribute(s, "url.query")?.stringValue === "limit=3&sort=downloads;desc"
      const { value: spans } = yield* eventually(
        Effect.sync(() => spansOf(collector.exports)),
        (spans) => {
          const request = spans.find(isRequest)
          return request !== undefined && spans.some((s) => s.traceId === request.traceId && s.name === "sql.execute")
        },
        10_000
      )
      const request = spans.find(isRequest)!
      expect(request.name).toBe("GET /nodes")
      expect(attribute(request, "http.route")?.stringValue).toBe("/nodes")
      expect(attribute(request, "http.request.method")?.stringValue).toBe("GET")
      expect(Number(attribute(request, "http.response.status_code")?.intValue)).toBe(200)

      const trace = new Map(spans.filter((s) => s.traceId === request.traceId).map((s) => [s.spanId, s]))
      const sql = [...trace.values()].filter((s) => s.name === "sql.execute")
      expect(sql.length).toBeGreaterThan(0)
      for (const statement of sql) {
        expect(statement.kind).toBe(CLIENT)
        expect(attribute(statement, "db.system.name")?.stringValue).toBe("postgresql")
        // up the parent chain, within the trace, to the request
        const chain: Array<string> = []
        let at: OtlpSpan | undefined = statement
        while (at !== undefined && at.spanId !== request.spanId) {
          chain.push(at.name)
          at = at.parentSpanId === undefined ? undefined : trace.get(at.parentSpanId)
        }
        expect(at?.spanId, `chain ${chain.join(" <- ")}`).toBe(request.spanId)
        expect(chain).toContain("PageCache.get")
      }

      const first = collector.exports[0]!
      expect(first.path).toBe("/v1/traces")
      expect(first.headers["content-type"]).toMatch(/^application\/json/)
      expect(first.headers["x-collector-key"]).toBe("k1")
      expect(first.body.resourceSpans[0]!.resource.attributes).toContainEqual({ key: "service.name", value: { stringValue: "registry-under-test" } })
      // the exporter's own requests are not traced: no span ever names the collector
      expect(spans.filter((s) => JSON.stringify(s.attributes).includes("/v1/traces"))).toEqual([])
    }))

  it.effect("a vendor call is a client span under its request, its key header redacted", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const collector = yield* Collector
      const token = yield* Effect.promise(() => service.token({ sub: "ann" }))
      // the collector plays the vendor here: it answers 200 {} to anything, which is no task
      const answer = yield* send(service, "POST", "/proxy/imagevendor/v1/ai/image-style-transfer", {
        token,
        body: { image: "https://example.com/a.png", reference_image: "https://example.com/b.png" }
      })
      expect(answer.status).toBe(502)
      const isVendorCall = (s: OtlpSpan) => s.kind === CLIENT && attribute(s, "url.path")?.stringValue === "/v1/ai/image-style-transfer"
      const { value: spans } = yield* eventually(Effect.sync(() => spansOf(collector.exports)), (spans) => spans.some(isVendorCall), 10_000)
      const call = spans.find(isVendorCall)!
      expect(call.name).toBe("http.client POST")
      expect(attribute(call, "http.request.header.x-vendor-key")?.stringValue).toBe("<redacted>")
      const request = spans.find((s) => s.spanId === call.parentSpanId)
      expect(request?.name).toBe("ImageVendor.start")
      expect(JSON.stringify(collector.exports.map((e) => e.body))).not.toContain(vendorKey)
    }))
})

const deadCollector = Layer.unwrap(Effect.map(Effect.promise(freePort), (port) => Service.layer(exportingTo(`http://127.0.0.1:${port}`))))

layer(deadCollector, { excludeTestServices: true })("traces with the collector down", (it) => {
  it.effect("requests are answered as usual, and keep being answered while exports fail", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (let i = 0; i < 5; i++) {
        expectStatus(yield* getText(service, `/nodes?limit=${i + 1}`), 200, "GET /nodes")
        yield* Effect.sleep("150 millis")
      }
      expectStatus(yield* getText(service, "/ready"), 200, "GET /ready")
    }))
})
