/**
 * Conditional requests: the one owner of ETag, Cache-Control of validated answers, and 304.
 *
 * - A feature that knows its answer's validator returns a Representation (Representation.ts): its
 *   body, strong ETag, Cache-Control and, when kept, its compressed forms (a stored list page); or
 *   a Download (Ranges.ts): stored bytes with their ETag and Last-Modified.
 * - A route that declares `revalidate` (Domain/HttpHints.ts, or the documents' routes) gets a
 *   strong ETag of its body as the handler rendered it.
 * Either way `If-None-Match` naming the tag, compared weakly (RFC 9110, 13.1.2),
 * answers 304 without a body. A compressed answer carries the weak form `W/"…"` of the same tag
 * (Coding.ts), so either form matches; the 304 of an answer that would have been compressed
 * carries the form the client would have been sent.
 */
import { HttpServerResponse } from "effect/http"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { negotiate, varyOnEncoding } from "./Coding.ts"
import type { Piece } from "./Exchange.ts"
import { downloadOf, validatorsOf } from "./Ranges.ts"
import { representationOf } from "./Representation.ts"

/**
 * ETags by body: the documents' answers are the same bytes every time, so their (3 MB) page is
 * hashed once; a node's bytes are new on each answer and dropped with it.
 */
const etags = new WeakMap<Uint8Array, string>()

/** A strong ETag of `bytes`: their SHA-1, base64url. */
export const etagOf = (bytes: Uint8Array): string => {
  const known = etags.get(bytes)
  if (known !== undefined) return known
  const etag = `"${createHash("sha1").update(bytes).digest("base64url")}"`
  etags.set(bytes, etag)
  return etag
}

/**
 * Whether an `If-None-Match` value matches the current `etag`: `*`, or a list of entity tags one
 * of which is the same by weak comparison (`W/` ignored on both sides).
 */
export const noneMatchHolds = (header: string | undefined, etag: string): boolean => {
  if (header === undefined) return false
  if (header.trim() === "*") return true
  // the list's tags, found whole: whitespace may stand on either side of a comma (RFC 9110, 5.6.1),
  // and a comma may stand inside a tag's quotes
  const current = etag.replace(/^W\//, "")
  return [...header.matchAll(/(?:W\/)?("[^"]*")/g)].some((tag) => tag[1] === current)
}

const notModified = (response: HttpServerResponse.HttpServerResponse, headers: Record<string, string>) =>
  HttpServerResponse.empty({ status: 304, headers: { ...response.headers, ...headers } })

/** ETag, Cache-Control and 304, for Representations, Downloads and the routes that declare `revalidate`. */
export const conditional: Piece = (next) => (exchange) => {
  if (exchange.method !== "GET" && exchange.method !== "HEAD") return next(exchange)
  const revalidate = exchange.route?.revalidate
  return Effect.map(next(exchange), (response) => {
    if (response.status !== 200) return response
    const ifNoneMatch = exchange.request.headers["if-none-match"]
    const download = downloadOf(response)
    if (download !== undefined) {
      return noneMatchHolds(ifNoneMatch, download.etag) ? HttpServerResponse.empty({ status: 304, headers: validatorsOf(download) }) : response
    }
    const represented = representationOf(response)
    if (represented !== undefined) {
      if (!noneMatchHolds(ifNoneMatch, represented.etag)) return response
      const coded = represented.forms !== undefined && negotiate(exchange.request.headers["accept-encoding"]) !== "identity"
      return varyOnEncoding(notModified(response, { etag: coded ? `W/${represented.etag}` : represented.etag }))
    }
    if (revalidate === undefined || response.body._tag !== "Uint8Array") return response
    const headers = { etag: etagOf(response.body.body), "cache-control": revalidate }
    return noneMatchHolds(ifNoneMatch, headers.etag) ? notModified(response, headers) : HttpServerResponse.setHeaders(response, headers)
  })
}
