/**
 * Byte ranges of a download (RFC 9110, 14): `Range: bytes=a-b`, `a-` and `-n`, and `If-Range`.
 * One range is served as 206; a request for several is served whole (200), as the RFC allows: the
 * clients that resume a download ask for one, and multipart answers would buy nothing.
 */
import { Data } from "effect"

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

