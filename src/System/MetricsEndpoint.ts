/**
 * Where `/metrics` is served (docs/operating.md, "Metrics"):
 * - `METRICS_PORT` set: on a server of its own (`METRICS_HOST`, else `HOST`) that serves nothing
 *   else, asking for `METRICS_TOKEN` when that is set too;
 * - else `METRICS_TOKEN` set: on the main port, to `Authorization: Bearer <METRICS_TOKEN>` only;
 * - neither: nowhere (`/metrics` is an unknown path, 404).
 * It is not part of the Api: the public document and the typed client do not list it.
 */
import { HttpMiddleware, HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { ServeError } from "effect/http/HttpServerError"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer, Option, Redacted } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import * as http from "node:http"
import { AppConfig } from "../Config.ts"
import { NotFound, Unauthorized } from "../Domain/ApiErrors.ts"
import { errorResponse } from "../Http/Failures.ts"
import type { ExtraRoute } from "../Http/Routes.ts"
import { exposition, processMetrics } from "../Observability/Metrics.ts"
import { contentType } from "../Observability/Prometheus.ts"

export const metricsPath = "/metrics"

const digest = (text: string) => createHash("sha256").update(text).digest()

/** Whether the request carries `Bearer <token>`, compared in constant time. */
const bearerMatches = (request: HttpServerRequest.HttpServerRequest, token: Redacted.Redacted) => {
  const match = /^bearer\s+(\S+)\s*$/i.exec(request.headers["authorization"] ?? "")
  // digests of equal length, so that neither the token's content nor its length shows in the timing
  return match !== null && timingSafeEqual(digest(match[1]!), digest(Redacted.value(token)))
}

const unauthorized = errorResponse(
  new Unauthorized({ message: "Metrics need Authorization: Bearer <METRICS_TOKEN>" }),
  { "www-authenticate": "Bearer" }
)

/** The answer to a scrape: the exposition, when the request carries the token that is set. */
const scrape = (token: Option.Option<Redacted.Redacted>) =>
  Effect.map(processMetrics, (processFamilies) =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      Option.isSome(token) && !bearerMatches(request, token.value)
        ? Effect.succeed(unauthorized)
        : Effect.map(exposition(processFamilies), (text) => HttpServerResponse.text(text, { contentType }))))

/** `/metrics` on the main port, beside the Api's routes. */
const onMainPort = (token: Redacted.Redacted) =>
  HttpRouter.use((router) => Effect.flatMap(scrape(Option.some(token)), (answer) => router.add("GET", metricsPath, answer)))

const notFound = errorResponse(new NotFound({ message: "This port serves GET /metrics only" }))

/**
 * A server of its own that serves `/metrics` and nothing else; scrapes are not traced. Not an
 * `HttpRouter`: `HttpRouter.serve` builds its router through the memo map of the layer it runs in,
 * so inside the main app's layer it would get (and serve) the main app's router.
 */
const onOwnPort = (port: number, host: string, token: Option.Option<Redacted.Redacted>) =>
  Layer.unwrap(Effect.map(scrape(token), (answer) =>
    HttpServer.serve(Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      request.method === "GET" && request.url.split("?", 1)[0] === metricsPath ? answer : Effect.succeed(notFound))).pipe(
        Layer.provide(Layer.succeed(HttpMiddleware.TracerDisabledWhen, () => true)),
        Layer.provide(NodeHttpServer.layer(() => http.createServer(), { port, host }))
      )))

/** `/metrics` where the configuration puts it, or nowhere. */
export const MetricsLive = Layer.unwrap(Effect.map(AppConfig, ({ metrics }): Layer.Layer<never, ServeError, HttpRouter.HttpRouter> =>
  Option.isSome(metrics.port)
    ? onOwnPort(metrics.port.value, metrics.host, metrics.token)
    : Option.isSome(metrics.token)
    ? onMainPort(metrics.token.value)
    : Layer.empty
))

/** `/metrics` in the route table: served on the main port only when configured so (`onMainPort`). */
export const metricsRoute: ExtraRoute = { method: "GET", pattern: metricsPath }
