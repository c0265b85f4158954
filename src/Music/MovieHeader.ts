/**
 * The duration an ISO base media file (MP4, MOV, M4V) states in its movie header (`moov/mvhd`).
 *
 * music-metadata 11, the last line that runs on Node 20, gives a format duration only when the
 * file has an audio track; a silent video, the usual input of video-to-music, has none. The movie
 * header names the whole presentation's length, so it is read here directly. Boxes are walked by
 * their headers, never read whole: `moov` may come after gigabytes of `mdat`.
 */
import { Effect, Option } from "effect"
import type { UnknownError } from "effect/Cause"
import * as fs from "node:fs/promises"

interface Box {
  readonly type: string
  readonly start: number
  readonly headerBytes: number
  readonly end: number
}

type Handle = fs.FileHandle

const readAt = (file: Handle, position: number, length: number) =>
  Effect.tryPromise(async () => {
    const buffer = Buffer.alloc(length)
    const { bytesRead } = await file.read(buffer, 0, length, position)
    return buffer.subarray(0, bytesRead)
  })

/** The box whose header starts at `start`, or `None` past `limit` or at a malformed header. */
const boxAt = (file: Handle, start: number, limit: number) =>
  Effect.map(readAt(file, start, 16), (head): Option.Option<Box> => {
    if (head.length < 8) return Option.none()
    const size32 = head.readUInt32BE(0)
    const type = head.toString("latin1", 4, 8)
    const [size, headerBytes] = size32 === 1 && head.length >= 16
      ? [Number(head.readBigUInt64BE(8)), 16]
      : size32 === 0
      ? [limit - start, 8]
      : [size32, 8]
    return size < headerBytes || start + size > limit ? Option.none() : Option.some({ type, start, headerBytes, end: start + size })
  })

/** The first child of type `type` among the boxes between `from` and `to`. */
const find = (
  file: Handle,
  type: string,
  from: number,
  to: number
): Effect.Effect<Option.Option<Box>, UnknownError> =>
  Effect.flatMap(boxAt(file, from, to), (box) =>
    Option.isNone(box) || box.value.type === type ? Effect.succeed(box) : find(file, type, box.value.end, to))

/** `mvhd`: version 0 holds 32-bit times, version 1 holds 64-bit ones; duration / timescale. */
const movieSeconds = (file: Handle, mvhd: Box) =>
  Effect.map(readAt(file, mvhd.start + mvhd.headerBytes, 32), (body) => {
    const version = body[0]
    const [timescale, duration] = version === 1 && body.length >= 32
      ? [body.readUInt32BE(20), Number(body.readBigUInt64BE(24))]
      : version === 0 && body.length >= 20
      ? [body.readUInt32BE(12), body.readUInt32BE(16)]
      : [0, 0]
    return timescale > 0 && duration > 0 ? Option.some(duration / timescale) : Option.none<number>()
  })

/** The movie header's duration in seconds; `None` when the file is no ISO media file. */
export const movieDuration = (path: string): Effect.Effect<Option.Option<number>> =>
  Effect.acquireUseRelease(
    Effect.tryPromise(() => fs.open(path, "r")),
    (file) =>
      Effect.gen(function*() {
        const { size } = yield* Effect.tryPromise(() => file.stat())
        const moov = yield* find(file, "moov", 0, size)
        if (Option.isNone(moov)) return Option.none()
        const mvhd = yield* find(file, "mvhd", moov.value.start + moov.value.headerBytes, moov.value.end)
        return Option.isNone(mvhd) ? Option.none() : yield* movieSeconds(file, mvhd.value)
      }),
    (file) => Effect.ignore(Effect.tryPromise(() => file.close()))
  ).pipe(Effect.orElseSucceed(() => Option.none<number>()))
