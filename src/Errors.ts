/**
 * The service's typed errors and their one mapping onto ErrorResponse `{error, message}`.
 *
 * Handlers fail with the classes below; the framework's own failures (schema decoding, unknown
 * routes, unreadable bodies) and defects are rewritten here too, so that every non-2xx answer of
 * the service has the same shape.
 */
import { HttpApiError, HttpApiSchema, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Option, Schema } from "effect"

const fields = {
  message: Schema.String,
  /** A more specific code than the class's own (e.g. `node_banned` for a Forbidden). */
  code: Schema.optional(Schema.String)
}

export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", fields, HttpApiSchema.annotations({ status: 400 })) {}
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", fields, HttpApiSchema.annotations({ status: 401 })) {}
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", fields, HttpApiSchema.annotations({ status: 403 })) {}
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", fields, HttpApiSchema.annotations({ status: 404 })) {}
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", fields, HttpApiSchema.annotations({ status: 409 })) {}
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", fields, HttpApiSchema.annotations({ status: 413 })) {}
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  ...fields,
  /** Seconds until the client may try again, passed on as `Retry-After`. */
  retryAfter: Schema.optional(Schema.Number)
}, HttpApiSchema.annotations({ status: 429 })) {}
export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()("UnsupportedMediaType", fields, HttpApiSchema.annotations({ status: 415 })) {}
/** A vendor or other upstream failed or refused our credentials: not the caller's fault. */
export class UpstreamError extends Schema.TaggedError<UpstreamError>()("UpstreamError", fields, HttpApiSchema.annotations({ status: 502 })) {}
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", fields, HttpApiSchema.annotations({ status: 503 })) {}
export class UpstreamTimeout extends Schema.TaggedError<UpstreamTimeout>()("UpstreamTimeout", fields, HttpApiSchema.annotations({ status: 504 })) {}

/** A node that a banned status (its own or its publisher's) keeps from clients who ask for it. */
export const nodeBanned = (nodeId: string) => new Forbidden({ code: "node_banned", message: `Node '${nodeId}' is banned` })

export type ApiError =
  | BadRequest
  | Unauthorized
  | Forbidden
  | NotFound
  | Conflict
  | PayloadTooLarge
  | RateLimited
  | UnsupportedMediaType
  | UpstreamError
  | ServiceUnavailable
  | UpstreamTimeout

const defaults: Record<ApiError["_tag"], { readonly status: number; readonly code: string }> = {
  BadRequest: { status: 400, code: "bad_request" },
  Unauthorized: { status: 401, code: "unauthorized" },
  Forbidden: { status: 403, code: "forbidden" },
  NotFound: { status: 404, code: "not_found" },
  Conflict: { status: 409, code: "conflict" },
  PayloadTooLarge: { status: 413, code: "payload_too_large" },
  RateLimited: { status: 429, code: "rate_limited" },
  UnsupportedMediaType: { status: 415, code: "unsupported_media_type" },
  UpstreamError: { status: 502, code: "upstream_error" },
  ServiceUnavailable: { status: 503, code: "service_unavailable" },
  UpstreamTimeout: { status: 504, code: "upstream_timeout" }
}

const isApiError = (u: unknown): u is ApiError =>
  typeof u === "object" && u !== null && "_tag" in u && typeof u._tag === "string" && u._tag in defaults

/** An ErrorResponse answer. */
export const errorResponse = (status: number, error: string, message: string, headers?: Record<string, string>) =>
  HttpServerResponse.unsafeJson({ error, message }, { status, ...(headers ? { headers } : {}) })

/** The parameter or field a decode issue is about, and what was wrong with it. */
const describeDecodeError = (e: HttpApiError.HttpApiDecodeError): string => {
  const issue = e.issues[0]
  if (!issue) return "The request is not valid"
  const where = issue.path.length > 0 ? issue.path.map(String).join(".") : "request"
  return `Invalid value for '${where}': ${issue.message}`
}

const fromRequestError = (e: HttpServerError.RequestError) => {
  const detail = String((e.cause as { message?: unknown } | undefined)?.message ?? e.description ?? "")
  if (/too large|size|limit/i.test(detail)) {
    return errorResponse(413, "payload_too_large", "The request body is too large")
  }
  return errorResponse(400, "bad_request", `The request body could not be read as JSON${detail ? `: ${detail}` : ""}`)
}

/** PostgreSQL's "invalid byte sequence" and "untranslatable character": the client's text, not our fault. */
const isUnstorableText = (defect: unknown) => {
  const code = sqlErrorCode(defect)
  return code === "22021" || code === "22P05"
}

/** The PostgreSQL error code behind an SqlError defect. */
const sqlErrorCode = (defect: unknown): unknown =>
  (defect as { _tag?: string } | undefined)?._tag === "SqlError"
    ? (defect as { cause?: { code?: unknown } }).cause?.code
    : undefined

/** PostgreSQL's "canceling statement due to user request": a query cancelled with its request. */
const isCancelledQuery = (defect: unknown) => sqlErrorCode(defect) === "57014"

/** Which methods a path would accept: a known path asked with another method answers 405. */
export type AllowedMethods = (path: string) => ReadonlyArray<string>

/**
 * Turns a failure of a request into its answer. Typed failures map onto their status and code;
 * anything else is a defect: logged with its cause, answered 500 without internals.
 */
export const respondToCause = (allowedMethods: AllowedMethods) => (cause: Cause.Cause<unknown>) =>
  Effect.gen(function*() {
    // HttpApiBuilder reads bodies with `orDie`: malformed JSON arrives as a defect, so look at
    // defects as well as failures
    const failure = Option.orElse(Cause.failureOption(cause), () => Cause.dieOption(cause))
    if (Option.isSome(failure)) {
      const e = failure.value
      if (isApiError(e)) {
        const d = defaults[e._tag]
        const retryAfter = e._tag === "RateLimited" && e.retryAfter !== undefined
          ? { "retry-after": String(Math.max(0, Math.ceil(e.retryAfter))) }
          : undefined
        return errorResponse(d.status, e.code ?? d.code, e.message, retryAfter)
      }
      if (e instanceof HttpApiError.HttpApiDecodeError) {
        return errorResponse(400, "bad_request", describeDecodeError(e))
      }
      if (HttpServerError.isServerError(e)) {
        if (e._tag === "RouteNotFound") return routeNotFound(e.request, allowedMethods)
        if (e._tag === "RequestError") return fromRequestError(e)
      }
    }
    const defect = Cause.dieOption(cause)
    if (Option.exists(defect, isUnstorableText)) {
      // the schemas refuse such text with the field's name; this is the net under them
      return errorResponse(400, "bad_request", "The request holds text the registry cannot store (NUL or invalid characters)")
    }
    if (Cause.isInterruptedOnly(cause) || (Cause.isInterrupted(cause) && Option.exists(defect, isCancelledQuery))) {
      // the client went away (its query cancelled with it): nobody will read this answer
      return errorResponse(499, "client_closed_request", "The request was cancelled")
    }
    yield* Effect.logError("unhandled failure", cause)
    return errorResponse(500, "internal_error", "The service failed to answer this request")
  })

const routeNotFound = (request: HttpServerRequest.HttpServerRequest, allowedMethods: AllowedMethods) => {
  const path = request.url.split("?")[0] ?? "/"
  const allowed = allowedMethods(path)
  return allowed.length > 0
    ? errorResponse(405, "method_not_allowed", `${request.method} is not allowed on ${path}; use ${allowed.join(", ")}`, {
      allow: allowed.join(", ")
    })
    : errorResponse(404, "not_found", `No route for ${request.method} ${path}`)
}
