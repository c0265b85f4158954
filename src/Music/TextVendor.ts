/**
 * The music vendor's text to music: `POST <MUSICVENDOR_BASE_URL>/t2m/generate` with a small
 * URL-encoded form (`prompt`, and `duration` when above 0, as the host's music node sends it),
 * answered with an NDJSON stream like video to music's. A request of a few fields needs none of
 * the upload machinery of Vendor.ts: the vendor must answer within the timeout, and its failures
 * mean what they mean for every vendor call (Vendors/Failure.ts). With VENDOR_MODE=simulated the
 * built-in stand-in (Simulated.ts) answers, offline.
 */
import { HttpClient, HttpClientRequest } from "effect/http"
import { NodeHttpClient } from "@effect/platform-node"
import { Context, Effect, Layer, Option, type Scope, Stream } from "effect"
import { AppConfig } from "../Config.ts"
import type { TextToMusicRequest } from "../Domain/Media.ts"
import { span } from "../Tracing.ts"
import { measuredVendor } from "../Observability/Metrics.ts"
import { simulatedTextAnswer } from "./Simulated.ts"
import { VendorStreamError } from "./Vendor.ts"
import { fromTransportError, fromVendorStatus, type VendorFailure, VendorTimedOut, VendorUnconfigured } from "../Vendors/Failure.ts"

const vendorName = "music vendor"

export interface TextMusicVendorShape {
  /** Fails when the vendor cannot be asked at all (live mode without its settings). */
  readonly ready: Effect.Effect<void, VendorUnconfigured>
  /** Starts a generation: the vendor's NDJSON body once it answered 2xx; the exchange is aborted when the scope closes. */
  readonly generate: (
    form: TextToMusicRequest
  ) => Effect.Effect<Stream.Stream<Uint8Array, VendorStreamError>, VendorFailure | VendorUnconfigured, Scope.Scope>
}

/** The form's fields as the node sends them: `duration` only when the model is not left to decide. */
const fieldsOf = (form: TextToMusicRequest): Record<string, string> => ({
  prompt: form.prompt,
  ...(form.duration !== undefined && form.duration > 0 ? { duration: String(form.duration) } : {})
})

const makeLive: Effect.Effect<TextMusicVendorShape, never, AppConfig | HttpClient.HttpClient> = Effect.gen(function*() {
  const config = yield* AppConfig
  const client = (yield* HttpClient.HttpClient).pipe(measuredVendor("musicvendor"))
  const { apiKey, baseUrl } = config.musicVendor
  const timeoutMillis = config.vendorTimeoutMillis
  const missing = [
    ...(Option.isNone(baseUrl) ? ["MUSICVENDOR_BASE_URL"] : []),
    ...(Option.isNone(apiKey) ? ["MUSICVENDOR_API_KEY"] : [])
  ]
  const ready: Effect.Effect<void, VendorUnconfigured> = missing.length > 0
    ? Effect.fail(new VendorUnconfigured({ vendor: vendorName, settings: missing }))
    : Effect.void
  const timedOut = () => Effect.fail(new VendorTimedOut({ vendor: vendorName, millis: timeoutMillis }))

  const generate = (form: TextToMusicRequest) =>
    Effect.gen(function*() {
      yield* ready
      const request = HttpClientRequest.post(`${Option.getOrThrow(baseUrl)}/t2m/generate`).pipe(
        HttpClientRequest.bearerToken(Option.getOrThrow(apiKey)),
        HttpClientRequest.setHeader("accept", "application/x-ndjson"),
        HttpClientRequest.bodyUrlParams(fieldsOf(form))
      )
      const response = yield* HttpClient.withScope(client).execute(request).pipe(
        Effect.catch(fromTransportError(vendorName)),
        Effect.timeoutOrElse({ duration: timeoutMillis, orElse: timedOut })
      )
      if (response.status < 200 || response.status >= 300) {
        const text = yield* response.text.pipe(Effect.timeout(timeoutMillis), Effect.orElseSucceed(() => ""))
        return yield* fromVendorStatus(vendorName, response.status, response.headers, text.slice(0, 64 * 1024))
      }
      return response.stream.pipe(
        Stream.mapError((e) => new VendorStreamError({ reason: `the music vendor stream broke off: ${e.message}` }))
      )
    })

  return { ready, generate }
})

const makeSimulated: TextMusicVendorShape = {
  ready: Effect.void,
  generate: (form) => Effect.succeed(simulatedTextAnswer(form))
}

/** Text to music at the vendor: the live client, or the simulated one when VENDOR_MODE=simulated. */
export class TextMusicVendor extends Context.Service<TextMusicVendor>()("TextMusicVendor", {
  make: Effect.flatMap(AppConfig, (config) => config.vendorMode === "simulated" ? Effect.succeed(makeSimulated) : makeLive).pipe(
    Effect.map((vendor): TextMusicVendorShape => ({
      ready: vendor.ready,
      generate: (form) => vendor.generate(form).pipe(span("TextMusicVendor.generate"))
    }))
  )
}) {
  static readonly layerWithoutDependencies = Layer.effect(TextMusicVendor, TextMusicVendor.make)
  static readonly layer = TextMusicVendor.layerWithoutDependencies.pipe(Layer.provide(NodeHttpClient.layerUndici))
}
