/**
 * OpenTelemetry traces (README, "Tracing"): with `OTEL_EXPORTER_OTLP_ENDPOINT` set, every span
 * (one per request, per SQL statement, per vendor call, per traced service method) is sent in
 * batches as OTLP/HTTP JSON to `<endpoint>/v1/traces` by @effect/opentelemetry's exporter, which
 * needs no OpenTelemetry SDK. Unset, Effect keeps its own in-process tracer and nothing leaves.
 *
 * The exporter sends from a fiber of its own, so requests never wait for it, and it does not
 * trace its own requests. A collector that fails costs its spans, never the service: the
 * exporter pauses for a minute after a failed export, and the failure is logged once until an
 * export succeeds again.
 */
import { Headers, HttpClient, HttpMiddleware } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import { Effect, Layer, Option, Redacted } from "effect"
import { AppConfig } from "../Config.ts"
import { routeLabel } from "./MetricsEndpoint.ts"

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
  Layer.scopedDiscard(Effect.locallyScopedWith(Headers.currentRedactedNames, (names) => [...names, name.toLowerCase()]))

/** The OTLP tracer of the configuration, or none when no endpoint is set. */
export const TracingLive = Layer.unwrapEffect(Effect.map(AppConfig, ({ imageVendor, tracing }) =>
  Option.match(tracing.tracesUrl, {
    onNone: () => Layer.empty,
    onSome: (url) =>
      OtlpTracer.layer({
        url,
        resource: { serviceName: tracing.serviceName },
        headers: Redacted.value(tracing.headers),
        exportInterval: tracing.exportIntervalMillis
      }).pipe(
        Layer.provide([exporterClient(url), OtlpSerialization.layerJson]),
        Layer.merge(redactingHeader(imageVendor.apiKeyHeader))
      )
  })
))

/** Server spans named `<METHOD> <route pattern>`, as OpenTelemetry's HTTP conventions name them. */
export const namingServerSpans = HttpMiddleware.withSpanNameGenerator(
  (request) => `${request.method} ${routeLabel(request.method, request.url)}`
)
