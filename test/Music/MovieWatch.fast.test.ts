/**
 * The movie box watch (src/Music/MovieHeader.ts `MovieWatch`): how a forwarded upload's duration
 * is read as its bytes go by. Its judgement must not depend on how the bytes were cut into
 * pieces, must find the movie box before or after the media, and must never state a duration the
 * reader of a whole file would not.
 */
import { expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as fc from "fast-check"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { type Judgement, movieDuration, MovieWatch } from "../../src/Music/MovieHeader.ts"
import { forAll } from "../support/Property.ts"
import { mp4, mp4Head, mp4MovieLast } from "../support/Video.ts"

const limit = 8 * 1024 * 1024

/** `bytes` cut at `cuts` (offsets, in any order), watched piece by piece. */
const watched = (bytes: Uint8Array, cuts: ReadonlyArray<number>, moovLimit = limit): Judgement => {
  const watch = new MovieWatch(moovLimit)
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b)
  let from = 0
  for (const to of [...at, bytes.length]) {
    watch.push(bytes.subarray(from, to))
    from = to
  }
  return watch.finish()
}

/** An MP4 of `seconds` with `fillerBytes` of media, its movie box before or after the media. */
const video = (seconds: number, fillerBytes: number, movieFirst: boolean) => {
  if (movieFirst) return mp4(seconds, fillerBytes)
  const { head, tail } = mp4MovieLast(seconds, fillerBytes)
  return Buffer.concat([head, Buffer.alloc(fillerBytes, 7), tail])
}

/** A box with a 64-bit size field (size 1, then the size). */
const largeBox = (type: string, payload: Buffer) => {
  const header = Buffer.alloc(16)
  header.writeUInt32BE(1, 0)
  header.write(type, 4, "latin1")
  header.writeBigUInt64BE(BigInt(16 + payload.length), 8)
  return Buffer.concat([header, payload])
}

const cuts = fc.array(fc.nat(), { maxLength: 40 })

it.effect("an MP4's stated duration is read whatever its layout and however its bytes are cut", () =>
  forAll(
    { millis: fc.integer({ min: 1, max: 3_600_000 }), filler: fc.integer({ min: 0, max: 4096 }), movieFirst: fc.boolean(), cuts },
    ({ cuts, filler, millis, movieFirst }) =>
      Effect.sync(() => {
        const bytes = video(millis / 1000, filler, movieFirst)
        expect(watched(bytes, cuts)).toEqual({ _tag: "Stated", seconds: millis / 1000 })
        // one byte at a time, the slowest trickle
        expect(watched(bytes, Array.from({ length: bytes.length }, (_, i) => i))).toEqual({ _tag: "Stated", seconds: millis / 1000 })
      }),
    { numRuns: 200 }
  ))

it.effect("a 64-bit media box before the movie box is passed over", () =>
  forAll({ filler: fc.integer({ min: 0, max: 2048 }), cuts }, ({ cuts, filler }) =>
    Effect.sync(() => {
      const { head, tail } = mp4MovieLast(90, 0)
      // head: the file type box, then an empty media box's 8-byte header: swap that for a 64-bit one
      const ftyp = head.subarray(0, head.length - 8)
      const bytes = Buffer.concat([ftyp, largeBox("mdat", Buffer.alloc(filler, 1)), tail])
      expect(watched(bytes, cuts)).toEqual({ _tag: "Stated", seconds: 90 })
    })))

it.effect("a file cut short, without a movie box, or with one over the limit states nothing", () =>
  forAll({ seconds: fc.integer({ min: 1, max: 600 }), movieFirst: fc.boolean(), cut: fc.nat(), cuts }, ({ cut, cuts, movieFirst, seconds }) =>
    Effect.sync(() => {
      const whole = video(seconds, 512, movieFirst)
      const movieEnd = movieFirst ? mp4Head(seconds, 512).length - 8 : whole.length
      // cut anywhere before the movie box's last byte: never a duration
      const short = whole.subarray(0, cut % movieEnd)
      expect(watched(short, cuts)._tag).not.toBe("Stated")
      // only media after the file type box
      const { head } = mp4MovieLast(seconds, 512)
      expect(watched(Buffer.concat([head, Buffer.alloc(512)]), cuts)).toEqual({ _tag: "Unstated" })
      // a movie box larger than the watch may hold
      expect(watched(whole, cuts, 64)).toEqual({ _tag: "Unstated" })
    })))

it.effect("bytes that do not open with a file type box are no ISO media file", () =>
  forAll({ bytes: fc.uint8Array({ minLength: 1, maxLength: 512 }), cuts }, ({ bytes, cuts }) =>
    Effect.sync(() => {
      fc.pre(Buffer.from(bytes.subarray(4, 8)).toString("latin1") !== "ftyp")
      expect(watched(bytes, cuts)._tag).toBe(bytes.length < 8 ? "Unstated" : "NotIso")
    })))

it.effect("whatever the bytes, a duration the watch states is the one the whole file's reader finds", () =>
  Effect.gen(function*() {
    const dir = yield* Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "movie-watch-")))
    const file = path.join(dir, "v.mp4")
    // mostly well-formed files with bytes flipped, so that boxes are met and broken alike
    const damaged = fc.record({
      millis: fc.integer({ min: 1, max: 3_600_000 }),
      movieFirst: fc.boolean(),
      flips: fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 6 })
    }).map(({ flips, millis, movieFirst }) => {
      const bytes = Buffer.from(video(millis / 1000, 64, movieFirst))
      for (const [at, value] of flips) bytes[at % bytes.length] = value
      return bytes
    })
    yield* forAll({ bytes: fc.oneof(damaged, fc.uint8Array({ maxLength: 256 }).map((b) => Buffer.from(b))), cuts }, ({ bytes, cuts }) =>
      Effect.gen(function*() {
        const judgement = watched(bytes, cuts)
        if (judgement._tag !== "Stated") return
        yield* Effect.promise(() => fs.writeFile(file, bytes))
        expect(yield* movieDuration(file)).toEqual(Option.some(judgement.seconds))
      }), { numRuns: 300 })
    yield* Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
  }))
