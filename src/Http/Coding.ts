/**
 * Content coding of answers by `Accept-Encoding`, its one owner: br or gzip for JSON and HTML
 * bodies of 1 KiB or more. Streams (the music proxy's NDJSON, which must leave event by event, and
 * archives) and binary types are sent as they are. A Representation with kept forms (a stored list
 * page, Catalog/PageCache.ts) is sent in the form the request accepts, compressed once per form;
 * the answers of a route whose body never changes (the documents) are compressed once, at the
 * highest levels. `negotiate` is this service's own: `negotiator` gives identity the lowest weight
 * listed rather than full weight when the header does not name it, and does not know `x-gzip`.
 *
 * Levels are chosen for the CPU of one request (measured on a 200 KB page of 500 nodes: br
 * quality 4 about 3 ms, gzip 6 about 2 ms; br quality 11 over a second). The answers computed once
 * (`/docs`, `/openapi.json`) are compressed once, at the highest levels, on their first request.
 */
import { HttpBody, HttpServerResponse } from "effect/http"
import { Deferred, Effect, Metric } from "effect"
import { promisify } from "node:util"
import * as zlib from "node:zlib"
import { type EncodedForms, representationOf } from "./Representation.ts"
import type { Piece } from "./Exchange.ts"
import type { Entry } from "./Routes.ts"

export type Coding = "br" | "gzip" | "identity"

/** Bodies smaller than this are sent as they are: the coding's framing would eat the gain. */
export const minCompressedBytes = 1024

/** One entry of `Accept-Encoding`, its coding lower-cased; `undefined` when malformed. */
const parseEntry = (entry: string): { readonly coding: string; readonly q: number } | undefined => {
  const [name = "", ...params] = entry.split(";").map((part) => part.trim())
  if (name === "") return undefined
  let q = 1
  for (const param of params) {
    const [key = "", value = ""] = param.split("=").map((part) => part.trim())
    if (key.toLowerCase() !== "q") continue
    if (!/^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(value)) return undefined
    q = Number(value)
  }
  return { coding: name.toLowerCase() === "x-gzip" ? "gzip" : name.toLowerCase(), q }
}

/**
 * The coding to send for `header` (RFC 9110, 12.5.3): the acceptable one of highest weight,
 * br before gzip before identity at equal weight. `*` weighs the codings not named; identity is
 * acceptable unless excluded. No header at all, or nothing acceptable, is identity (the RFC's
 * advice for an answer no coding suits).
 */
export const negotiate = (header: string | undefined): Coding => {
  if (header === undefined) return "identity"
  const weights = new Map<string, number>()
  for (const entry of header.split(",")) {
    const parsed = parseEntry(entry)
    if (parsed !== undefined) weights.set(parsed.coding, parsed.q)
  }
  const star = weights.get("*")
  const weightOf = (coding: Coding) => weights.get(coding) ?? star ?? (coding === "identity" ? 1 : 0)
  let best: Coding = "identity"
  let bestWeight = 0
  for (const coding of ["br", "gzip", "identity"] as const) {
    const weight = weightOf(coding)
    if (weight > bestWeight) {
      best = coding
      bestWeight = weight
    }
  }
  return best
}

/** Compressions done: tests prove with it that a cached page costs none. */
export const compressions = Metric.counter("http_compressions", { description: "Bodies compressed for an answer", incremental: true })

type Level = "dynamic" | "static"

const brotliOptions = (level: Level, bytes: number): zlib.BrotliOptions => ({
  params: {
    // quality 11 takes seconds on the 3.7 MB of /docs: 9 there, about as small, ten times faster
    [zlib.constants.BROTLI_PARAM_QUALITY]: level === "dynamic" ? 4 : bytes <= 1024 * 1024 ? 11 : 9,
    [zlib.constants.BROTLI_PARAM_SIZE_HINT]: bytes
  }
})
const gzipOptions = (level: Level): zlib.ZlibOptions => ({ level: level === "dynamic" ? 6 : 9 })

/** Below this size a body is compressed on the event loop: a thread pool's round trip costs more. */
const syncBelowBytes = 32 * 1024

const brotliAsync = promisify(zlib.brotliCompress)
const gzipAsync = promisify(zlib.gzip)

/** `body` in `coding` (br or gzip) at `level`; larger bodies on the thread pool, off the event loop. */
export const compress = (coding: Exclude<Coding, "identity">, body: Uint8Array, level: Level = "dynamic") =>
  Effect.andThen(
    Metric.update(compressions, 1),
    body.byteLength < syncBelowBytes
      ? Effect.sync((): Uint8Array =>
        coding === "br" ? zlib.brotliCompressSync(body, brotliOptions(level, body.byteLength)) : zlib.gzipSync(body, gzipOptions(level))
      )
      : Effect.promise((): Promise<Uint8Array> =>
        coding === "br" ? brotliAsync(body, brotliOptions(level, body.byteLength)) : gzipAsync(body, gzipOptions(level))
      )
  )

/**
 * The forms of `body`, made on demand; `made` hears each form's size when it is made. A form is
 * compressed on a fiber of its own, which the askers await: an asker that goes away stops only
 * its own wait. (`Effect.cached` would keep the first asker's interruption as the result.)
 */
export const encodeForms = (body: Uint8Array, made: (bytes: number) => Effect.Effect<void>): Effect.Effect<EncodedForms> =>
  Effect.map(Effect.all([Deferred.make<Uint8Array>(), Deferred.make<Uint8Array>()]), ([br, gzip]) => {
    const begun = new Set<Deferred.Deferred<Uint8Array>>()
    const form = (coding: "br" | "gzip", result: Deferred.Deferred<Uint8Array>) =>
      Effect.suspend(() => {
        if (begun.has(result)) return Deferred.await(result)
        begun.add(result)
        const compressing = Deferred.complete(result, Effect.tap(compress(coding, body), (bytes) => made(bytes.byteLength)))
        return Effect.andThen(Effect.forkDetach(compressing), Deferred.await(result))
      })
    return { br: form("br", br), gzip: form("gzip", gzip) }
  })

/** `vary` with Accept-Encoding added, once. */
const withAcceptEncoding = (vary: string | undefined) =>
  vary === undefined || vary.trim() === ""
    ? "Accept-Encoding"
    : /(^|,)\s*(accept-encoding|\*)\s*(,|$)/i.test(vary) ? vary : `${vary}, Accept-Encoding`

/** Sets `Vary: Accept-Encoding` on an answer whose body could have been compressed. */
export const varyOnEncoding = (response: HttpServerResponse.HttpServerResponse) =>
  HttpServerResponse.setHeader(response, "vary", withAcceptEncoding(response.headers["vary"]))

/** A strong ETag names these bytes; the compressed ones are the same content, so only weakly. */
const weakened = (etag: string | undefined) => etag === undefined || etag.startsWith("W/") ? etag : `W/${etag}`

/**
 * `response` in `coding` with the `encoded` bytes: Content-Encoding, Content-Length and a weak ETag.
 * Content-Length comes from the new body.
 */
export const withEncoding = (response: HttpServerResponse.HttpServerResponse, coding: Exclude<Coding, "identity">, encoded: Uint8Array) => {
  const etag = weakened(response.headers["etag"])
  const headers = etag === undefined ? { "content-encoding": coding } : { "content-encoding": coding, etag }
  const contentType = response.headers["content-type"] ?? "application/octet-stream"
  return HttpServerResponse.setBody(HttpServerResponse.setHeaders(response, headers), HttpBody.uint8Array(encoded, contentType))
}

const compressibleType = /^\s*(application\/([\w.-]+\+)?json|text\/(html|plain))\s*(;|$)/i

interface StaticEntry {
  readonly source: Uint8Array
  readonly etag: string | undefined
  readonly forms: Map<Coding, Promise<Uint8Array>>
}

/**
 * The compressed forms of the stable answers, one entry per route: valid while the body is the
 * same one (the same bytes object, or the same strong ETag). Concurrent first requests share one
 * compression.
 */
const makeStableForms = () => {
  const entries = new Map<Entry, StaticEntry>()
  return (path: Entry, coding: Exclude<Coding, "identity">, body: Uint8Array, etag: string | undefined) => {
    let entry = entries.get(path)
    const strong = etag !== undefined && !etag.startsWith("W/") ? etag : undefined
    if (entry === undefined || (entry.source !== body && (strong === undefined || entry.etag !== strong))) {
      entry = { source: body, etag: strong, forms: new Map() }
      entries.set(path, entry)
    }
    let form = entry.forms.get(coding)
    if (form === undefined) {
      form = Effect.runPromise(compress(coding, body, "static"))
      entry.forms.set(coding, form)
    }
    return Effect.promise(() => form)
  }
}

/**
 * Compresses the answers that gain from it. A HEAD gets the identity answer's headers, since
 * computing a compressed length would cost the compression it spares; a Representation's kept
 * form costs nothing after its first answer, so a HEAD of it gets that form's headers.
 */
export const coding = (): Piece => {
  const stableForm = makeStableForms()
  return (next) => (exchange) =>
    Effect.flatMap(next(exchange), (response) => {
      const represented = representationOf(response)
      if (represented?.forms !== undefined) {
        const varied = varyOnEncoding(response)
        const chosen = negotiate(exchange.request.headers["accept-encoding"])
        return chosen === "identity"
          ? Effect.succeed(varied)
          : Effect.map(represented.forms[chosen], (bytes) => withEncoding(varied, chosen, bytes))
      }
      if (!compressibleType.test(response.headers["content-type"] ?? "")) return Effect.succeed(response)
      const varied = varyOnEncoding(response)
      const body = response.body
      if (
        response.headers["content-encoding"] !== undefined || exchange.method === "HEAD" || body._tag !== "Uint8Array" ||
        body.body.byteLength < minCompressedBytes
      ) return Effect.succeed(varied)
      const chosen = negotiate(exchange.request.headers["accept-encoding"])
      if (chosen === "identity") return Effect.succeed(varied)
      const entry = exchange.resolved.entry
      const encoded = entry !== undefined && exchange.route?.stable === true
        ? stableForm(entry, chosen, body.body, response.headers["etag"])
        : compress(chosen, body.body)
      return Effect.map(encoded, (bytes) => withEncoding(varied, chosen, bytes))
    })
}
