/**
 * How a handler answers its domain failures: each feature keeps, beside its handlers, a record
 * from the tags of the failures it may meet to the client-facing classes its endpoints declare
 * (ApiErrors.ts), and `answering(thatRecord)` gives it its `answer`. A failure the record does not
 * name reaches the handler unchanged, where the type checker refuses it. The failures several
 * features share (Errors.ts) have one mapping here, `sharedAnswers`, that those features spread
 * into their own.
 */
import { HttpEffect, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { Effect } from "effect"
import { type apiErrors, BadRequest, Conflict, Forbidden, isApiError, NodeBanned, NotFound, PublisherBanned } from "./ApiErrors.ts"

/** Which client-facing class answers each domain failure, by the failure's tag. */
export type Answers = { readonly [tag: string]: (typeof apiErrors)[number] }

/** The shared domain failures (Errors.ts), for every feature that meets them. */
export const sharedAnswers = {
  NodeMissing: NotFound,
  VersionMissing: NotFound,
  NotPublishersNode: NotFound,
  NodeIsBanned: NodeBanned,
  PublisherMissing: NotFound,
  PublisherIsBanned: PublisherBanned,
  NotPermitted: Forbidden,
  TransitionRefused: Conflict,
  IdMismatch: BadRequest
} as const satisfies Answers

/** What a failure `E` is answered with under `T`: its class there, or itself. */
export type Answered<E, T extends Answers> = E extends { readonly _tag: infer Tag } ?
  Tag extends keyof T ? InstanceType<T[Tag]> : E
  : E

/** The `Retry-After` of an answer that says how long to wait (RateLimited, DatabaseUnavailable). */
export const retryAfterOf = (error: unknown): string | undefined => {
  const retryAfter = (error as { readonly retryAfter?: unknown } | undefined)?.retryAfter
  return typeof retryAfter === "number" ? String(Math.max(0, Math.ceil(retryAfter))) : undefined
}

/**
 * Fails with the client-facing `error`, and sets its `Retry-After` on the answer when it has one.
 * HttpApi encodes a handler's (or an authentication middleware's) error inside the route, from the
 * endpoint's error schemas, where the wait is a service-only field: the header is added as the
 * answer leaves.
 */
export const failAnswered = <E>(
  error: E,
  headers?: Readonly<Record<string, string>>
): Effect.Effect<never, E, HttpServerRequest.HttpServerRequest> => {
  const retryAfter = isApiError(error) ? retryAfterOf(error) : undefined
  const all = { ...headers, ...(retryAfter === undefined ? {} : { "retry-after": retryAfter }) }
  return Object.keys(all).length === 0
    ? Effect.fail(error)
    : Effect.andThen(
      HttpEffect.appendPreResponseHandler((_request, response) => Effect.succeed(HttpServerResponse.setHeaders(response, all))),
      Effect.fail(error)
    )
}

type Construct = new(props: { message: string; retryAfter?: number; details?: unknown }) => unknown

/**
 * The `answer` of a feature whose failures `answers` maps: it fails with the client-facing class
 * of each failure named there (its message, and its wait as `retryAfter` where it has one).
 */
export const answering = <const T extends Answers>(answers: T) =>
<A, E extends { readonly _tag: string; readonly message: string }, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Answered<E, T>, R | HttpServerRequest.HttpServerRequest> =>
  Effect.catch(effect, (e) => {
    const Answer = (answers as unknown as Record<string, Construct | undefined>)[e._tag]
    if (Answer === undefined) return Effect.fail(e as Answered<E, T>)
    const retryAfter = (e as { readonly retryAfterSeconds?: number }).retryAfterSeconds
    // a failure may name headers of its answer (a quota's RateLimit-Policy and RateLimit)
    const headers = (e as { readonly answerHeaders?: Readonly<Record<string, string>> }).answerHeaders
    // a failure may carry the details its answer lists (the checks an archive failed)
    const details = (e as { readonly answerDetails?: unknown }).answerDetails
    return failAnswered(
      new Answer({
        message: e.message,
        ...(retryAfter === undefined ? {} : { retryAfter }),
        ...(details === undefined ? {} : { details })
      }) as Answered<E, T>,
      headers
    )
  })
