/** The test videos are what they claim to be: their duration reads back. */
import { expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as fc from "fast-check"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { movieDuration } from "../../src/Music/MovieHeader.ts"
import { videoDuration } from "../../src/Music/VideoChecks.ts"
import { mp4 } from "../support/Video.ts"
import { forAll } from "../support/Property.ts"

it.effect("a built MP4's duration reads back, and a file that is no video has none", () =>
  Effect.gen(function*() {
    const dir = yield* Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "video-")))
    const file = path.join(dir, "a.mp4")
    for (const seconds of [1, 300, 420]) {
      yield* Effect.promise(() => fs.writeFile(file, mp4(seconds)))
      expect(yield* videoDuration(file)).toEqual(Option.some(seconds))
    }
    yield* Effect.promise(() => fs.writeFile(file, "not a video at all"))
    expect(yield* videoDuration(file)).toEqual(Option.none())
    yield* Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
  }))

it.effect(
  "a silent MP4's duration comes from its movie header, wherever it is cut",
  () =>
    forAll(
      { millis: fc.integer({ min: 1, max: 3_600_000 }), cut: fc.nat() },
      ({ cut, millis }) =>
        Effect.gen(function*() {
          const dir = yield* Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "video-")))
          const file = path.join(dir, "a.mp4")
          const whole = mp4(millis / 1000, 64)
          yield* Effect.promise(() => fs.writeFile(file, whole))
          expect(yield* movieDuration(file)).toEqual(Option.some(millis / 1000))
          // A truncated file reads as no duration or the right one, never as a failure.
          yield* Effect.promise(() => fs.writeFile(file, whole.subarray(0, cut % whole.length)))
          const truncated = yield* movieDuration(file)
          expect(Option.getOrElse(truncated, () => millis / 1000)).toBe(millis / 1000)
          yield* Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
        }),
      { numRuns: 50 }
    )
)
