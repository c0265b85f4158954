/**
 * Byte ranges of a download (RFC 9110, 14), their one owner: `Range: bytes=a-b`, `a-` and `-n`,
 * and `If-Range`. One range is served as 206; a request for several is served whole (200), as the
 * RFC allows: the clients that resume a download ask for one, and multipart answers would buy
 * nothing. The parser is this service's own: `range-parser` 1.3 answers a suffix longer than the
 * body, and a range whose last byte comes before its first, as unsatisfiable (416), where RFC
 * 9110 serves the whole body (14.1.2) and ignores an invalid range (14.1.1).
 */
import { HttpServerResponse } from "effect/http"
import { Data, Effect, type Stream } from "effect"
import { RangeNotSatisfiable } from "../Domain/ApiErrors.ts"
import type { Piece } from "./Exchange.ts"
import { errorResponse } from "./Failures.ts"

/** How to answer a download given its Range. */
export type RangeAnswer = Data.TaggedEnum<{
  /** The whole body: no Range, one that is ignored, or an If-Range that no longer holds. */
  Whole: {}
  /** Bytes `start` to `end`, both included. */
  Partial: { readonly start: number; readonly end: number }
  /** A well-formed range that starts past the end: 416. */
  Unsatisfiable: {}
}>
export const RangeAnswer = Data.taggedEnum<RangeAnswer>()

const spec = /^(\d*)-(\d*)$/

/** One range of `size` bytes; `undefined` when malformed (the header is then ignored). */
const rangeOf = (text: string, size: number): RangeAnswer | undefined => {
  const match = spec.exec(text.trim())
  if (match === null) return undefined
  const [, first = "", last = ""] = match
  if (first === "") {
    if (last === "") return undefined
    const suffix = Number(last)
    return suffix === 0 || size === 0 ? RangeAnswer.Unsatisfiable() : RangeAnswer.Partial({ start: Math.max(0, size - suffix), end: size - 1 })
  }
  const start = Number(first)
  if (last !== "" && Number(last) < start) return undefined
  if (start >= size) return RangeAnswer.Unsatisfiable()
  return RangeAnswer.Partial({ start, end: last === "" ? size - 1 : Math.min(Number(last), size - 1) })
}

/** What to send of a body of `size` bytes for the request's `Range` header. */
export const byteRange = (header: string | undefined, size: number): RangeAnswer => {
  if (header === undefined) return RangeAnswer.Whole()
  const equals = header.indexOf("=")
  if (equals < 0 || header.slice(0, equals).trim().toLowerCase() !== "bytes") return RangeAnswer.Whole()
  const ranges = header.slice(equals + 1).split(",").filter((part) => part.trim() !== "")
  if (ranges.length !== 1) return RangeAnswer.Whole()
  return rangeOf(ranges[0]!, size) ?? RangeAnswer.Whole()
}

/**
 * Whether a Range may be honoured under `If-Range` (RFC 9110, 13.1.5): absent, or naming the
 * current representation: its strong ETag (strong comparison), or its exact Last-Modified date.
 */
export const ifRangeHolds = (header: string | undefined, etag: string, lastModified: string) => {
  if (header === undefined) return true
  const value = header.trim()
  if (value.startsWith("W/")) return false
  if (value.startsWith("\"")) return value === etag
  const date = Date.parse(value)
  return Number.isFinite(date) && date === Date.parse(lastModified)
}


/** A download whose 304, 206 and 416 the edge decides (Conditional.ts, `ranges`): what a feature answers for stored bytes. */
export interface Download {
  /** What the bytes are, for a 416's message ("archive"). */
  readonly noun: string
  readonly bytes: number
  readonly contentType: string
  /** Strong. */
  readonly etag: string
  readonly lastModified: Date
  readonly cacheControl: string
  /** The whole body, and `length` bytes of it from `start`. */
  readonly stream: Stream.Stream<Uint8Array, unknown>
  readonly slice: (start: number, length: number) => Stream.Stream<Uint8Array, unknown>
  /** Headers of the whole and partial answers, not of a 304 (Content-Disposition). */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

const downloads = new WeakMap<HttpServerResponse.HttpServerResponse, Download>()

/** The validators every answer of a download carries, a 304's included. */
export const validatorsOf = (download: Download) => ({
  etag: download.etag,
  "last-modified": download.lastModified.toUTCString(),
  "cache-control": download.cacheControl,
  "accept-ranges": "bytes"
})

/** The whole answer of `download`, which the edge answers 304, 206 or 416 instead when the request asks so. */
export const offerDownload = (download: Download): HttpServerResponse.HttpServerResponse => {
  const response = HttpServerResponse.stream(download.stream, {
    contentType: download.contentType,
    contentLength: download.bytes,
    headers: { ...validatorsOf(download), ...download.headers }
  })
  downloads.set(response, download)
  return response
}

/** The Download a handler answered with, when it did. */
export const downloadOf = (response: HttpServerResponse.HttpServerResponse) => downloads.get(response)

/** One range as 206, a range past the end as 416, under If-Range; anything else whole. */
export const ranges: Piece = (next) => (exchange) =>
  exchange.method !== "GET" && exchange.method !== "HEAD" ? next(exchange) : Effect.map(next(exchange), (response) => {
    const download = response.status === 200 ? downloadOf(response) : undefined
    if (download === undefined) return response
    const { headers } = exchange.request
    const validators = validatorsOf(download)
    const range = ifRangeHolds(headers["if-range"], download.etag, validators["last-modified"])
      ? byteRange(headers["range"], download.bytes)
      : RangeAnswer.Whole()
    switch (range._tag) {
      case "Whole":
        return response
      case "Partial":
        return HttpServerResponse.stream(download.slice(range.start, range.end - range.start + 1), {
          status: 206,
          contentType: download.contentType,
          contentLength: range.end - range.start + 1,
          headers: { ...validators, ...download.headers, "content-range": `bytes ${range.start}-${range.end}/${download.bytes}` }
        })
      case "Unsatisfiable":
        return errorResponse(
          new RangeNotSatisfiable({ message: `The range is outside the ${download.noun}'s ${download.bytes} bytes` }),
          { "content-range": `bytes */${download.bytes}`, "accept-ranges": "bytes" }
        )
    }
  })
