/**
 * `detail` on the media proxy's error answers: an ErrorResponse answered on a route under
 * `/proxy/` (or on a path there that has no route) also carries `detail`, the message again.
 *
 * Why: the host application's music node reads an error's `detail`, not its `message`
 * (comfy_api_nodes/nodes_sonilo.py, `_extract_error_message`: a string, or an object's
 * `message`), and showed `Sonilo API error (401): {}`. Its image nodes print the whole body
 * (util/client.py, `_friendly_http_message`), so one more field costs them nothing. Elsewhere the
 * interface's `{error, message}` stays exactly as it is: no client of those paths reads `detail`.
 *
 * Inside the coding (it sees the body as rendered, never compressed), right above the funnel, so
 * that every ErrorResponse the funnel and the body checks below it answer gets it.
 */
import { HttpServerResponse } from "effect/http"
import { Effect } from "effect"
import type { Exchange, Piece } from "./Exchange.ts"

/** The media proxy's paths, as the interface prefixes them (and the vendors' words, Compat/Aliases.ts). */
const proxyPrefix = "/proxy/"

const decoder = new TextDecoder()
const encoder = new TextEncoder()

/** The request is the media proxy's: its route is, or it has none and its path is under the prefix. */
const isProxy = (exchange: Exchange) =>
  exchange.route === undefined ? exchange.path.startsWith(proxyPrefix) : exchange.route.pattern.startsWith(proxyPrefix)

/** `{error, message}` with `detail` added after them; undefined for any other body. */
const withDetail = (bytes: Uint8Array): Uint8Array | undefined => {
  let body: unknown
  try {
    body = JSON.parse(decoder.decode(bytes))
  } catch {
    return undefined
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) return undefined
  const { error, message } = body as Record<string, unknown>
  if (typeof error !== "string" || typeof message !== "string" || "detail" in body) return undefined
  return encoder.encode(JSON.stringify({ ...body, detail: message }))
}

export const errorDetail: Piece = (next) => (exchange) => {
  if (!isProxy(exchange)) return next(exchange)
  return Effect.map(next(exchange), (response) => {
    const body = response.body
    if (response.status < 400 || body._tag !== "Uint8Array" || !body.contentType.startsWith("application/json")) return response
    const detailed = withDetail(body.body)
    if (detailed === undefined) return response
    return HttpServerResponse.uint8Array(detailed, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
      cookies: response.cookies,
      contentType: body.contentType
    })
  })
}
