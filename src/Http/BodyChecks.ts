/**
 * Checks on a request's body before HttpApi reads it. The body is read here, once, up to the
 * JSON limit (RefusedBodies.ts: past it the request is answered 413 and left intact for the
 * drain). Then two inputs its decoder would fail on with a defect (a 500) instead of a refusal:
 * - a body of another media type than JSON, URL-encoded or text on a JSON route (415): the
 *   multipart parser throws when the boundary is missing, and no JSON route takes multipart or
 *   bytes anyway (the routes that do read their own bodies);
 * - JSON nested thousands of levels deep: the decoder's error message formats the value given,
 *   recursively, and overflows the stack.
 * HttpApi picks its decoder by the content type, and these routes declare JSON only: the request
 * it is given says `application/json`, and its body reads as JSON. JSON sent as text or under a
 * structured-syntax type (`+json`) is read as such; URL-encoded fields as the object of their
 * values (repeated names a list), decoded by the same schema, as Effect 3's HttpApi did. Text that
 * is not JSON fails as the framework's reader fails, when the body is decoded (after the route's
 * authentication): a 400 saying so (Failures.ts).
 */
import { HttpServerError, type HttpServerRequest, UrlParams } from "effect/http"
import { Effect } from "effect"
import { BadRequest, PayloadTooLarge, UnsupportedMediaType } from "../Domain/ApiErrors.ts"
import type { Piece } from "./Exchange.ts"
import { errorResponse } from "./Failures.ts"
import { BodyOverLimit, type ReadBody, readWithin, withBody } from "./RefusedBodies.ts"

/** The largest JSON body read: a bulk host-node record of 5,000 entries fits with room to spare. */
export const maxJsonBodyBytes = 16 * 1024 * 1024

const tooLarge = () => errorResponse(new PayloadTooLarge({ message: `The request body is larger than ${maxJsonBodyBytes} bytes` }))

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
 * Whether a body of this media type is one a JSON route reads: JSON, URL-encoded fields, text (as
 * some clients label JSON), or no type at all. Anything else is a 415 naming the type, rather
 * than a decode error about bytes the client never meant as JSON.
 */
const readsAsText = (type: string) => {
  const essence = type.split(";")[0]!.trim()
  return essence === "" || essence === "application/json" || essence.endsWith("+json") ||
    essence === "application/x-www-form-urlencoded" || essence.startsWith("text/")
}

const isUrlEncoded = (type: string) => type.startsWith("application/x-www-form-urlencoded")

/** The body as JSON: URL-encoded fields as an object of their values, anything else parsed as JSON. */
const readAsJson = (type: string, text: string): ReadBody => {
  if (isUrlEncoded(type)) {
    const json = UrlParams.toRecord(UrlParams.fromInput(new URLSearchParams(text)))
    return { text: JSON.stringify(json), json }
  }
  if (text === "") return { text, json: null }
  try {
    return { text, json: JSON.parse(text) }
  } catch (error) {
    return { error }
  }
}

/** The request's headers, saying `application/json` (with the body read as JSON). */
const asJson = (request: HttpServerRequest.HttpServerRequest, type: string) =>
  type.startsWith("application/json") ? request.headers : { ...request.headers, "content-type": "application/json" }

/**
 * The request's body read here, unless it is too large (413, a declared length before a byte is
 * read) or one of the two above: then a 415 or a 400. On the routes that read JSON (or
 * URL-encoded) bodies: not on those that stream their own (`streamed`), nor where no route
 * answers (nothing reads the body there). The framework reads bodies no further than the JSON
 * limit either (`MaxBodySize`, Router.ts).
 */
export const bodyChecks: Piece = (next) => (exchange) => {
  const { request, route } = exchange
  if (route === undefined || route.streamed) return next(exchange)
  if (Number(request.headers["content-length"] ?? 0) > maxJsonBodyBytes) return Effect.succeed(tooLarge())
  if (request.method === "GET" || request.method === "HEAD") return next(exchange)
  const type = contentTypeOf(request)
  if (!readsAsText(type)) {
    return Effect.succeed(errorResponse(new UnsupportedMediaType({ message: `Send this request as application/json, not ${type.split(";")[0]}` })))
  }
  return readWithin(exchange.incoming, maxJsonBodyBytes).pipe(
    Effect.matchEffect({
      onFailure: (e) =>
        e instanceof BodyOverLimit
          ? Effect.succeed(tooLarge())
          // as the framework's reader would have it: a defect that the error funnel answers
          : Effect.die(new HttpServerError.HttpServerError({ reason: new HttpServerError.RequestParseError({ request, reason: "Parse", cause: e }) })),
      onSuccess: (body) => {
        const text = body.toString("utf8")
        if (!isUrlEncoded(type) && nestsDeeperThan(text, maxJsonDepth)) {
          return Effect.succeed(errorResponse(new BadRequest({ message: `The JSON body nests deeper than ${maxJsonDepth} levels` })))
        }
        exchange.request = withBody(request, body, readAsJson(type, text), asJson(request, type))
        return next(exchange)
      }
    })
  )
}
