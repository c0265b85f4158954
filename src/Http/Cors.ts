/**
 * Cross-origin calls from browsers (`CORS_ORIGINS`, Origins.ts). Preflights of a declared path
 * are answered here with the methods that path declares (Routes.ts); every other answer, errors
 * and streams included, gets its CORS headers as it leaves (the piece sits outside the error
 * funnel, Edge.ts).
 *
 * With `*`, `Access-Control-Allow-Origin: *` and no credentials: the API authenticates with
 * headers a page sets itself (a bearer token, `X-API-KEY`), never with cookies, so a page
 * elsewhere can use only a token it already holds. Authorization stays an allowed header then,
 * and every method stays open: there is no ambient credential for another site to ride on.
 */
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import { Effect } from "effect"
import { Forbidden } from "../Domain/ApiErrors.ts"
import type { Piece } from "./Exchange.ts"
import { errorResponse } from "./Failures.ts"
import type { CorsOrigins } from "../Config.ts"
import type { RouteTable } from "./Routes.ts"

/** The request headers a page may send: those the API reads, and a request id for tracing. */
export const allowedRequestHeaders = ["Authorization", "Content-Type", "Idempotency-Key", "X-API-KEY", "X-Request-Id"]

/** The answer headers a page may read besides the always-readable ones. */
export const exposedHeaders = ["ETag", "Retry-After", "X-Request-Id", "Location", "Content-Disposition", "Idempotent-Replayed", "Repr-Digest", "RateLimit-Policy", "RateLimit"]

/** How long a browser may reuse a preflight: two hours, Chromium's cap; routes change only with a deployment. */
export const preflightMaxAgeSeconds = 7200

const isOff = (origins: CorsOrigins) => origins !== "*" && origins.size === 0

/** The `Access-Control-Allow-Origin` a request from `origin` gets; undefined when none. */
const allowedOrigin = (origins: CorsOrigins, origin: string | undefined) =>
  origins === "*" ? "*" : origin !== undefined && origins.has(origin) ? origin : undefined

/** Adds `Origin` to the answer's `Vary`, keeping what is there (compression's `Accept-Encoding`). */
const varyOnOrigin = (response: HttpServerResponse.HttpServerResponse) => {
  const vary = response.headers["vary"]
  if (vary !== undefined && /(^|,)\s*origin\s*(,|$)/i.test(vary)) return response
  return HttpServerResponse.setHeader(response, "vary", vary === undefined || vary.trim() === "" ? "Origin" : `${vary}, Origin`)
}

/**
 * The CORS headers of an answer. With a list of origins the answer depends on `Origin`, so it
 * says so with `Vary` even when it allows none (a cache must not hand it to an allowed origin);
 * with `*` it is the same for every origin.
 */
const withCors = (origins: CorsOrigins, origin: string | undefined) => (response: HttpServerResponse.HttpServerResponse) => {
  const allowed = allowedOrigin(origins, origin)
  const varied = origins === "*" ? response : varyOnOrigin(response)
  return allowed === undefined ? varied : HttpServerResponse.setHeaders(varied, {
    "access-control-allow-origin": allowed,
    "access-control-expose-headers": exposedHeaders.join(", ")
  })
}

const isPreflight = (request: HttpServerRequest.HttpServerRequest) =>
  request.method === "OPTIONS" && request.headers["origin"] !== undefined &&
  request.headers["access-control-request-method"] !== undefined

/**
 * The answer to a preflight of a declared path: 204 with what the path takes for an allowed
 * origin; 403 ErrorResponse for another, which the browser refuses all the same but which tells
 * the developer looking at the network panel why.
 */
const preflight = (origins: CorsOrigins, origin: string, methods: ReadonlyArray<string>) =>
  allowedOrigin(origins, origin) === undefined
    ? withCors(origins, origin)(errorResponse(new Forbidden({ message: `Origin ${origin} may not call this API (CORS_ORIGINS)` })))
    : withCors(origins, origin)(HttpServerResponse.empty({
      status: 204,
      headers: {
        "access-control-allow-methods": methods.join(", "),
        "access-control-allow-headers": allowedRequestHeaders.join(", "),
        "access-control-max-age": String(preflightMaxAgeSeconds)
      }
    }))

/** CORS on every answer when `CORS_ORIGINS` is set; nothing at all otherwise (the edge leaves the piece out). */
export const cors = (origins: CorsOrigins, table: RouteTable): Piece | undefined =>
  isOff(origins) ? undefined : (next) => (exchange) => {
    const origin = exchange.request.headers["origin"]
    if (isPreflight(exchange.request)) {
      const methods = table.allowedMethods(exchange.request.url)
      if (methods.length > 0) return Effect.succeed(preflight(origins, origin!, methods))
    }
    return Effect.map(next(exchange), withCors(origins, origin))
  }
