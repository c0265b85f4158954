/**
 * What a feature answers when the edge decides how (Conditional.ts, Coding.ts): a body with its
 * validator and, when kept, its compressed forms. The answer is an ordinary 200, so that a piece
 * that does not know it still sends it right; the pieces that do find the Representation by it.
 */
import { HttpServerResponse } from "effect/http"
import type { Effect } from "effect"

/**
 * A stored body's br and gzip forms: each is compressed the first time an answer asks for it
 * (concurrent askers share that one compression), then kept. A form nobody asks for (many
 * package managers send no Accept-Encoding, few ask for br) costs nothing.
 */
export interface EncodedForms {
  readonly br: Effect.Effect<Uint8Array>
  readonly gzip: Effect.Effect<Uint8Array>
}

/** What a feature answers when the edge decides how: a 200, a 304, and in which coding. */
export interface Representation {
  readonly body: Uint8Array
  readonly contentType: string
  /** Strong. */
  readonly etag: string
  readonly cacheControl: string
  /** The body's compressed forms, kept beside it; the edge compresses nothing then. */
  readonly forms?: EncodedForms | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
}

const representations = new WeakMap<HttpServerResponse.HttpServerResponse, Representation>()

/** The 200 answer of `representation`, which the edge answers 304 or in a kept coding as the request asks. */
export const represent = (representation: Representation): HttpServerResponse.HttpServerResponse => {
  const response = HttpServerResponse.uint8Array(representation.body, {
    contentType: representation.contentType,
    headers: { ...representation.headers, etag: representation.etag, "cache-control": representation.cacheControl }
  })
  representations.set(response, representation)
  return response
}

/** The Representation a handler answered with, when it did. */
export const representationOf = (response: HttpServerResponse.HttpServerResponse) => representations.get(response)

