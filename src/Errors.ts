/**
 * Domain failures (services, repositories, clients) become the client-facing class the table
 * below names for them, with their message: a feature's handlers apply `answer` and can fail only
 * with the classes their endpoints declare. Those classes (Domain/ApiErrors.ts) encode as their
 * wire form; whatever no handler answered goes through the edge's funnel (Http/Failures.ts).
 */
import { HttpEffect, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { Effect } from "effect"
import {
  ArchiveMissing,
  BadRequest,
  Conflict,
  DatabaseUnavailable,
  Forbidden,
  IdempotencyKeyInProgress,
  IdempotencyKeyReused,
  InternalError,
  InvalidSignature,
  InvalidToken,
  InvalidVcsToken,
  InvalidVideo,
  isApiError,
  LastOwner,
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
import { retryAfterOf } from "./Http/Failures.ts"

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

/**
 * Fails with the client-facing `error`, and sets its `Retry-After` on the answer when it has one.
 * HttpApi encodes a handler's (or an authentication middleware's) error inside the route, from the
 * endpoint's error schemas, where the wait is a service-only field: the header is added as the
 * answer leaves.
 */
export const failAnswered = <E>(error: E): Effect.Effect<never, E, HttpServerRequest.HttpServerRequest> => {
  const retryAfter = isApiError(error) ? retryAfterOf(error) : undefined
  return retryAfter === undefined
    ? Effect.fail(error)
    : Effect.andThen(
      HttpEffect.appendPreResponseHandler((_request, response) => Effect.succeed(HttpServerResponse.setHeader(response, "retry-after", retryAfter))),
      Effect.fail(error)
    )
}

/** Answers a handler's domain failures with their client-facing classes (the table above). */
export const answer = <A, E extends { readonly _tag: string; readonly message: string }, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Answered<E>, R | HttpServerRequest.HttpServerRequest> =>
  Effect.catch(effect, (e) => {
    const Answer = (answers as Record<string, new(props: { message: string; retryAfter?: number }) => unknown>)[e._tag]
    if (Answer === undefined) return Effect.fail(e as Answered<E>)
    const retryAfter = (e as { readonly retryAfterSeconds?: number }).retryAfterSeconds
    return failAnswered(new Answer(retryAfter === undefined ? { message: e.message } : { message: e.message, retryAfter }) as Answered<E>)
  })

