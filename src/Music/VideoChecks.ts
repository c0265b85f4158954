/**
 * What an uploaded video must be: readable, and at most `maxVideoSeconds` long. Checked on the
 * first bytes while they arrive when those state the duration (Form.ts), else on the spooled file.
 */
import { Data, Effect, Option } from "effect"
import { parseFile } from "music-metadata"
import { maxVideoSeconds, type VideoFile } from "../Domain/Media.ts"
import { movieDuration } from "./MovieHeader.ts"

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

/** Why a video that states `seconds` is refused, if it is: more than `maxVideoSeconds`. */
export const overlong = (seconds: number): Option.Option<VideoOverlong> =>
  seconds > maxVideoSeconds ? Option.some(new VideoOverlong({ seconds })) : Option.none()

/** A spooled video: readable, and at most `maxVideoSeconds` long. */
export const checkDuration = (video: VideoFile): Effect.Effect<number, VideoUnreadable | VideoOverlong> =>
  Effect.flatMap(videoDuration(video.path), (duration): Effect.Effect<number, VideoUnreadable | VideoOverlong> =>
    Option.isNone(duration)
      ? Effect.fail(new VideoUnreadable())
      : Option.match(overlong(duration.value), { onNone: () => Effect.succeed(duration.value), onSome: Effect.fail }))
