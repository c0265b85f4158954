/**
 * Video to music: check the video (an upload's duration, from its container), ask the vendor, and
 * relay its NDJSON stream event by event, with keep-alive lines while it is silent. Text to music:
 * ask the vendor with the prompt, and relay its stream the same way.
 */
import { Context, Data, Effect, Layer, Option, type Stream } from "effect"
import { parseFile } from "music-metadata"
import { AppConfig } from "../Config.ts"
import { maxVideoSeconds, type MusicRequest, type TextToMusicRequest, type VideoFile } from "../Domain/Media.ts"
import { movieDuration } from "./MovieHeader.ts"
import { relayAnswer, type StreamBroken } from "./Events.ts"
import { MusicVendor, type VendorStreamError } from "./Vendor.ts"
import { TextMusicVendor } from "./TextVendor.ts"
import { traced } from "../Tracing.ts"

export class VideoUnreadable extends Data.TaggedError("VideoUnreadable")<{}> {
  override get message() {
    return "The uploaded file is not a video whose duration can be read (MP4/MOV, WebM/Matroska, ...)"
  }
}

export class VideoOverlong extends Data.TaggedError("VideoOverlong")<{ readonly seconds: number }> {
  override get message() {
    return `The video is ${Math.round(this.seconds)} s long; at most ${maxVideoSeconds} s (6 minutes) is accepted`
  }
}

const positive = (seconds: number | undefined) =>
  seconds !== undefined && Number.isFinite(seconds) && seconds > 0 ? Option.some(seconds) : Option.none()

/**
 * The video's duration in seconds, from its container: the format's duration as music-metadata
 * reads it, else the ISO movie header's (a silent MP4 has no format duration there). `None` when
 * the file is neither, or names no duration.
 */
export const videoDuration = (file: string): Effect.Effect<Option.Option<number>> =>
  Effect.tryPromise(() => parseFile(file, { duration: true, skipCovers: true })).pipe(
    Effect.map(({ format }) => positive(format.duration)),
    Effect.orElseSucceed(() => Option.none<number>()),
    Effect.flatMap((duration) => Option.isSome(duration) ? Effect.succeed(duration) : movieDuration(file))
  )

/** An uploaded video must be readable and at most `maxVideoSeconds` long. */
const checkDuration = (video: VideoFile) =>
  Effect.flatMap(videoDuration(video.path), (duration): Effect.Effect<number, VideoUnreadable | VideoOverlong> =>
    Option.isNone(duration)
      ? Effect.fail(new VideoUnreadable())
      : duration.value > maxVideoSeconds
      ? Effect.fail(new VideoOverlong({ seconds: duration.value }))
      : Effect.succeed(duration.value))

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
    return {
      /** Fails when the vendor cannot be asked at all: refuse before an upload is read. */
      ready: vendor.ready,
      /**
       * The answer's bytes: the vendor's events relayed, one JSON event per line, a blank line
       * after `streamKeepAliveMillis` of silence. The vendor exchange ends with the scope.
       */
      generate: traced("Music.generate")(function*(request: MusicRequest) {
        const durationSeconds = request._tag === "File" ? Option.some(yield* checkDuration(request.file)) : Option.none()
        return relayed(yield* vendor.generate({ request, durationSeconds }))
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
