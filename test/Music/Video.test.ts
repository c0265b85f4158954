/** The test videos are what they claim to be: music-metadata reads their duration. */
import { expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { videoDuration } from "../../src/Music/Service.ts"
import { mp4 } from "../support/Video.ts"

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
