/**
 * What a media vendor's refusal or failure means for our caller (CONTRACT.md, "Media proxy"):
 * the caller's own mistakes come back as theirs, our credentials and the vendor's outages as
 * upstream errors. Both vendor clients answer with these, so both proxies fail alike.
 */
import type { HttpClientError } from "@effect/platform"
import { Clock, Effect } from "effect"
import { BadRequest, NotFound, RateLimited, ServiceUnavailable, UpstreamError, UpstreamTimeout } from "../Errors.ts"
import { retryAfterSeconds } from "../Repohost/Client.ts"

export type VendorFailure = BadRequest | NotFound | RateLimited | UpstreamError | UpstreamTimeout

/** How long to wait when a vendor rate-limits without saying for how long. */
const defaultRetryAfterSeconds = 60

/** The human text of a vendor's error body: `message`, `error.message`, `detail`, or `error`. */
export const vendorMessage = (body: string): string | undefined => {
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    const text = body.trim()
    return text !== "" && text.length <= 500 && !text.startsWith("<") ? text : undefined
  }
  if (typeof parsed !== "object" || parsed === null) return undefined
  const o = parsed as Record<string, unknown>
  const nested = typeof o.error === "object" && o.error !== null ? (o.error as Record<string, unknown>).message : undefined
  const data = typeof o.data === "object" && o.data !== null ? (o.data as Record<string, unknown>).message : undefined
  for (const candidate of [o.message, nested, data, o.detail, o.error]) {
    if (typeof candidate === "string" && candidate.trim() !== "") return candidate.trim().slice(0, 500)
  }
  return undefined
}

/** A non-2xx vendor answer as the caller's answer. */
export const fromVendorStatus = (
  vendor: string,
  status: number,
  headers: Readonly<Record<string, string | undefined>>,
  body: string
): Effect.Effect<never, VendorFailure> =>
  Effect.gen(function*() {
    const message = vendorMessage(body)
    if (status === 400 || status === 422) {
      return yield* new BadRequest({ message: message ?? `The ${vendor} refused the request` })
    }
    if (status === 404) return yield* new NotFound({ message: message ?? `The ${vendor} does not know this task` })
    if (status === 429) {
      const retryAfter = retryAfterSeconds(headers, yield* Clock.currentTimeMillis) ?? defaultRetryAfterSeconds
      return yield* new RateLimited({ message: `The ${vendor} is rate-limiting requests; retry later`, retryAfter })
    }
    if (status === 401 || status === 403) {
      yield* Effect.logError(`the ${vendor} refused the service's credentials (${status})`)
      return yield* new UpstreamError({ message: `The ${vendor} refused the service's credentials` })
    }
    yield* Effect.logWarning(`the ${vendor} answered ${status}`)
    return yield* new UpstreamError({ message: `The ${vendor} failed to answer (status ${status})` })
  })

/** The vendor could not be reached, or its answer could not be read. */
export const fromTransportError = (vendor: string) => (e: HttpClientError.HttpClientError) =>
  Effect.logWarning(`the ${vendor} could not be reached: ${e.message}`).pipe(
    Effect.zipRight(Effect.fail(new UpstreamError({ message: `The ${vendor} could not be reached` })))
  )

/** The vendor did not answer in time. */
export const vendorTimeout = (vendor: string, millis: number) =>
  new UpstreamTimeout({
    message: `The ${vendor} did not answer within ${millis < 1000 ? `${millis} ms` : `${Math.round(millis / 1000)} s`}`
  })

/** Live mode without the settings a vendor needs: say which ones to set. */
export const vendorNotConfigured = (vendor: string, settings: ReadonlyArray<string>) =>
  new ServiceUnavailable({
    code: "vendor_not_configured",
    message: `The ${vendor} is not configured: set ${settings.join(" and ")} (or VENDOR_MODE=simulated to try it offline)`
  })
