/**
 * The duration an ISO base media file (MP4, MOV, M4V) states in its movie header (`moov/mvhd`),
 * read from a file on disk, or from the first bytes of an upload while the rest is still arriving.
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

/**
 * The box whose header is `head` (at least 8 bytes when there is one), starting at `start` of a
 * file or region ending at `limit`; `None` at a malformed header or one reaching past `limit`.
 */
const boxHeader = (head: Uint8Array, start: number, limit: number): Option.Option<Box> => {
  if (head.length < 8) return Option.none()
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength)
  const size32 = view.getUint32(0)
  const type = String.fromCharCode(head[4]!, head[5]!, head[6]!, head[7]!)
  const [size, headerBytes] = size32 === 1 && head.length >= 16
    ? [Number(view.getBigUint64(8)), 16]
    : size32 === 0
    ? [limit - start, 8]
    : [size32, 8]
  return size < headerBytes || start + size > limit ? Option.none() : Option.some({ type, start, headerBytes, end: start + size })
}

/** `mvhd`'s body: version 0 holds 32-bit times, version 1 holds 64-bit ones; duration / timescale. */
const movieSeconds = (body: Uint8Array): Option.Option<number> => {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength)
  const version = body[0]
  const [timescale, duration] = version === 1 && body.length >= 32
    ? [view.getUint32(20), Number(view.getBigUint64(24))]
    : version === 0 && body.length >= 20
    ? [view.getUint32(12), view.getUint32(16)]
    : [0, 0]
  return timescale > 0 && duration > 0 ? Option.some(duration / timescale) : Option.none()
}

// --- a file on disk -----------------------------------------------------------------------------

type Handle = fs.FileHandle

const readAt = (file: Handle, position: number, length: number) =>
  Effect.tryPromise(async () => {
    const buffer = Buffer.alloc(length)
    const { bytesRead } = await file.read(buffer, 0, length, position)
    return buffer.subarray(0, bytesRead)
  })

/** The first child of type `type` among the boxes between `from` and `to`. */
const find = (
  file: Handle,
  type: string,
  from: number,
  to: number
): Effect.Effect<Option.Option<Box>, UnknownError> =>
  Effect.flatMap(readAt(file, from, 16), (head) => {
    const box = boxHeader(head, from, to)
    return Option.isNone(box) || box.value.type === type ? Effect.succeed(box) : find(file, type, box.value.end, to)
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
        if (Option.isNone(mvhd)) return Option.none<number>()
        return movieSeconds(yield* readAt(file, mvhd.value.start + mvhd.value.headerBytes, 32))
      }),
    (file) => Effect.ignore(Effect.tryPromise(() => file.close()))
  ).pipe(Effect.orElseSucceed(() => Option.none<number>()))

// --- an upload, as it goes by -------------------------------------------------------------------

/**
 * What an upload's bytes so far say of its duration:
 * - `Pending`: nothing yet (the movie box has not come, or not whole);
 * - `Stated`: the movie box came whole, and its header states `seconds`;
 * - `Unstated`: the movie box came, but states no duration (or is too large to hold), or the
 *   file ended without one;
 * - `NotIso`: the bytes are no ISO media file (they do not open with a file type box, or a box
 *   header is malformed).
 */
export type Judgement =
  | { readonly _tag: "Pending" }
  | { readonly _tag: "Stated"; readonly seconds: number }
  | { readonly _tag: "Unstated" }
  | { readonly _tag: "NotIso" }

const pending: Judgement = { _tag: "Pending" }
const unstated: Judgement = { _tag: "Unstated" }
const notIso: Judgement = { _tag: "NotIso" }

/** The first box of type `type` among the boxes between `from` and `to` of `bytes`. */
const findIn = (bytes: Uint8Array, type: string, from: number, to: number): Option.Option<Box> => {
  for (let at = from; at + 8 <= to;) {
    const box = boxHeader(bytes.subarray(at, Math.min(at + 16, to)), at, to)
    if (Option.isNone(box) || box.value.type === type) return box
    at = box.value.end
  }
  return Option.none()
}

/**
 * Follows the top-level boxes of an ISO media file as its bytes go by, in order, and holds only
 * the movie box (`moov`, at most `moovLimit` bytes) to read the duration its header states:
 * wherever the movie box is, before or after gigabytes of media, nothing else is kept.
 */
export class MovieWatch {
  #judgement: Judgement = pending
  /** The file offset of the next byte pushed. */
  #offset = 0
  /** Where the box being passed over ends: the next box header starts there. */
  #next = 0
  /** A box header's bytes gathered so far (a header may straddle two pushes). */
  #header: Array<number> = []
  /** The movie box's bytes gathered so far, and where it ends; `undefined` outside it. */
  #moov: Array<Buffer> | undefined
  #moovEnd = 0

  constructor(readonly moovLimit: number) {}

  get judgement(): Judgement {
    return this.#judgement
  }

  /** Follows `chunk`, the file's next bytes. */
  push(chunk: Uint8Array): void {
    for (let at = 0; at < chunk.length && this.#judgement._tag === "Pending";) {
      const position = this.#offset + at
      if (this.#moov !== undefined) {
        const take = Math.min(chunk.length - at, this.#moovEnd - position)
        this.#moov.push(Buffer.from(chunk.subarray(at, at + take)))
        at += take
        if (position + take === this.#moovEnd) this.#judgeMovie(Buffer.concat(this.#moov))
      } else if (position < this.#next) {
        at += Math.min(chunk.length - at, this.#next - position)
      } else {
        // a box header: 8 bytes, 16 when its size is a 64-bit one
        const wanted = this.#header.length >= 8 && this.#sizeField() === 1 ? 16 : 8
        const take = Math.min(chunk.length - at, wanted - this.#header.length)
        for (let i = 0; i < take; i++) this.#header.push(chunk[at + i]!)
        at += take
        if (this.#header.length === wanted && !(wanted === 8 && this.#sizeField() === 1)) this.#enterBox(position + take - wanted)
      }
    }
    this.#offset += chunk.length
  }

  /** The judgement once the file has ended: a movie box that never came whole states nothing. */
  finish(): Judgement {
    if (this.#judgement._tag === "Pending") this.#judgement = this.#offset === 0 ? notIso : unstated
    return this.#judgement
  }

  #sizeField() {
    return ((this.#header[0]! << 24) >>> 0) + (this.#header[1]! << 16) + (this.#header[2]! << 8) + this.#header[3]!
  }

  #enterBox(start: number) {
    const header = Uint8Array.from(this.#header)
    this.#header = []
    const box = boxHeader(header, start, Number.MAX_SAFE_INTEGER)
    // an ISO media file opens with its file type box
    if (Option.isNone(box) || (start === 0 && box.value.type !== "ftyp")) return void (this.#judgement = notIso)
    const { end, type } = box.value
    if (type !== "moov") return void (this.#next = end)
    if (end - start > this.moovLimit) return void (this.#judgement = unstated)
    this.#moov = [Buffer.from(header)]
    this.#moovEnd = end
    if (end === start + header.length) this.#judgeMovie(Buffer.from(header))
  }

  #judgeMovie(moov: Buffer) {
    this.#moov = undefined
    const headerBytes = moov.readUInt32BE(0) === 1 ? 16 : 8
    const mvhd = findIn(moov, "mvhd", headerBytes, moov.length)
    const seconds = Option.flatMap(mvhd, (m) => movieSeconds(moov.subarray(m.start + m.headerBytes, Math.min(m.end, m.start + m.headerBytes + 32))))
    this.#judgement = Option.isSome(seconds) ? { _tag: "Stated", seconds: seconds.value } : unstated
  }
}
