/**
 * `POST /proxy/musicvendor/v2m/generate`: the body is read here as a stream (the framework never
 * buffers an upload), then Music relays the vendor's answer. `POST /proxy/musicvendor/t2m/generate`
 * takes a small form the framework decodes, and is relayed alike.
 */
import { HttpApiBuilder } from "effect/http-api"
import { HttpServerResponse } from "effect/http"
import { Effect, Exit, Layer, Option, Stream } from "effect"
import { MusicProxyApi } from "./Api.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
import { AppConfig } from "../Config.ts"
import { maxVideoBytes } from "../Domain/Media.ts"
import { respondToCause } from "../Http/Failures.ts"
import { formContentType, readVideoForm, spoolDirOf } from "./Form.ts"
import { Music } from "./Service.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import { vendorAnswers } from "../Vendors/Failure.ts"
import { BadRequest, InvalidVideo, PayloadTooLarge, QuotaExceeded, UnsupportedMediaType, VideoTooLong } from "../Domain/ApiErrors.ts"
import { CurrentUser } from "../Domain/Auth.ts"
import { Metering } from "../Customers/Metering.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({
  ...sharedAnswers,
  ...vendorAnswers,
  FormInvalid: BadRequest,
  FormNotAccepted: UnsupportedMediaType,
  FormTooLarge: PayloadTooLarge,
  VideoTooLarge: PayloadTooLarge,
  VideoUnreadable: InvalidVideo,
  VideoOverlong: VideoTooLong,
  OverQuota: QuotaExceeded
})

/** Failures answered here, before any method routing: no path has other methods to offer. */
const answerFailure = respondToCause(() => [])

/** What the request says it carries (Content-Length), for its usage event. */
const declaredBytes = (request: { readonly headers: Readonly<Record<string, string | undefined>> }) => {
  const declared = Number(request.headers["content-length"])
  return Number.isSafeInteger(declared) && declared > 0 ? declared : 0
}

/** This folder's groups, under what every endpoint shares: its handlers are built against these alone. */
const api = registryApi(MusicProxyApi)

const MusicProxyLive = HttpApiBuilder.group(api, "musicProxy", (handlers) =>
  Effect.gen(function*() {
    const music = yield* Music
    const metering = yield* Metering
    const { dataDir } = yield* AppConfig
    const tmpDir = spoolDirOf(dataDir)

    const streamed = (body: Stream.Stream<Uint8Array>) =>
      HttpServerResponse.stream(body, {
        contentType: "application/x-ndjson",
        headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
      })

    /** A generation's stream, metered from its start to its end: one task in flight while it runs. */
    const metered = <E, R>(operation: "video-to-music" | "text-to-music", bytesIn: number, generate: Effect.Effect<Stream.Stream<Uint8Array>, E, R>) =>
      Effect.gen(function*() {
        const user = yield* CurrentUser
        const meter = yield* metering.begin({ customerId: user.id, apiKeyId: user.apiKeyId }, operation, { holds: "stream" })
        let bytesOut = 0
        const generated = yield* generate.pipe(Effect.onError(() => meter.end("failed", { in: bytesIn })))
        return generated.pipe(
          Stream.tap((chunk) => Effect.sync(() => void (bytesOut += chunk.byteLength))),
          // once streaming, the vendor has worked: a broken stream keeps its count
          Stream.onExit((exit) => meter.end(Exit.isSuccess(exit) ? "succeeded" : "failed", { in: bytesIn, out: bytesOut }, true))
        )
      })

    return handlers.handle("generateTextToMusic", ({ payload, request }) =>
      answer(Effect.map(metered("text-to-music", declaredBytes(request), music.generateFromText(payload)), streamed))).handleRaw("generateMusic", ({ request }) =>
      Effect.gen(function*() {
        const type = yield* formContentType(request)
        // refuse before reading: an upload is pointless when the vendor cannot be asked
        yield* music.ready
        // the quota before the upload is read: a refused caller sends no video for nothing
        const body = yield* metered("video-to-music", declaredBytes(request), Effect.gen(function*() {
          // live mode forwards a video that states its duration up front to the vendor as it
          // arrives (Service.ts generateUpload)
          return yield* music.generateUpload((forward) =>
            readVideoForm(request, type, { tmpDir, maxFileBytes: maxVideoBytes, ...(Option.isSome(forward) ? { forward: forward.value } : {}) })
          )
        }))
        return streamed(body)
      }).pipe(
        answer,
        // an answer before the upload has arrived whole closes the connection after a bounded
        // drain of the rest (RefusedBodies.ts)
        Effect.catchCause(answerFailure)
      ))
  }))

/** This folder's handlers, with the services they use (src/App.ts provides what every feature shares). */
export const MusicHttp = MusicProxyLive.pipe(Layer.provide([Music.layer, Metering.layer]))
