/**
 * The error funnel: every failure of a request leaves as ErrorResponse `{error, message}`.
 * Client-facing errors (Domain/ApiErrors.ts) answer as themselves; the framework's own failures
 * (schema decoding, unknown routes, unreadable bodies) and its plain-text refusals are rewritten;
 * a database that cannot be reached is an outage, answered 503 with `Retry-After`; anything else
 * is a defect: logged with its cause, answered 500 without internals.
 */
import { HttpApiError } from "effect/http-api"
import { HttpServerError, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { isSqlError } from "effect/sql/SqlError"
import { Cause, Effect, Option, Result, SchemaAST, SchemaIssue } from "effect"
import {
  type ApiErrorInstance,
  BadRequest,
  ClientClosedRequest,
  DatabaseUnavailable,
  infoOf,
  InternalError,
  isApiError,
  MethodNotAllowed,
  NotFound,
  PayloadTooLarge,
  UnsupportedMediaType
} from "../Domain/ApiErrors.ts"
import { retryAfterOf } from "../Domain/Answers.ts"
import { conflictRetryAfterSeconds, persistedConflict } from "../Db/Conflicts.ts"
import { DatabaseOutages, outageOf, retryAfterSeconds } from "../Db/Outages.ts"
import { sqlState } from "../Db/Rows.ts"
import type { Piece } from "./Exchange.ts"
import type { RouteTable } from "./Routes.ts"

/** The wire form of a client-facing error: ErrorResponse. */
export const wireOf = (error: ApiErrorInstance<string>) => ({ error: infoOf(error).code, message: error.message })

/** An ErrorResponse answer of `error`, with its status and, for RateLimited and DatabaseUnavailable, `Retry-After`. */
export const errorResponse = (error: ApiErrorInstance<string>, headers?: Record<string, string>) => {
  const { status } = infoOf(error)
  const retryAfter = retryAfterOf(error)
  return HttpServerResponse.jsonUnsafe(wireOf(error), {
    status,
    headers: {
      ...(retryAfter === undefined ? {} : { "retry-after": retryAfter }),
      ...headers
    }
  })
}

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/** The issue the formatter lists first (its leaf, or a filter): to tell an unknown field from a wrong value. */
const firstIssue = (issue: SchemaIssue.Issue): SchemaIssue.Issue => {
  switch (issue._tag) {
    case "Pointer":
    case "Encoding":
      return firstIssue(issue.issue)
    case "Composite":
    case "AnyOf":
      return issue.issues.length > 0 ? firstIssue(issue.issues[0]!) : issue
    default:
      return issue
  }
}

/** The fields an object declares, for the message refusing one it does not. */
const declaredFields = (ast: SchemaAST.AST) =>
  SchemaAST.isObjects(ast) ? ast.propertySignatures.map((p) => String(p.name)).join(", ") : ""

/**
 * The parameter or field a decode issue is about, and what was wrong with it. `named` gives the
 * path as the client sent it (Aliases.ts: a field renamed from an alias is named by its alias).
 */
export const describeDecodeError = (
  e: HttpApiError.HttpApiSchemaError,
  named: (path: ReadonlyArray<string>) => ReadonlyArray<string> = (path) => path
): string => {
  const issue = formatIssues(e.cause.issue).issues[0]
  if (!issue) return "The request is not valid"
  const path = named((issue.path ?? []).map((segment) => String(typeof segment === "object" ? segment.key : segment)))
  const where = path.length > 0 ? path.join(".") : "request"
  // a field the body does not declare, where the body refuses those (Schemas.ts, refusingUnknownFields)
  const first = firstIssue(e.cause.issue)
  if (first._tag === "UnexpectedKey") return `Unknown field '${where}': this object takes ${declaredFields(first.ast)}`
  return `Invalid value for '${where}': ${issue.message}`
}

/** A request whose body could not be read: past its size limit, or not the JSON it claims to be. */
const fromRequestError = (e: HttpServerError.RequestParseError) => {
  if (e.reason === "BodyTooLarge") return errorResponse(new PayloadTooLarge({ message: "The request body is too large" }))
  const detail = String((e.cause as { message?: unknown } | undefined)?.message ?? e.description ?? "")
  return errorResponse(new BadRequest({ message: `The request body could not be read as JSON${detail ? `: ${detail}` : ""}` }))
}

/** The PostgreSQL error code behind an SqlError defect. */
const sqlErrorCode = (defect: unknown): string | undefined => isSqlError(defect) ? sqlState(defect) : undefined

/** PostgreSQL's "invalid byte sequence" and "untranslatable character": the client's text, not our fault. */
const isUnstorableText = (defect: unknown) => {
  const code = sqlErrorCode(defect)
  return code === "22021" || code === "22P05"
}

/** PostgreSQL's "canceling statement due to user request": a query cancelled with its request. */
const isCancelledQuery = (defect: unknown) => sqlErrorCode(defect) === "57014"

/**
 * Turns a failure of a request into its answer. Client-facing errors answer as themselves; the
 * framework's failures are rewritten; a database that cannot be reached is an outage, answered
 * 503 with `Retry-After` (Db/Outages.ts), and so is a transaction that kept losing to concurrent
 * ones through all its retries (Db/Conflicts.ts); anything else is a defect: logged with its
 * cause, answered 500 without internals.
 */
export const respondToCause = (allowedMethods: (url: string) => ReadonlyArray<string>) => (cause: Cause.Cause<unknown>) =>
  Effect.gen(function*() {
    // HttpApiBuilder turns request decoding failures and unreadable bodies into defects: look at
    // defects as well as failures
    const defect = Result.getSuccess(Cause.findDefect(cause))
    const failure = Option.orElse(Cause.findErrorOption(cause), () => defect)
    if (Option.isSome(failure)) {
      const e = failure.value
      if (isApiError(e)) return errorResponse(e)
      // a request that does not decode (its params, query, headers or body); an answer that does
      // not encode is the service's fault, a defect (below)
      if (HttpApiError.HttpApiSchemaError.is(e) && e.kind !== "Body" && e.kind !== "ResponseHeaders") {
        return errorResponse(new BadRequest({ message: describeDecodeError(e) }))
      }
      if (HttpApiError.HttpApiPayloadTooLarge.is(e)) return errorResponse(new PayloadTooLarge({ message: "The request body is too large" }))
      if (HttpServerError.isHttpServerError(e)) {
        if (e.reason._tag === "RouteNotFound") return routeNotFound(e.reason.request, allowedMethods)
        if (e.reason._tag === "RequestParseError") return fromRequestError(e.reason)
      }
    }
    const outage = outageOf(cause)
    if (Option.isSome(outage)) {
      // an outage is logged once, by DatabaseOutages, not with a stack trace per request
      yield* Effect.flatMap(DatabaseOutages, (outages) => outages.answered(outage.value))
      return errorResponse(new DatabaseUnavailable({ message: "The database is unavailable: try again shortly", retryAfter: retryAfterSeconds }))
    }
    if (persistedConflict(cause.reasons.filter(Cause.isDieReason).map((reason) => reason.defect))) {
      // the load's doing, not a bug: no stack trace, but an operator should see it happen
      yield* Effect.logWarning("a write kept conflicting with concurrent ones through its retries: answered 503")
      return errorResponse(
        new DatabaseUnavailable({ message: "The database is busy with conflicting changes: try again shortly", retryAfter: conflictRetryAfterSeconds })
      )
    }
    if (Option.exists(defect, isUnstorableText)) {
      // the schemas refuse such text with the field's name; this is the net under them
      return errorResponse(new BadRequest({ message: "The request holds text the registry cannot store (NUL or invalid characters)" }))
    }
    if (Cause.hasInterruptsOnly(cause) || (Cause.hasInterrupts(cause) && Option.exists(defect, isCancelledQuery))) {
      // the client went away (its query cancelled with it): nobody will read this answer
      return errorResponse(new ClientClosedRequest({ message: "The request was cancelled" }))
    }
    yield* Effect.logError("unhandled failure", cause)
    return errorResponse(new InternalError({ message: "The service failed to answer this request" }))
  })

const routeNotFound = (request: HttpServerRequest.HttpServerRequest, allowedMethods: (url: string) => ReadonlyArray<string>) => {
  const path = request.url.split("?")[0] ?? "/"
  const allowed = allowedMethods(request.url)
  return allowed.length > 0
    ? errorResponse(
      new MethodNotAllowed({ message: `${request.method} is not allowed on ${path}; use ${allowed.join(", ")}` }),
      { allow: allowed.join(", ") }
    )
    : errorResponse(new NotFound({ message: `No route for ${request.method} ${path}` }))
}

/** The text of a framework's own answer (its 415 names the content type it does not take). */
const textOf = (response: HttpServerResponse.HttpServerResponse) =>
  response.body._tag === "Uint8Array" && response.body.contentType.startsWith("text/") ? new TextDecoder().decode(response.body.body).trim() : ""

/**
 * The refusals HttpApi answers itself rather than failing (HttpApiBuilder.ts, `decodePayload`: a
 * content type the endpoint does not declare is a text 415, a declared stream over its limit an
 * empty 413), as ErrorResponse too. Any other answer, an ErrorResponse or a success, is left as it is.
 */
const asErrorResponse = (response: HttpServerResponse.HttpServerResponse) => {
  if (response.status < 400 || (response.body._tag !== "Empty" && !(response.body.contentType ?? "").startsWith("text/plain"))) return response
  if (response.status === 415) {
    return errorResponse(new UnsupportedMediaType({ message: textOf(response) || "This request's content type is not accepted here" }))
  }
  if (response.status === 413) return errorResponse(new PayloadTooLarge({ message: "The request body is too large" }))
  if (response.status === 400) return errorResponse(new BadRequest({ message: textOf(response) || "The request is not valid" }))
  return response
}

/** The funnel as an edge piece: whatever the pieces after it and the handler fail with, answered. */
export const failures = (table: RouteTable, outages: DatabaseOutages["Service"]): Piece => {
  const respond = respondToCause(table.allowedMethods)
  const answer = (cause: Cause.Cause<unknown>) => Effect.provideService(respond(cause), DatabaseOutages, outages)
  return (next) => (exchange) => Effect.map(Effect.catchCause(next(exchange), answer), asErrorResponse)
}
