/**
 * Failed authentications per client address (bearer JWTs, API keys, personal access tokens):
 * past `AUTH_FAILURE_LIMIT` in a window of `AUTH_FAILURE_WINDOW_SECONDS`, an address is refused
 * before any verification work until its window ends. The count is this instance's, in memory.
 */
import { HttpServerRequest } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Clock, Data, Effect } from "effect"
import { AppConfig } from "../Config.ts"

/**
 * Addresses remembered at most: past it the one that failed least recently is forgotten, so
 * that many addresses cannot grow the table without bound (about 100 bytes each).
 */
const maxAddresses = 100_000

export class TooManyFailures extends Data.TaggedError("TooManyFailures")<{ readonly retryAfterSeconds: number }> {
  override get message() {
    return `Too many failed authentications from this address: try again in ${Math.ceil(this.retryAfterSeconds)} s`
  }
}

/** The socket's peer, or with `trustProxy` the entry the proxy appended to `X-Forwarded-For`. */
export const clientAddress = (request: HttpServerRequest.HttpServerRequest, trustProxy: boolean): string => {
  const forwarded = trustProxy ? request.headers["x-forwarded-for"]?.split(",").at(-1)?.trim() : undefined
  return forwarded || (NodeHttpServerRequest.toIncomingMessage(request).socket.remoteAddress ?? "unknown")
}

interface Window {
  readonly started: number
  /** Attempts admitted in this window that have not succeeded (failed or still running). */
  attempts: number
}

/** An admitted attempt: give it back when it succeeds. */
export interface Admission {
  readonly giveBack: () => void
}

/**
 * The count of attempts per address in fixed windows (opened by an address's first attempt).
 * An attempt is counted when admitted, so that concurrent ones cannot all pass before any fails,
 * and given back when it succeeds.
 */
export const makeFailureWindows = (options: { readonly limit: number; readonly windowMillis: number; readonly maxAddresses: number }) => {
  const windows = new Map<string, Window>()

  const current = (address: string, now: number): Window => {
    const window = windows.get(address)
    if (window !== undefined && now - window.started < options.windowMillis) return window
    return { started: now, attempts: 0 }
  }

  return {
    /** Admits an attempt, or answers the seconds until the address's window ends. */
    admit: (address: string, now: number): Admission | TooManyFailures => {
      const window = current(address, now)
      if (window.attempts >= options.limit) {
        return new TooManyFailures({ retryAfterSeconds: (window.started + options.windowMillis - now) / 1000 })
      }
      window.attempts += 1
      // re-inserted: the map's order is then least recently failed first
      windows.delete(address)
      windows.set(address, window)
      if (windows.size > options.maxAddresses) windows.delete(windows.keys().next().value!)
      return {
        giveBack: () => {
          if (windows.get(address) === window) window.attempts -= 1
        }
      }
    },
    /** How many addresses are remembered. */
    size: () => windows.size
  }
}

export class AuthFailures extends Effect.Service<AuthFailures>()("AuthFailures", {
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const windows = makeFailureWindows({
      limit: config.auth.failureLimit,
      windowMillis: config.auth.failureWindowMillis,
      maxAddresses
    })

    return {
      /**
       * Runs an authentication unless the caller's address is over the limit; a success gives its
       * attempt back, a failure `isRefusal` names keeps it counted.
       */
      guard: <A, E, R>(attempt: Effect.Effect<A, E, R>, isRefusal: (e: E) => boolean) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const address = clientAddress(request, config.trustProxy)
          const admitted = windows.admit(address, yield* Clock.currentTimeMillis)
          if (admitted instanceof TooManyFailures) return yield* admitted
          return yield* attempt.pipe(
            Effect.onExit((exit) =>
              Effect.sync(() => {
                const refused = exit._tag === "Failure" && exit.cause._tag === "Fail" && isRefusal(exit.cause.error)
                if (!refused) admitted.giveBack()
              })
            )
          )
        })
    }
  })
}) {}
