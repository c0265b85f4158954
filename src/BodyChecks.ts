/**
 * Checks on a request's body before HttpApi reads it, for two inputs its decoder would fail on
 * with a defect (a 500) instead of a refusal:
 * - a multipart body on a JSON route: the multipart parser throws when the boundary is missing,
 *   and no JSON route takes multipart anyway (the routes that do read their own bodies);
 * - JSON nested thousands of levels deep: the decoder's error message formats the value given,
 *   recursively, and overflows the stack.
 */
import { type HttpApp, HttpServerRequest } from "@effect/platform"
import { Effect, Either } from "effect"
import { BadRequest, UnsupportedMediaType } from "./Domain/ApiErrors.ts"
import { errorResponse } from "./Errors.ts"

/** The deepest nesting of arrays and objects a JSON body may have: real payloads stay under 10. */
export const maxJsonDepth = 64

const quote = 0x22
const backslash = 0x5c

/** Whether the JSON `text` nests arrays and objects deeper than `max`: one pass, strings skipped. */
export const nestsDeeperThan = (text: string, max: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === backslash) i++
      else if (c === quote) inString = false
    } else if (c === quote) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
}

const contentTypeOf = (request: HttpServerRequest.HttpServerRequest) => (request.headers["content-type"] ?? "").toLowerCase()

/**
 * `app`, unless the request's body is one of the two above: then a 415 or a 400. Use it on the
 * routes that read JSON bodies, under the body size limit (the body read here is the one the
 * decoder reads next: the request caches it).
 */
export const checkingBodies = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    if (request.method === "GET" || request.method === "HEAD") return app
    const type = contentTypeOf(request)
    if (type.startsWith("multipart/")) {
      return Effect.succeed(errorResponse(new UnsupportedMediaType({ message: `Send this request as application/json, not ${type.split(";")[0]}` })))
    }
    if (type.startsWith("application/x-www-form-urlencoded")) return app
    return Effect.flatMap(Effect.either(request.text), (read) =>
      // an unreadable body is left to the decoder, which reads the same cached failure
      Either.isRight(read) && nestsDeeperThan(read.right, maxJsonDepth)
        ? Effect.succeed(errorResponse(new BadRequest({ message: `The JSON body nests deeper than ${maxJsonDepth} levels` })))
        : app)
  })
