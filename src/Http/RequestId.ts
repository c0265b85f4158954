/**
 * `X-Request-Id`: the id a client or a proxy gave the request, when it is sane, or a new one. It is
 * echoed on the answer and annotates every log line of the request.
 */
import { HttpServerResponse } from "effect/http"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import type { Piece } from "./Exchange.ts"

export const requestIdHeader = "x-request-id"

/** The annotation that carries the request id on every log line of the request. */
export const requestIdKey = "request_id"

/**
 * 1 to 128 visible ASCII characters: enough for the ids proxies and tracing tools make, and
 * nothing that could break a log line (no spaces, no control characters) or fill the logs.
 */
const sane = /^[\x21-\x7e]{1,128}$/

/** The request's id: `given` when sane, else a random UUID (v4, lowercase). */
export const requestIdOf = (given: string | undefined): string =>
  given !== undefined && sane.test(given) ? given : randomUUID()

/** The request id: on the exchange, on every log line written while it is answered, and on the answer. */
export const requestIds: Piece = (next) => (exchange) => {
  const id = requestIdOf(exchange.request.headers[requestIdHeader])
  exchange.id = id
  return Effect.map(Effect.annotateLogs(next(exchange), requestIdKey, id), (response) =>
    HttpServerResponse.setHeader(response, requestIdHeader, id))
}
