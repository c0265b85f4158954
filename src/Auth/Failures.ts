/**
 * Failed authentications per client address (bearer JWTs, API keys, personal access tokens):
 * every attempt is verified, and one that verifies always proceeds, so a stranger sharing the
 * address (a NAT, an office proxy) cannot lock its other users out. Failures are counted; past
 * `AUTH_FAILURE_LIMIT` in a window of `AUTH_FAILURE_WINDOW_SECONDS`, a failed attempt is answered
 * 429 with the rest of the window instead of its refusal. The count is this instance's, in memory.
 */
import { HttpServerRequest } from "effect/http"
import { Clock, Context, Data, Effect, Layer } from "effect"
import { AppConfig } from "../Config.ts"
import { addressKey, clientAddress, makeWindows } from "../Http/ClientAddress.ts"

/** Addresses remembered at most (`makeWindows` says which are forgotten). */
const maxAddresses = 100_000

export class TooManyFailures extends Data.TaggedError("TooManyFailures")<{ readonly retryAfterSeconds: number }> {
  override get message() {
    return `Too many failed authentications from this address: try again in ${Math.ceil(this.retryAfterSeconds)} s`
  }
}

/**
 * The count of failures per address (an IPv6 address by its /64, as every per-address limit) in
 * fixed windows opened by an address's first failure. A failure is counted when it happens, in
 * one synchronous step: of concurrent wrong guesses, however many are verified at once, the first
 * `limit` to fail get their refusal and the rest 429. Successes touch nothing: they neither count
 * nor reset the count (a valid credential of one's own must not unlock guessing), nor take a
 * place in the table.
 */
export const makeFailureWindows = (options: { readonly limit: number; readonly windowMillis: number; readonly maxAddresses: number }) => {
  const windows = makeWindows(options)
  return {
    /** Counts a failure: nothing while the address is within the limit, else the window's remaining time. */
    fail: (address: string, now: number): TooManyFailures | undefined => {
      const window = windows.count(addressKey(address), now)
      return window.count > options.limit
        ? new TooManyFailures({ retryAfterSeconds: (window.started + options.windowMillis - now) / 1000 })
        : undefined
    },
    /** How many addresses are remembered. */
    size: windows.size
  }
}

export class AuthFailures extends Context.Service<AuthFailures>()("AuthFailures", {
  make: Effect.gen(function*() {
    const config = yield* AppConfig
    const windows = makeFailureWindows({
      limit: config.auth.failureLimit,
      windowMillis: config.auth.failureWindowMillis,
      maxAddresses
    })

    return {
      /**
       * Runs an authentication, always: its success is the caller's whatever the address's count.
       * A failure `isRefusal` names is counted against the caller's address and, past the limit,
       * becomes `TooManyFailures`; other failures (the database down, a conflict) are not counted.
       */
      guard: <A, E, R>(attempt: Effect.Effect<A, E, R>, isRefusal: (e: E) => boolean) =>
        Effect.catchIf(attempt, isRefusal, (refusal) =>
          Effect.gen(function*() {
            const request = yield* HttpServerRequest.HttpServerRequest
            const over = windows.fail(clientAddress(request, config.trustProxy), yield* Clock.currentTimeMillis)
            return yield* (over ?? Effect.fail(refusal))
          }))
    }
  })
}) {
  static readonly layer = Layer.effect(AuthFailures, AuthFailures.make)
}
