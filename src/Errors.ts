/**
 * Every failure of a request, answered as ErrorResponse `{error, message}`.
 *
 * - Domain failures (services, repositories, clients) become the client-facing class the table
 *   below names for them, with their message: a feature's handlers apply `answer` and can fail
 *   only with the classes their endpoints declare.
 * - Those classes (Domain/ApiErrors.ts) encode as their wire form.
 * - The framework's own failures (schema decoding, unknown routes, unreadable bodies) and defects
 *   are rewritten by `respondToCause`, the one funnel for what no handler answered.
 */
import { HttpApiError, HttpServerError, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Option } from "effect"
import {
  type ApiErrorInstance,
  ArchiveMissing,
  BadRequest,
  ClientClosedRequest,
  Conflict,
  DatabaseUnavailable,
  Forbidden,
  IdempotencyKeyInProgress,
  IdempotencyKeyReused,
  infoOf,
  InternalError,
  InvalidSignature,
  InvalidToken,
  InvalidVcsToken,
  InvalidVideo,
  isApiError,
  LastOwner,
  MethodNotAllowed,
  NodeAlreadyClaimed,
  NodeBanned,
  NodeDeleted,
  NodeExists,
  NoInstallableVersion,
  NotFound,
  PayloadTooLarge,
  PublisherBanned,
  PublisherExists,
  PublisherHasNodes,
  PublisherIdReserved,
  RateLimited,
  RepositoryNotOwned,
  RepositoryNotRecognised,
  ServiceUnavailable,
  Unauthorized,
  UnsupportedMediaType,
  UpstreamError,
  UpstreamTimeout,
  UrlExpired,
  UserNotFound,
  VendorNotConfigured,
  VersionExists,
  VersionImmutable,
  VideoTooLong
} from "./Domain/ApiErrors.ts"
import { conflictRetryAfterSeconds, persistedConflict } from "./Db/Conflicts.ts"
import { DatabaseOutages, outageOf, retryAfterSeconds } from "./Db/Outages.ts"

/**
 * Which client-facing class answers each domain failure, by its tag. A failure missing here
 * reaches its handler unchanged, where the type checker refuses it.
 */
const answers = {
  // shared (Domain/Errors.ts)
  NodeMissing: NotFound,
  VersionMissing: NotFound,
  NodeIsBanned: NodeBanned,
  PublisherMissing: NotFound,
  PublisherIsBanned: PublisherBanned,
  NotPermitted: Forbidden,
  TransitionRefused: Conflict,
  IdMismatch: BadRequest,
  // catalogue
  NothingToInstall: NoInstallableVersion,
  // publishers and members
  PublisherIdTaken: PublisherExists,
  PublisherIdIsReserved: PublisherIdReserved,
  UnknownUser: UserNotFound,
  NotAMember: NotFound,
  LastOwnerStays: LastOwner,
  UnclaimedStaysActive: Conflict,
  PublisherNotEmpty: PublisherHasNodes,
  UnclaimedStays: Conflict,
  // tokens
  TokenMissing: NotFound,
  // publishing
  NodeIdTaken: NodeExists,
  NodeIsDeleted: NodeDeleted,
  VersionTaken: VersionExists,
  VersionLocked: VersionImmutable,
  NoArchive: ArchiveMissing,
  NodeBannedForOwner: Conflict,
  TokenRejected: InvalidToken,
  NoCredentials: Unauthorized,
  TooManyFailures: RateLimited,
  BadSignature: InvalidSignature,
  SignatureExpired: UrlExpired,
  NotAZip: UnsupportedMediaType,
  ArchiveTooLarge: PayloadTooLarge,
  UploadBroken: BadRequest,
  NotDownloadable: NotFound,
  ArchiveNotStored: NotFound,
  NotPublishersNode: NotFound,
  NodesPublisherDeleted: Conflict,
  StorageFailed: InternalError,
  // claims
  AlreadyClaimed: NodeAlreadyClaimed,
  RepositoryUnrecognised: RepositoryNotRecognised,
  NotRepositoryAdmin: RepositoryNotOwned,
  RepohostInvalidToken: InvalidVcsToken,
  RepohostRateLimited: RateLimited,
  RepohostUnavailable: ServiceUnavailable,
  // host-nodes
  HostNodeMissing: NotFound,
  HostNodeProviderMissing: NotFound,
  HostNodeNamesRepeated: Conflict,
  HostNodeNamesTaken: Conflict,
  // media
  TaskMissing: NotFound,
  KeyReused: IdempotencyKeyReused,
  KeyInProgress: IdempotencyKeyInProgress,
  VendorRefused: BadRequest,
  VendorLostTask: NotFound,
  VendorRateLimited: RateLimited,
  VendorFailed: UpstreamError,
  VendorTimedOut: UpstreamTimeout,
  VendorUnconfigured: VendorNotConfigured,
  FormInvalid: BadRequest,
  FormNotAccepted: UnsupportedMediaType,
  FormTooLarge: PayloadTooLarge,
  VideoTooLarge: PayloadTooLarge,
  VideoUnreadable: InvalidVideo,
  VideoOverlong: VideoTooLong,
  // operations
  DatabaseDown: DatabaseUnavailable,
  // API keys
  ApiKeyMissing: NotFound,
  // media storage
  MediaFileMissing: NotFound,
  MediaUrlExpired: UrlExpired,
  MediaTypeMismatch: UnsupportedMediaType,
  MediaFileTooLarge: PayloadTooLarge,
  MediaQuotaExceeded: PayloadTooLarge,
  MediaUploadBroken: BadRequest
} as const

type Answers = typeof answers

/** What a failure `E` is answered with: its class from the table, or itself. */
export type Answered<E> = E extends { readonly _tag: infer Tag } ? Tag extends keyof Answers ? InstanceType<Answers[Tag]> : E
  : E

/** Answers a handler's domain failures with their client-facing classes (the table above). */
export const answer = <A, E extends { readonly _tag: string; readonly message: string }, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Answered<E>, R> =>
  Effect.mapError(effect, (e) => {
    const Answer = (answers as Record<string, new(props: { message: string; retryAfter?: number }) => unknown>)[e._tag]
    if (Answer === undefined) return e as Answered<E>
    const retryAfter = (e as { readonly retryAfterSeconds?: number }).retryAfterSeconds
    return new Answer(retryAfter === undefined ? { message: e.message } : { message: e.message, retryAfter }) as Answered<E>
  })

/** The wire form of a client-facing error: ErrorResponse. */
export const wireOf = (error: ApiErrorInstance<string>) => ({ error: infoOf(error).code, message: error.message })

/** An ErrorResponse answer of `error`, with its status and, for RateLimited and DatabaseUnavailable, `Retry-After`. */
export const errorResponse = (error: ApiErrorInstance<string>, headers?: Record<string, string>) => {
  const { status } = infoOf(error)
  const retryAfter = (error as { readonly retryAfter?: number }).retryAfter
  return HttpServerResponse.unsafeJson(wireOf(error), {
    status,
    headers: {
      ...(retryAfter === undefined ? {} : { "retry-after": String(Math.max(0, Math.ceil(retryAfter))) }),
      ...headers
    }
  })
}

/** The parameter or field a decode issue is about, and what was wrong with it. */
const describeDecodeError = (e: HttpApiError.HttpApiDecodeError): string => {
  const issue = e.issues[0]
  if (!issue) return "The request is not valid"
  const where = issue.path.length > 0 ? issue.path.map(String).join(".") : "request"
  // a field the body does not declare, where the body refuses those (Schemas.ts, refusingUnknownFields)
  if (issue._tag === "Unexpected") return `Unknown field '${where}': ${issue.message.replace(/^is unexpected, expected: /, "this object takes ")}`
  return `Invalid value for '${where}': ${issue.message}`
}

const fromRequestError = (e: HttpServerError.RequestError) => {
  const detail = String((e.cause as { message?: unknown } | undefined)?.message ?? e.description ?? "")
  if (/too large|size|limit/i.test(detail)) {
    return errorResponse(new PayloadTooLarge({ message: "The request body is too large" }))
  }
  return errorResponse(new BadRequest({ message: `The request body could not be read as JSON${detail ? `: ${detail}` : ""}` }))
}

/** The PostgreSQL error code behind an SqlError defect. */
const sqlErrorCode = (defect: unknown): unknown =>
  (defect as { _tag?: string } | undefined)?._tag === "SqlError"
    ? (defect as { cause?: { code?: unknown } }).cause?.code
    : undefined

/** PostgreSQL's "invalid byte sequence" and "untranslatable character": the client's text, not our fault. */
const isUnstorableText = (defect: unknown) => {
  const code = sqlErrorCode(defect)
  return code === "22021" || code === "22P05"
}

/** PostgreSQL's "canceling statement due to user request": a query cancelled with its request. */
const isCancelledQuery = (defect: unknown) => sqlErrorCode(defect) === "57014"

/** Which methods a path would accept: a known path asked with another method answers 405. */
export type AllowedMethods = (path: string) => ReadonlyArray<string>

/**
 * Turns a failure of a request into its answer. Client-facing errors answer as themselves; the
 * framework's failures are rewritten; a database that cannot be reached is an outage, answered
 * 503 with `Retry-After` (Db/Outages.ts), and so is a transaction that kept losing to concurrent
 * ones through all its retries (Db/Conflicts.ts); anything else is a defect: logged with its
 * cause, answered 500 without internals.
 */
export const respondToCause = (allowedMethods: AllowedMethods) => (cause: Cause.Cause<unknown>) =>
  Effect.gen(function*() {
    // HttpApiBuilder reads bodies with `orDie`: malformed JSON arrives as a defect, so look at
    // defects as well as failures
    const failure = Option.orElse(Cause.failureOption(cause), () => Cause.dieOption(cause))
    if (Option.isSome(failure)) {
      const e = failure.value
      if (isApiError(e)) return errorResponse(e)
      if (e instanceof HttpApiError.HttpApiDecodeError) return errorResponse(new BadRequest({ message: describeDecodeError(e) }))
      if (HttpServerError.isServerError(e)) {
        if (e._tag === "RouteNotFound") return routeNotFound(e.request, allowedMethods)
        if (e._tag === "RequestError") return fromRequestError(e)
      }
    }
    const outage = outageOf(cause)
    if (Option.isSome(outage)) {
      // an outage is logged once, by DatabaseOutages, not with a stack trace per request
      yield* Effect.flatMap(DatabaseOutages, (outages) => outages.answered(outage.value))
      return errorResponse(new DatabaseUnavailable({ message: "The database is unavailable: try again shortly", retryAfter: retryAfterSeconds }))
    }
    if (persistedConflict(Cause.defects(cause))) {
      // the load's doing, not a bug: no stack trace, but an operator should see it happen
      yield* Effect.logWarning("a write kept conflicting with concurrent ones through its retries: answered 503")
      return errorResponse(
        new DatabaseUnavailable({ message: "The database is busy with conflicting changes: try again shortly", retryAfter: conflictRetryAfterSeconds })
      )
    }
    const defect = Cause.dieOption(cause)
    if (Option.exists(defect, isUnstorableText)) {
      // the schemas refuse such text with the field's name; this is the net under them
      return errorResponse(new BadRequest({ message: "The request holds text the registry cannot store (NUL or invalid characters)" }))
    }
    if (Cause.isInterruptedOnly(cause) || (Cause.isInterrupted(cause) && Option.exists(defect, isCancelledQuery))) {
      // the client went away (its query cancelled with it): nobody will read this answer
      return errorResponse(new ClientClosedRequest({ message: "The request was cancelled" }))
    }
    yield* Effect.logError("unhandled failure", cause)
    return errorResponse(new InternalError({ message: "The service failed to answer this request" }))
  })

const routeNotFound = (request: HttpServerRequest.HttpServerRequest, allowedMethods: AllowedMethods) => {
  const path = request.url.split("?")[0] ?? "/"
  const allowed = allowedMethods(path)
  return allowed.length > 0
    ? errorResponse(
      new MethodNotAllowed({ message: `${request.method} is not allowed on ${path}; use ${allowed.join(", ")}` }),
      { allow: allowed.join(", ") }
    )
    : errorResponse(new NotFound({ message: `No route for ${request.method} ${path}` }))
}
