/**
 * Validators of the answers that a client rereads unchanged: a node (`GET /nodes/{nodeId}`), the
 * OpenAPI document and the reference page. Each gets a strong ETag of its bytes and its
 * Cache-Control, and If-None-Match naming that ETag is answered 304 without a body.
 *
 * The ETag is of the body as the handler rendered it: compression, wrapping this middleware,
 * sends a compressed body under the weak form `W/"…"` of the same tag, so that If-None-Match is
 * compared weakly (RFC 9110, 13.1.2) and either form of the tag matches.
 */
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { routeOf } from "../Routes.ts"

/**
 * The routes with validators and their Cache-Control. A node changes with any write, so a
 * client revalidates before each reuse; the documents change only with a deployment.
 */
const cacheControls: Readonly<Record<string, string>> = {
  "/nodes/:nodeId": "no-cache",
  "/openapi.json": "public, max-age=300",
  "/docs": "public, max-age=300"
}

/**
 * ETags by body: the documents' answers are built once and served as the same bytes every time,
 * so their (3 MB) page is hashed once; a node's bytes are new on each answer and dropped with it.
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

const opaqueTag = (etag: string) => etag.replace(/^W\//, "")

/**
 * Whether an `If-None-Match` value matches the current `etag`: `*`, or a list of entity tags one
 * of which is the same by weak comparison (`W/` ignored on both sides).
 */
export const noneMatchHolds = (header: string | undefined, etag: string): boolean => {
  if (header === undefined) return false
  if (header.trim() === "*") return true
  return (header.match(/(?:W\/)?"[^"]*"/g) ?? []).some((tag) => opaqueTag(tag) === opaqueTag(etag))
}

/** A whole 200 answer with its validators, or 304 with them (and the answer's other headers) instead. */
const validated = (request: HttpServerRequest.HttpServerRequest, cacheControl: string) =>
(response: HttpServerResponse.HttpServerResponse) => {
  if (response.status !== 200 || response.body._tag !== "Uint8Array") return response
  const headers = { etag: etagOf(response.body.body), "cache-control": cacheControl }
  return noneMatchHolds(request.headers["if-none-match"], headers.etag)
    ? HttpServerResponse.empty({ status: 304, headers: { ...response.headers, ...headers } })
    : HttpServerResponse.setHeaders(response, headers)
}

/** ETag, Cache-Control and 304 on the routes of `cacheControls`. */
export const Validators = HttpRouter.middleware((app) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const reads = request.method === "GET" || request.method === "HEAD"
    const route = reads ? routeOf(request.method, request.url.split("?")[0] ?? "/") : undefined
    const cacheControl = route === undefined ? undefined : cacheControls[route]
    return cacheControl === undefined ? app : Effect.map(app, validated(request, cacheControl))
  }), { global: true }
)
