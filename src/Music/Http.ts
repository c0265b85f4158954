/**
 * `POST /proxy/musicvendor/v2m/generate`: the body is read here as a stream (the framework never
 * buffers an upload), then Music relays the vendor's answer. `POST /proxy/musicvendor/t2m/generate`
 * takes a small form the framework decodes, and is relayed alike.
 */
import { HttpApiBuilder } from "effect/http-api"
import { HttpServerResponse } from "effect/http"
import { Effect, Layer, type Stream } from "effect"
import { MusicProxyApi } from "./Api.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
import { AppConfig } from "../Config.ts"
import { maxVideoBytes } from "../Domain/Media.ts"
import { respondToCause } from "../Http/Failures.ts"
import { formContentType, readVideoForm, spoolDirOf } from "./Form.ts"
import { Music } from "./Service.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import { vendorAnswers } from "../Vendors/Failure.ts"
import { BadRequest, InvalidVideo, PayloadTooLarge, UnsupportedMediaType, VideoTooLong } from "../Domain/ApiErrors.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({
  ...sharedAnswers,
  ...vendorAnswers,
  FormInvalid: BadRequest,
  FormNotAccepted: UnsupportedMediaType,
  FormTooLarge: PayloadTooLarge,
  VideoTooLarge: PayloadTooLarge,
  VideoUnreadable: InvalidVideo,
  VideoOverlong: VideoTooLong
})

/** Failures answered here, before any method routing: no path has other methods to offer. */
const answerFailure = respondToCause(() => [])

/** This folder's groups, under what every endpoint shares: its handlers are built against these alone. */
const api = registryApi(MusicProxyApi)

const MusicProxyLive = HttpApiBuilder.group(api, "musicProxy", (handlers) =>
  Effect.gen(function*() {
    const music = yield* Music
    const { dataDir, vendorMode } = yield* AppConfig
    const tmpDir = spoolDirOf(dataDir)
    const modeHeaders: Record<string, string> = vendorMode === "simulated" ? { "x-vendor-mode": "simulated" } : {}

    const streamed = (body: Stream.Stream<Uint8Array>) =>
      HttpServerResponse.stream(body, {
        contentType: "application/x-ndjson",
        headers: { "cache-control": "no-cache", "x-accel-buffering": "no", ...modeHeaders }
      })

    return handlers.handle("generateTextToMusic", ({ payload }) =>
      answer(Effect.map(music.generateFromText(payload), streamed))).handleRaw("generateMusic", ({ request }) =>
      Effect.gen(function*() {
        const type = yield* formContentType(request)
        // refuse before reading: an upload is pointless when the vendor cannot be asked
        yield* music.ready
        const form = yield* readVideoForm(request, type, { tmpDir, maxFileBytes: maxVideoBytes })
        const body = yield* music.generate(form)
        return HttpServerResponse.stream(body, {
          contentType: "application/x-ndjson",
          headers: { "cache-control": "no-cache", "x-accel-buffering": "no", ...modeHeaders }
        })
      }).pipe(
        answer,
        // an answer before the upload has arrived whole closes the connection after a bounded
        // drain of the rest (RefusedBodies.ts)
        Effect.catchCause((cause) =>
          Effect.map(answerFailure(cause), (response) => HttpServerResponse.setHeaders(response, modeHeaders))
        )
      ))
  }))

/** This folder's handlers, with the services they use (src/App.ts provides what every feature shares). */
export const MusicHttp = MusicProxyLive.pipe(Layer.provide(Music.layer))
