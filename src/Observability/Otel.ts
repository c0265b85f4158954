/**
 * OpenTelemetry traces (docs/operating.md, "Tracing"): with `OTEL_EXPORTER_OTLP_ENDPOINT` set, every span
 * (one per request, per SQL statement, per vendor call, per traced service method) is sent in
 * batches as OTLP/HTTP JSON to `<endpoint>/v1/traces` by Effect's own OTLP exporter
 * (effect/observability), which needs no OpenTelemetry SDK. Unset, tracing is off
 * (`References.TracerEnabled`): no span is made, and nothing leaves.
 *
 * The exporter sends from a fiber of its own, so requests never wait for it, and it does not
 * trace its own requests. A collector that fails costs its spans, never the service: the
 * exporter pauses for a minute after a failed export, and the failure is logged once until an
 * export succeeds again.
 */
import { Headers, HttpClient, HttpMiddleware } from "effect/http"
import { NodeHttpClient } from "@effect/platform-node"
import * as OtlpExporter from "effect/observability/OtlpExporter"
import * as OtlpSerialization from "effect/observability/OtlpSerialization"
import * as OtlpTracer from "effect/observability/OtlpTracer"
import { Effect, Layer, Option, Redacted, References, Tracer } from "effect"
import { constTrue } from "effect/Function"
import { AppConfig } from "../Config.ts"

/** The exporter's HTTP client, which reports a failing collector once per outage. */
const exporterClient = (url: string) =>
  Layer.effect(
    HttpClient.HttpClient,
    Effect.map(HttpClient.HttpClient, (client) => {
      let failing = false
      const failed = (reason: string) =>
        Effect.suspend(() => {
          if (failing) return Effect.void
          failing = true
          return Effect.logWarning(`trace export to ${url} failed (${reason}); spans are dropped until it succeeds again`)
        })
      return HttpClient.transform(client, (call) =>
        call.pipe(
          Effect.tapError((e) => failed(e.message)),
          Effect.tap((response) =>
            response.status >= 200 && response.status < 300
              ? Effect.sync(() => void (failing = false))
              : failed(`the collector answered ${response.status}`)
          )
        ))
    })
  ).pipe(Layer.provide(NodeHttpClient.layerUndici))

/**
 * Spans record request headers with the secret ones redacted (authorization, cookies,
 * x-api-key); the image vendor's key travels in a header whose name is a setting, redacted too.
 */
const redactingHeader = (name: string) =>
  Layer.effect(Headers.CurrentRedactedNames, Effect.map(Headers.CurrentRedactedNames, (names) => [...names, name.toLowerCase()]))

/** What Effect 3 named the HTTP client's spans, and still the spans' names here. */
const clientSpanPrefix = "http.client "

/**
 * HTTP spans as Effect 3 made them: client spans named `http.client <METHOD>` (Effect 4's default
 * is the bare method), and client and server spans recording the request's and the answer's
 * headers, the secret ones redacted (Effect 4 records none unless its header filters say so).
 */
const httpSpansAsBefore = Layer.mergeAll(
  Layer.succeed(HttpClient.SpanNameGenerator, (request) => `${clientSpanPrefix}${request.method}`),
  Layer.succeed(HttpClient.TracerHeaderFilter, constTrue),
  Layer.succeed(HttpMiddleware.TracerHeaderFilter, constTrue)
)

/**
 * SQL statements' spans keep their name `sql.execute`. Effect 4's SQL client names them after
 * the database (`db.namespace`, effect/sql/Statement.ts `spanName`), and @effect/sql-pg 4 always
 * sets that attribute last, so no client option keeps the name; the statement's span is the only
 * client span here that is not the HTTP client's.
 */
const namingSqlSpans = (tracer: Tracer.Tracer): Tracer.Tracer =>
  Tracer.make({
    span: (options) =>
      tracer.span(options.kind === "client" && !options.name.startsWith(clientSpanPrefix) ? { ...options, name: "sql.execute" } : options),
    context: tracer.context
  })

/** The OTLP tracer of the configuration (OtlpTracer.layer, its spans named as above), or none when no endpoint is set. */
export const TracingLive = Layer.unwrap(Effect.map(AppConfig, ({ edgeOff, imageVendor, tracing }) =>
  Option.match(edgeOff.has("spans") ? Option.none() : tracing.tracesUrl, {
    // nothing would see a span: none is made (the server's, the statements', the methods')
    onNone: (): Layer.Layer<never> => Layer.succeed(References.TracerEnabled, false),
    onSome: (url) =>
      Layer.effect(
        Tracer.Tracer,
        Effect.map(
          OtlpTracer.make({
            url,
            resource: { serviceName: tracing.serviceName },
            headers: Redacted.value(tracing.headers),
            exportInterval: tracing.exportIntervalMillis
          }),
          namingSqlSpans
        )
      ).pipe(
        Layer.provideMerge(OtlpExporter.layerFlusher),
        Layer.provide([exporterClient(url), OtlpSerialization.layerJson]),
        Layer.merge(redactingHeader(imageVendor.apiKeyHeader)),
        Layer.merge(httpSpansAsBefore)
      )
  })
))
