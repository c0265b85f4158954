/**
 * Video to music: check the video (an upload's duration, from its container), ask the vendor, and
 * relay its NDJSON stream event by event, with keep-alive lines while it is silent. Text to music:
 * ask the vendor with the prompt, and relay its stream the same way.
 */
import { Context, Deferred, Effect, Layer, Option, type Stream } from "effect"
import { AppConfig } from "../Config.ts"
import type { MusicRequest, TextToMusicRequest } from "../Domain/Media.ts"
import { checkDuration } from "./VideoChecks.ts"
import { relayAnswer, type StreamBroken } from "./Events.ts"
import { MusicVendor, type VendorStreamError, type VendorUpload } from "./Vendor.ts"
import type { Forward } from "./Form.ts"
import type { VendorFailure } from "../Vendors/Failure.ts"
import { TextMusicVendor } from "./TextVendor.ts"
import { traced } from "../Tracing.ts"

/** What a stream that broke after its status line says in its final `error` event. */
const streamFailure = (e: VendorStreamError | StreamBroken) =>
  Effect.logWarning(`music vendor stream failed: ${e.message}`).pipe(
    Effect.as(
      e._tag === "StreamBroken"
        ? { code: e.code, message: e.message }
        : { code: "upstream_error", message: "The music vendor stream broke off" }
    )
  )

export class Music extends Context.Service<Music>()("Music", {
  make: Effect.gen(function*() {
    const vendor = yield* MusicVendor
    const textVendor = yield* TextMusicVendor
    const { streamKeepAliveMillis } = yield* AppConfig
    /** The answer's bytes for a vendor's body: its events relayed, a blank line after `streamKeepAliveMillis` of silence. */
    const relayed = (body: Stream.Stream<Uint8Array, VendorStreamError>) => relayAnswer(body, streamFailure, streamKeepAliveMillis)
    const generate = traced("Music.generate")(function*(request: MusicRequest) {
      const durationSeconds = request._tag === "File" ? Option.some(yield* checkDuration(request.file)) : Option.none()
      return relayed(yield* vendor.generate({ request, durationSeconds }))
    })
    return {
      /** Fails when the vendor cannot be asked at all: refuse before an upload is read. */
      ready: vendor.ready,
      /**
       * The answer's bytes: the vendor's events relayed, one JSON event per line, a blank line
       * after `streamKeepAliveMillis` of silence. The vendor exchange ends with the scope.
       */
      generate,
      /**
       * `generate` for a form still to be read by `read`. In live mode a video whose first bytes
       * state an acceptable duration goes to the vendor as it arrives, never to disk (Form.ts),
       * and the vendor's form is completed once the client's form was read whole and is valid;
       * a vendor refusing meanwhile stops the reading. Any other video is spooled and checked
       * whole before the vendor sees any of it.
       */
      generateUpload: <E, R>(read: (forward: Option.Option<Forward>) => Effect.Effect<MusicRequest, E, R>) =>
        Effect.gen(function*() {
          const upload = vendor.upload
          if (upload === undefined) return yield* generate(yield* read(Option.none()))
          let started: VendorUpload | undefined
          const refusal = yield* Deferred.make<never, VendorFailure>()
          const forward: Forward = (file) =>
            Effect.gen(function*() {
              const opened = yield* upload(file)
              started = opened
              yield* Effect.forkScoped(Effect.catch(opened.refused, (e) => Deferred.fail(refusal, e)))
              return opened.sink
            })
          const request = yield* read(Option.some(forward)).pipe(Effect.raceFirst(Deferred.await(refusal)))
          if (started === undefined || request._tag !== "File") return yield* generate(request)
          return relayed(yield* started.finish(request.prompt))
        }),
      /** Text to music: the vendor's events relayed as `generate` relays them. */
      generateFromText: traced("Music.generateFromText")(function*(form: TextToMusicRequest) {
        return relayed(yield* textVendor.generate(form))
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(Music, Music.make)
  static readonly layer = Music.layerWithoutDependencies.pipe(Layer.provide([MusicVendor.layer, TextMusicVendor.layer]))
}
