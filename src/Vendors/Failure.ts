/**
 * What a media vendor's refusal or failure means for our caller (CONTRACT.md, "Media proxy"):
 * the caller's own mistakes come back as theirs, our credentials and the vendor's outages as
 * upstream failures. Both vendor clients fail with these, so both proxies fail alike.
 */
import type { HttpClientError } from "effect/http"
import { Clock, Data, Effect, Option, Schema } from "effect"
import { BadRequest, NotFound, RateLimited, UpstreamError, UpstreamTimeout, VendorNotConfigured } from "../Domain/ApiErrors.ts"
import type { Answers } from "../Domain/Answers.ts"
import { retryAfterSeconds } from "./RetryAfter.ts"

/** The vendor refused the request as the caller's mistake (its 400 or 422), in its own words when it gave some. */
export class VendorRefused extends Data.TaggedError("VendorRefused")<{ readonly vendor: string; readonly said: string | undefined }> {
  override get message() {
    return this.said ?? `The ${this.vendor} refused the request`
  }
}

/** The vendor does not know the task (its 404). */
export class VendorLostTask extends Data.TaggedError("VendorLostTask")<{ readonly vendor: string; readonly said: string | undefined }> {
  override get message() {
    return this.said ?? `The ${this.vendor} does not know this task`
  }
}

export class VendorRateLimited extends Data.TaggedError("VendorRateLimited")<{
  readonly vendor: string
  readonly retryAfterSeconds: number
}> {
  override get message() {
    return `The ${this.vendor} is rate-limiting requests; retry later`
  }
}

/** The vendor failed, could not be reached, refused our credentials, or answered something unusable. */
export class VendorFailed extends Data.TaggedError("VendorFailed")<{ readonly vendor: string; readonly reason: string }> {
  override get message() {
    return `The ${this.vendor} ${this.reason}`
  }
}

export class VendorTimedOut extends Data.TaggedError("VendorTimedOut")<{ readonly vendor: string; readonly millis: number }> {
  override get message() {
    const { millis } = this
    return `The ${this.vendor} did not answer within ${millis < 1000 ? `${millis} ms` : `${Math.round(millis / 1000)} s`}`
  }
}

/** Live mode without the settings a vendor needs. */
export class VendorUnconfigured extends Data.TaggedError("VendorUnconfigured")<{
  readonly vendor: string
  readonly settings: ReadonlyArray<string>
}> {
  override get message() {
    return `The ${this.vendor} is not configured: set ${this.settings.join(" and ")} (or VENDOR_MODE=simulated to try it offline)`
  }
}

export type VendorFailure = VendorRefused | VendorLostTask | VendorRateLimited | VendorFailed | VendorTimedOut

/** How both proxies answer these: as the vendor did, in our classes (the wait as `Retry-After`). */
export const vendorAnswers = {
  VendorRefused: BadRequest,
  VendorLostTask: NotFound,
  VendorRateLimited: RateLimited,
  VendorFailed: UpstreamError,
  VendorTimedOut: UpstreamTimeout,
  VendorUnconfigured: VendorNotConfigured
} as const satisfies Answers

/** A non-blank text, trimmed. */
const Said = Schema.Trim.check(Schema.isNonEmpty())

/**
 * A vendor's JSON error body, as far as its human text goes: `message`, `error.message`,
 * `data.message`, `detail`, or `error`, the first that says something (decoding keeps only the
 * fields of the member that matched).
 */
const VendorErrorBody = Schema.fromJsonString(Schema.Union([
  Schema.Struct({ message: Said }),
  Schema.Struct({ error: Schema.Struct({ message: Said }) }),
  Schema.Struct({ data: Schema.Struct({ message: Said }) }),
  Schema.Struct({ detail: Said }),
  Schema.Struct({ error: Said })
]))
const decodeErrorBody = Schema.decodeUnknownOption(VendorErrorBody)

const saidIn = (body: typeof VendorErrorBody.Type): string =>
  "message" in body
    ? body.message
    : "detail" in body
    ? body.detail
    : "data" in body
    ? body.data.message
    : typeof body.error === "string"
    ? body.error
    : body.error.message

/** The human text of a vendor's error body: a JSON body's message, or a short plain-text body. */
export const vendorMessage = (body: string): string | undefined =>
  Option.match(decodeErrorBody(body), {
    onSome: (said) => saidIn(said).slice(0, 500),
    onNone: () => {
      const text = body.trim()
      return text !== "" && text.length <= 500 && !text.startsWith("<") && !isJson(text) ? text : undefined
    }
  })

const isJson = (text: string) => {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

/** A non-2xx vendor answer as a failure. */
export const fromVendorStatus = (
  vendor: string,
  status: number,
  headers: Readonly<Record<string, string | undefined>>,
  body: string
): Effect.Effect<never, VendorFailure> =>
  Effect.gen(function*() {
    if (status === 400 || status === 422) return yield* new VendorRefused({ vendor, said: vendorMessage(body) })
    if (status === 404) return yield* new VendorLostTask({ vendor, said: vendorMessage(body) })
    if (status === 429) {
      return yield* new VendorRateLimited({ vendor, retryAfterSeconds: retryAfterSeconds(headers, yield* Clock.currentTimeMillis) })
    }
    if (status === 401 || status === 403) {
      yield* Effect.logError(`the ${vendor} refused the service's credentials (${status})`)
      return yield* new VendorFailed({ vendor, reason: "refused the service's credentials" })
    }
    yield* Effect.logWarning(`the ${vendor} answered ${status}`)
    return yield* new VendorFailed({ vendor, reason: `failed to answer (status ${status})` })
  })

/** The vendor could not be reached, or its answer could not be read. */
export const fromTransportError = (vendor: string) => (e: HttpClientError.HttpClientError) =>
  Effect.logWarning(`the ${vendor} could not be reached: ${e.message}`).pipe(
    Effect.andThen(Effect.fail(new VendorFailed({ vendor, reason: "could not be reached" })))
  )
