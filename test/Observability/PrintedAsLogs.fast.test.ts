/**
 * Under LOG_FORMAT=json what dependencies print goes through the JSON logger
 * (Observability/Logging.ts): `console.*` and process warnings come out as one JSON line each,
 * at their level, multi-line text kept inside one string, and Node's own warning printer is
 * replaced for as long as the logging layer lasts, then put back with the console.
 */
import { describe, expect, it } from "@effect/vitest"
import { Console, Effect, Layer } from "effect"
import { loggingLayer } from "../../src/Observability/Logging.ts"

/** The lines the logger writes, kept instead of printed. */
const captured = () => {
  const lines: Array<string> = []
  const write = (...parts: ReadonlyArray<unknown>) => void lines.push(parts.map(String).join(" "))
  const console: Console.Console = { ...globalThis.console, log: write, error: write, info: write, warn: write, debug: write }
  return { lines, console: Layer.succeed(Console.Console, console) }
}

interface Entry {
  readonly message: string
  readonly logLevel: string
  readonly annotations: Record<string, unknown>
}

const entriesOf = (lines: ReadonlyArray<string>) =>
  lines.map((line) => {
    expect(line, "one entry a line").not.toContain("\n")
    return JSON.parse(line) as Entry
  })

/** Node emits a warning on the next tick. */
const nextTicks = Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))

describe("what dependencies print, under LOG_FORMAT=json", () => {
  it.effect("console.warn(\"a\\nb\") is one JSON line at WARN with its text in one string; log, error and debug at their levels", () =>
    Effect.gen(function*() {
      const { console: capture, lines } = captured()
      yield* Effect.scoped(Effect.gen(function*() {
        yield* Layer.build(loggingLayer("json", "Debug").pipe(Layer.provide(capture)))
        console.warn("a\nb")
        console.log("%s=%d", "count", 3)
        console.error(new Error("broken\nbadly"))
        console.debug({ nested: { deep: [1, 2] } })
      }))
      const entries = entriesOf(lines)
      expect(entries.map((e) => [e.logLevel, e.annotations.source])).toEqual([["WARN", "console"], ["INFO", "console"], ["ERROR", "console"], ["DEBUG", "console"]])
      expect(entries[0]!.message).toBe("a\nb")
      expect(entries[1]!.message).toBe("count=3")
      // an error as the console shows it: its stack, every line of it in the one message
      expect(entries[2]!.message).toMatch(/^Error: broken\nbadly\n\s+at /)
      expect(entries[3]!.message).toBe("{ nested: { deep: [ 1, 2 ] } }")
    }))

  it.effect("process.emitWarning is one JSON line at WARN, with its code and detail, and Node's printer is put back", () =>
    Effect.gen(function*() {
      const { console: capture, lines } = captured()
      const printers = process.listeners("warning").filter((l) => l.name === "onWarning")
      expect(printers, "Node's own warning printer").toHaveLength(1)
      const consoleWarn = console.warn
      yield* Effect.scoped(Effect.gen(function*() {
        yield* Layer.build(loggingLayer("json", "Info").pipe(Layer.provide(capture)))
        expect(process.listeners("warning")).not.toContain(printers[0])
        process.emitWarning("NodeVersionSupportWarning: first line\nsecond line", { code: "TEST_1", detail: "the detail" })
        yield* nextTicks
      }))
      const entries = entriesOf(lines)
      expect(entries).toHaveLength(1)
      expect(entries[0]).toMatchObject({
        logLevel: "WARN",
        message: "Warning: NodeVersionSupportWarning: first line\nsecond line\nthe detail",
        annotations: { source: "warning", code: "TEST_1" }
      })
      expect(process.listeners("warning")).toContain(printers[0])
      expect(console.warn).toBe(consoleWarn)
    }))

  it.effect("the other formats leave the console and Node's warnings alone", () =>
    Effect.gen(function*() {
      const consoleWarn = console.warn
      const listeners = process.listeners("warning")
      yield* Effect.scoped(Effect.gen(function*() {
        yield* Layer.build(loggingLayer("logfmt", "Info"))
        expect(console.warn).toBe(consoleWarn)
        expect(process.listeners("warning")).toEqual(listeners)
      }))
    }))
})
