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
import { simulatedTextAnswer } from "./Simulated.ts"
import { generationBody, liveMusicVendor, type VendorStreamError } from "./Vendor.ts"
import { fromTransportError, type VendorFailure, VendorTimedOut, VendorUnconfigured } from "../Vendors/Failure.ts"

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
  const { apiKey, baseUrl, client, ready, timeoutMillis } = yield* liveMusicVendor
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
      return yield* generationBody(response, timeoutMillis)
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
