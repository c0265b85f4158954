/**
 * The errors a client can act on: one class per stable code (CONTRACT.md, Conventions). A class
 * declares its HTTP status, and its wire form is exactly ErrorResponse with `error` fixed to its
 * code: `new VersionExists({ message })` encodes as `{"error": "version_exists", "message": ...}`
 * and that body decodes back to a `VersionExists`, so a handler, the OpenAPI document and a client
 * derived from the Api all tell the codes apart, and `catchTag` works on both sides.
 *
 * `apiErrors` lists every class: the table of codes in docs/api.md is generated from it.
 */
import type {} from "effect/http-api"
import { Schema, SchemaGetter } from "effect"

/** What every class below declares beside its schema. */
export interface ApiErrorInfo<Code extends string = string> {
  /** The stable snake_case code: the wire form's `error`. */
  readonly code: Code
  readonly status: number
  /** What the code means, for the table in docs/api.md and the OpenAPI document. */
  readonly description: string
}

/**
 * A field that travels inside the service only, never on the wire: absent when decoded, dropped
 * when encoded (RateLimited's `retryAfter` becomes a header).
 */
const serviceOnly = <S extends Schema.Top>(schema: S) =>
  Schema.optionalKey(Schema.toType(schema)).pipe(Schema.encodeTo(Schema.optionalKey(Schema.Unknown), {
    decode: SchemaGetter.omit(),
    encode: SchemaGetter.omit()
  }))

/**
 * Declares one error class: `class VersionExists extends ApiError<VersionExists>()("VersionExists",
 * { code: "version_exists", status: 409, description: "..." }) {}`. Its wire form is
 * `{error, message}`: `_tag` is filled in when a body is decoded and left out when an instance is
 * encoded, `error` is the code. `extra` fields travel inside the service only (`serviceOnly`).
 */
export const ApiError = <Self>() =>
<const Tag extends string, const Code extends string, const Extra extends Schema.Struct.Fields = {}>(
  tag: Tag,
  info: ApiErrorInfo<Code>,
  extra?: Extra
) =>
  Object.assign(
    Schema.Error<Self>(tag)(
      Schema.Struct({
        _tag: Schema.tagDefaultOmit(tag),
        error: Schema.tag(info.code),
        message: Schema.String,
        ...(extra ?? ({} as Extra))
      }).annotate({ identifier: tag }),
      { identifier: tag, description: info.description, httpApiStatus: info.status }
    ),
    { code: info.code, status: info.status, description: info.description }
  )

// --- 400 ---------------------------------------------------------------------------------------

export class BadRequest extends ApiError<BadRequest>()("BadRequest", {
  code: "bad_request",
  status: 400,
  description: "The request is malformed, or a parameter or field has a bad value; the message names it"
}) {}

export class InvalidVideo extends ApiError<InvalidVideo>()("InvalidVideo", {
  code: "invalid_video",
  status: 400,
  description: "The uploaded file is not a video whose duration can be read"
}) {}

export class VideoTooLong extends ApiError<VideoTooLong>()("VideoTooLong", {
  code: "video_too_long",
  status: 400,
  description: "The uploaded video is longer than 6 minutes"
}) {}

// --- 401 ---------------------------------------------------------------------------------------

export class Unauthorized extends ApiError<Unauthorized>()("Unauthorized", {
  code: "unauthorized",
  status: 401,
  description: "No valid bearer token: missing, malformed, expired or not verifiable"
}) {}

export class InvalidToken extends ApiError<InvalidToken>()("InvalidToken", {
  code: "invalid_token",
  status: 401,
  description: "The personal access token is not one of the publisher's (wrong or revoked), or the publish token of trusted publishing has expired or is not for the node"
}) {}

export class IdentityTokenRefused extends ApiError<IdentityTokenRefused>()("IdentityTokenRefused", {
  code: "identity_token_refused",
  status: 401,
  description:
    "Trusted publishing refused the CI identity token: the message says why and ends with the claim that did not hold, `(claim: aud)` (or `signature`, `kid`, `token`); the token is never echoed"
}) {}

// --- 403 ---------------------------------------------------------------------------------------

export class Forbidden extends ApiError<Forbidden>()("Forbidden", {
  code: "forbidden",
  status: 403,
  description: "The caller lacks the role this needs; the message says which"
}) {}

export class NodeBanned extends ApiError<NodeBanned>()("NodeBanned", {
  code: "node_banned",
  status: 403,
  description: "The node, or its publisher, is banned"
}) {}

export class PublisherBanned extends ApiError<PublisherBanned>()("PublisherBanned", {
  code: "publisher_banned",
  status: 403,
  description: "The publisher is banned: its nodes cannot be created or published"
}) {}

export class InvalidSignature extends ApiError<InvalidSignature>()("InvalidSignature", {
  code: "invalid_signature",
  status: 403,
  description: "The upload URL's signature is missing, or does not match its node, version and expiry"
}) {}

export class UrlExpired extends ApiError<UrlExpired>()("UrlExpired", {
  code: "url_expired",
  status: 403,
  description: "The upload URL has expired: publish again for a new one"
}) {}

export class InvalidVcsToken extends ApiError<InvalidVcsToken>()("InvalidVcsToken", {
  code: "invalid_vcs_token",
  status: 403,
  description: "The repository host refused VCS_TOKEN"
}) {}

export class RepositoryNotOwned extends ApiError<RepositoryNotOwned>()("RepositoryNotOwned", {
  code: "repository_not_owned",
  status: 403,
  description: "The VCS token's user does not administer the node's repository"
}) {}

// --- 404, 405 ------------------------------------------------------------------------------------

export class NotFound extends ApiError<NotFound>()("NotFound", {
  code: "not_found",
  status: 404,
  description: "No such record, or no such route"
}) {}

export class NoInstallableVersion extends ApiError<NoInstallableVersion>()("NoInstallableVersion", {
  code: "no_installable_version",
  status: 404,
  description: "The node has no installable version (or not the one asked for)"
}) {}

export class HostVersionUnsupported extends ApiError<HostVersionUnsupported>()("HostVersionUnsupported", {
  code: "host_version_unsupported",
  status: 409,
  description: "Versions of the node satisfy the range asked for, but none supports the caller's host version"
}) {}

export class UserNotFound extends ApiError<UserNotFound>()("UserNotFound", {
  code: "user_not_found",
  status: 404,
  description: "No such user: users are recorded when they first call the API"
}) {}

export class MethodNotAllowed extends ApiError<MethodNotAllowed>()("MethodNotAllowed", {
  code: "method_not_allowed",
  status: 405,
  description: "The path exists, but not with this method (`Allow` lists the methods it takes)"
}) {}

// --- 409 ---------------------------------------------------------------------------------------

export class Conflict extends ApiError<Conflict>()("Conflict", {
  code: "conflict",
  status: 409,
  description: "The request conflicts with the record's state: a move its state machine refuses, or a name given twice"
}) {}

export class NodeExists extends ApiError<NodeExists>()("NodeExists", {
  code: "node_exists",
  status: 409,
  description: "The node id is taken (by this or another publisher)"
}) {}

export class NodeDeleted extends ApiError<NodeDeleted>()("NodeDeleted", {
  code: "node_deleted",
  status: 409,
  description: "The node is deleted: ids of deleted nodes are not reused"
}) {}

export class VersionExists extends ApiError<VersionExists>()("VersionExists", {
  code: "version_exists",
  status: 409,
  description: "The node has, or had, this version, with other content: version numbers are never reused"
}) {}

export class VersionImmutable extends ApiError<VersionImmutable>()("VersionImmutable", {
  code: "version_immutable",
  status: 409,
  description: "The version has left Pending: its archive can no longer be replaced by other bytes"
}) {}

export class ArchiveMissing extends ApiError<ArchiveMissing>()("ArchiveMissing", {
  code: "archive_missing",
  status: 409,
  description: "The version has no uploaded archive, so it cannot become installable"
}) {}

export class NodeAlreadyClaimed extends ApiError<NodeAlreadyClaimed>()("NodeAlreadyClaimed", {
  code: "node_already_claimed",
  status: 409,
  description: "The node belongs to a publisher already"
}) {}

export class RepositoryNotRecognised extends ApiError<RepositoryNotRecognised>()("RepositoryNotRecognised", {
  code: "repository_not_recognised",
  status: 409,
  description: "The node's repository URL does not name a repository on the host this registry asks"
}) {}

export class PublisherExists extends ApiError<PublisherExists>()("PublisherExists", {
  code: "publisher_exists",
  status: 409,
  description: "The publisher id is taken"
}) {}

export class PublisherIdReserved extends ApiError<PublisherIdReserved>()("PublisherIdReserved", {
  code: "publisher_id_reserved",
  status: 409,
  description: "The publisher id is reserved for the registry itself"
}) {}

export class PublisherHasNodes extends ApiError<PublisherHasNodes>()("PublisherHasNodes", {
  code: "publisher_has_nodes",
  status: 409,
  description: "The publisher still has nodes that are not deleted: delete them first"
}) {}

export class LastOwner extends ApiError<LastOwner>()("LastOwner", {
  code: "last_owner",
  status: 409,
  description: "A publisher keeps at least one owner"
}) {}

export class IdempotencyKeyReused extends ApiError<IdempotencyKeyReused>()("IdempotencyKeyReused", {
  code: "idempotency_key_reused",
  status: 409,
  description: "The Idempotency-Key was used with another request body within 24 hours"
}) {}

export class IdempotencyKeyInProgress extends ApiError<IdempotencyKeyInProgress>()("IdempotencyKeyInProgress", {
  code: "idempotency_key_in_progress",
  status: 409,
  description: "A request with this Idempotency-Key is still running: retry later"
}) {}

// --- 413, 415, 416, 422, 429, 431, 499 ---------------------------------------------------------------------

export class CursorExpired extends ApiError<CursorExpired>()("CursorExpired", {
  code: "cursor_expired",
  status: 410,
  description: "The change feed no longer reaches back to this cursor: take the catalogue snapshot, then follow its cursor"
}) {}

export class PayloadTooLarge extends ApiError<PayloadTooLarge>()("PayloadTooLarge", {
  code: "payload_too_large",
  status: 413,
  description: "The body is over its limit (16 MiB of JSON, the archive size, 1024 MiB of video, 64 KiB of URL-encoded form)"
}) {}

export class RangeNotSatisfiable extends ApiError<RangeNotSatisfiable>()("RangeNotSatisfiable", {
  code: "range_not_satisfiable",
  status: 416,
  description: "The archive's Range starts past its end (Content-Range names its size)"
}) {}

export class UnsupportedMediaType extends ApiError<UnsupportedMediaType>()("UnsupportedMediaType", {
  code: "unsupported_media_type",
  status: 415,
  description: "The body's Content-Type is not one the endpoint takes"
}) {}

/** One automated check an uploaded archive failed: its stable name and what it found. */
export const FailedCheck = Schema.Struct({
  check: Schema.String.annotate({ description: "The check: readable_zip, entry_names, entry_count, uncompressed_size or has_files" }),
  message: Schema.String.annotate({ description: "What the check found" })
})

export class ArchiveRejected extends ApiError<ArchiveRejected>()("ArchiveRejected", {
  code: "archive_rejected",
  status: 422,
  description:
    "The uploaded archive failed the automated checks, each listed in `details`; nothing was stored and the version stays Pending for a corrected upload"
}, { details: Schema.optionalKey(Schema.Array(FailedCheck).annotate({ description: "Each check the archive failed (always sent)" })) }) {}

export class RateLimited extends ApiError<RateLimited>()("RateLimited", {
  code: "rate_limited",
  status: 429,
  description: "Too many anonymous reads (RATE_LIMIT_ANONYMOUS_PER_MINUTE) or failed authentications from the caller's address, or an upstream (the repository host, a vendor) is rate-limiting: wait `Retry-After` seconds"
}, {
  /** Seconds until the client may try again, sent as `Retry-After`. */
  retryAfter: serviceOnly(Schema.Finite)
}) {}

/** A customer's quota is used up (QUOTA_* settings, a site admin's overrides): refused before any vendor call. */
export class QuotaExceeded extends ApiError<QuotaExceeded>()("QuotaExceeded", {
  code: "quota_exceeded",
  status: 429,
  description: "A quota of the customer is used up (operations per day, tasks in flight, upload bytes per day): wait `Retry-After` seconds; `RateLimit-Policy` and `RateLimit` say which quota and what is left"
}, {
  /** Seconds until the quota has room again, sent as `Retry-After`. */
  retryAfter: serviceOnly(Schema.Finite)
}) {}

export class RequestTooLarge extends ApiError<RequestTooLarge>()("RequestTooLarge", {
  code: "request_too_large",
  status: 431,
  description: "The request line or headers are too large"
}) {}

export class RequestTimeout extends ApiError<RequestTimeout>()("RequestTimeout", {
  code: "request_timeout",
  status: 408,
  description: "The request did not arrive in time (HTTP_HEADERS_TIMEOUT_SECONDS, HTTP_REQUEST_TIMEOUT_SECONDS)"
}) {}

export class ClientClosedRequest extends ApiError<ClientClosedRequest>()("ClientClosedRequest", {
  code: "client_closed_request",
  status: 499,
  description: "The client went away before the answer (recorded in logs; nobody reads it)"
}) {}

// --- 5xx -----------------------------------------------------------------------------------------

export class InternalError extends ApiError<InternalError>()("InternalError", {
  code: "internal_error",
  status: 500,
  description: "The service failed: the cause is logged, the answer holds no internals"
}) {}

export class UpstreamError extends ApiError<UpstreamError>()("UpstreamError", {
  code: "upstream_error",
  status: 502,
  description: "A vendor failed, or refused the service's credentials: not the caller's fault"
}) {}

export class ServiceUnavailable extends ApiError<ServiceUnavailable>()("ServiceUnavailable", {
  code: "service_unavailable",
  status: 503,
  description: "A dependency (the database, the repository host) is down: try again later"
}) {}

export class DatabaseUnavailable extends ApiError<DatabaseUnavailable>()("DatabaseUnavailable", {
  code: "database_unavailable",
  status: 503,
  description: "The database cannot be reached (an outage, a restart of it), or a write kept conflicting with concurrent ones: try again after `Retry-After` seconds"
}, {
  /** Seconds until the client may try again, sent as `Retry-After`. */
  retryAfter: serviceOnly(Schema.Finite)
}) {}

export class VendorNotConfigured extends ApiError<VendorNotConfigured>()("VendorNotConfigured", {
  code: "vendor_not_configured",
  status: 503,
  description: "The vendor's settings are not set; the message names them"
}) {}

export class UpstreamTimeout extends ApiError<UpstreamTimeout>()("UpstreamTimeout", {
  code: "upstream_timeout",
  status: 504,
  description: "A vendor did not answer within VENDOR_TIMEOUT_SECONDS"
}) {}

/** Every class above, in the order of the table in docs/api.md. */
export const apiErrors = [
  BadRequest,
  InvalidVideo,
  VideoTooLong,
  Unauthorized,
  InvalidToken,
  IdentityTokenRefused,
  Forbidden,
  NodeBanned,
  PublisherBanned,
  InvalidSignature,
  UrlExpired,
  InvalidVcsToken,
  RepositoryNotOwned,
  NotFound,
  NoInstallableVersion,
  HostVersionUnsupported,
  UserNotFound,
  MethodNotAllowed,
  Conflict,
  NodeExists,
  NodeDeleted,
  VersionExists,
  VersionImmutable,
  ArchiveMissing,
  NodeAlreadyClaimed,
  RepositoryNotRecognised,
  PublisherExists,
  PublisherIdReserved,
  PublisherHasNodes,
  LastOwner,
  IdempotencyKeyReused,
  IdempotencyKeyInProgress,
  CursorExpired,
  PayloadTooLarge,
  UnsupportedMediaType,
  RangeNotSatisfiable,
  ArchiveRejected,
  RateLimited,
  QuotaExceeded,
  RequestTooLarge,
  ClientClosedRequest,
  InternalError,
  UpstreamError,
  ServiceUnavailable,
  DatabaseUnavailable,
  VendorNotConfigured,
  UpstreamTimeout,
  RequestTimeout
] as const

/** An instance of any class above. */
export type AnyApiError = InstanceType<(typeof apiErrors)[number]>

/** An instance of the class of `Tag`. */
export type ApiErrorInstance<Tag extends string = string> = Extract<AnyApiError, { readonly _tag: Tag }>

const infoByTag: ReadonlyMap<string, ApiErrorInfo> = new Map(apiErrors.map((error) => [error.identifier, error]))

/** Any instance of the classes above. */
export const isApiError = (u: unknown): u is AnyApiError => apiErrors.some((error) => u instanceof error)

/** The class of an instance: its code and status. */
export const infoOf = (e: AnyApiError): ApiErrorInfo => infoByTag.get(e._tag)!
