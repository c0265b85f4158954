/**
 * The limit of anonymous reads (`RATE_LIMIT_ANONYMOUS_PER_MINUTE`): GET and HEAD requests that no
 * credential vouches for are counted per client address (an IPv6 address by its /64) in fixed
 * windows of a minute, opened by the address's first request. Their answers carry the IETF
 * `RateLimit-Policy` and `RateLimit` fields; past the limit they are answered 429 `rate_limited`
 * with `Retry-After`, the rest of the window.
 *
 * A request carrying `Authorization` or `X-API-KEY` goes through uncounted; if no authentication
 * verified its credential while it was answered (the endpoint does not look at credentials, or
 * the credential was wrong), it is counted afterwards like any anonymous read, and past the limit
 * its answer is replaced by the 429: a made-up header does not lift the limit.
 *
 * The count is this instance's, in memory: behind a balancer of N instances an address gets up to
 * N times the limit (docs/operating.md).
 */
import { HttpServerResponse } from "effect/http"
import { Effect } from "effect"
import { apiKeyHeader } from "../Domain/Auth.ts"
import { RateLimited } from "../Domain/ApiErrors.ts"
import { limitField, policyField, type RateLimitPolicy } from "../Domain/RateLimit.ts"
import { addressKey, clientAddress, makeWindows, type Window } from "./ClientAddress.ts"
import type { Exchange, Piece } from "./Exchange.ts"
import { errorResponse } from "./Failures.ts"

/** Addresses remembered at most (about 150 bytes each; `makeWindows` says which are forgotten). */
export const maxAddresses = 100_000

/** Probes a balancer or an orchestrator sends from one address, however often it is set to. */
const probes: ReadonlySet<string> = new Set(["/health", "/ready"])

const apiKey = apiKeyHeader.toLowerCase()

/** The piece, when the limit is on; no piece with a limit of 0. */
export const anonymousLimit = (options: {
  readonly perWindow: number
  readonly windowMillis: number
  readonly trustProxy: boolean
  readonly maxAddresses?: number
}): Piece | undefined => {
  const { perWindow, trustProxy, windowMillis } = options
  if (perWindow <= 0) return undefined
  const policy: RateLimitPolicy = { name: "anonymous", quota: perWindow, unit: "requests", windowSeconds: windowMillis / 1000 }
  const policyHeader = policyField(policy)
  const windows = makeWindows({ windowMillis, maxAddresses: options.maxAddresses ?? maxAddresses })

  const count = (exchange: Exchange, now: number) => windows.count(addressKey(clientAddress(exchange.request, trustProxy)), now)
  const fieldsOf = (window: Window, now: number) => ({
    "ratelimit-policy": policyHeader,
    "ratelimit": limitField(policy, perWindow - window.count, (window.started + windowMillis - now) / 1000)
  })
  /** The answer to a read past the limit, or the read's own answer with the fields. */
  const answerOf = (window: Window, now: number, response?: HttpServerResponse.HttpServerResponse) => {
    const fields = fieldsOf(window, now)
    if (window.count <= perWindow) return HttpServerResponse.setHeaders(response!, fields)
    const wait = Math.max(1, Math.ceil((window.started + windowMillis - now) / 1000))
    return errorResponse(
      new RateLimited({
        message: `Too many anonymous requests from this address (at most ${perWindow} in ${windowMillis / 1000} s): ` +
          `try again in ${wait} s, authenticate, or read the catalogue in bulk from its snapshot and change feed`,
        retryAfter: wait
      }),
      fields
    )
  }

  return (next) => (exchange) => {
    if ((exchange.method !== "GET" && exchange.method !== "HEAD") || (exchange.route !== undefined && probes.has(exchange.route.pattern))) {
      return next(exchange)
    }
    const headers = exchange.incoming.headers
    if (headers.authorization === undefined && headers[apiKey] === undefined) {
      const now = Date.now()
      const window = count(exchange, now)
      return window.count > perWindow
        ? Effect.succeed(answerOf(window, now))
        : Effect.map(next(exchange), (response) => answerOf(window, now, response))
    }
    // a credential: counted only if no authentication verified it while the request was answered
    return Effect.map(next(exchange), (response) => {
      if (exchange.userId !== undefined || exchange.tokenId !== undefined) return response
      const now = Date.now()
      return answerOf(count(exchange, now), now, response)
    })
  }
}
