/** Keep-alive lines of the NDJSON relay, with TestClock: one per 30 s of vendor silence, none otherwise. */
import { expect, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import { withKeepAlive } from "../../src/Music/Events.ts"

const keepAliveMillis = 30_000

/** `line` after `millis` of silence. */
const after = (millis: number, line: string) => Stream.fromEffect(Effect.as(Effect.sleep(millis), line))

it.effect("a blank line after each 30 s of silence, in place, and the events themselves unchanged", () =>
  Effect.gen(function*() {
    const events = Stream.concat(after(70_000, "a"), Stream.concat(after(10_000, "b"), after(31_000, "c")))
    const fiber = yield* Effect.forkChild(Stream.runCollect(withKeepAlive(events, keepAliveMillis, "\n")))
    yield* TestClock.adjust(111_000)
    expect(yield* Fiber.join(fiber)).toEqual(["\n", "\n", "a", "b", "\n", "c"])
  }))

it.effect("a stream that keeps talking gets no keep-alive line", () =>
  Effect.gen(function*() {
    const events = Stream.concat(after(29_000, "a"), after(29_000, "b"))
    const fiber = yield* Effect.forkChild(Stream.runCollect(withKeepAlive(events, keepAliveMillis, "\n")))
    yield* TestClock.adjust(58_000)
    expect(yield* Fiber.join(fiber)).toEqual(["a", "b"])
  }))
