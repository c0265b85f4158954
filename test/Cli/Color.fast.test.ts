/**
 * Colour only where someone reads it: the help is styled on a terminal, and plain (no ESC byte)
 * when stdout is a pipe or a file, with NO_COLOR set to anything, or with TERM=dumb; FORCE_COLOR
 * turns it on off a terminal unless NO_COLOR is set too. Failures are one plain line everywhere.
 * The CLI's entry runs here with its environment and streams given to it, as in test/Cli/Cli.process.test.ts.
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { run } from "../../src/Cli/Commands.ts"
import { canColor, Streams } from "../../src/Cli/Output.ts"

const esc = "\x1b"

/** One run of the CLI: stdout a terminal or not, only `env` in its environment. */
const runWith = (args: ReadonlyArray<string>, options: { readonly tty: boolean; readonly env?: Record<string, string> }) =>
  Effect.suspend(() => {
    let stdout = ""
    let stderr = ""
    const streams = {
      stdout: { write: (s: string) => (stdout += s), isTTY: options.tty },
      stderr: { write: (s: string) => (stderr += s), isTTY: options.tty }
    }
    return run(["node", "cli.js", ...args]).pipe(
      Effect.provideService(Streams, streams),
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: options.env ?? {} })),
      Effect.provide(Layer.merge(NodeServices.layer, NodeHttpClient.layerNodeHttp)),
      Effect.map((code) => ({ code, stdout, stderr }))
    )
  })

const colorOf = (tty: boolean, env: Record<string, string>) =>
  canColor({ write: () => undefined, isTTY: tty }).pipe(
    Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env }))
  )

describe("colour", () => {
  it.effect("the rule: a terminal, unless NO_COLOR or TERM=dumb; FORCE_COLOR off a terminal", () =>
    Effect.gen(function*() {
      expect(yield* colorOf(true, {})).toBe(true)
      expect(yield* colorOf(false, {})).toBe(false)
      expect(yield* colorOf(true, { NO_COLOR: "1" })).toBe(false)
      expect(yield* colorOf(true, { NO_COLOR: "false" }), "any non-empty value").toBe(false)
      expect(yield* colorOf(true, { NO_COLOR: "" }), "an empty one is unset").toBe(true)
      expect(yield* colorOf(true, { TERM: "dumb" })).toBe(false)
      expect(yield* colorOf(false, { FORCE_COLOR: "1" })).toBe(true)
      expect(yield* colorOf(false, { FORCE_COLOR: "0" })).toBe(false)
      expect(yield* colorOf(false, { FORCE_COLOR: "false" })).toBe(false)
      expect(yield* colorOf(false, { FORCE_COLOR: "1", NO_COLOR: "1" })).toBe(false)
    }))

  it.effect("help on a terminal is styled; piped, with NO_COLOR or TERM=dumb it has no ESC byte", () =>
    Effect.gen(function*() {
      const terminal = yield* runWith(["--help"], { tty: true })
      expect(terminal.code).toBe(0)
      expect(terminal.stdout).toContain(esc)
      for (const [what, options] of [
        ["piped", { tty: false }],
        ["NO_COLOR", { tty: true, env: { NO_COLOR: "1" } }],
        ["TERM=dumb", { tty: true, env: { TERM: "dumb" } }],
        ["NO_COLOR over FORCE_COLOR", { tty: false, env: { NO_COLOR: "1", FORCE_COLOR: "1" } }]
      ] as const) {
        for (const args of [["--help"], ["publish", "--help"], ["publisher"]]) {
          const ran = yield* runWith(args, options)
          expect(ran.code, `${what} ${args.join(" ")}`).toBe(0)
          expect(ran.stdout, `${what} ${args.join(" ")}`).toContain("USAGE")
          expect(ran.stdout, `${what} ${args.join(" ")}`).not.toContain(esc)
          expect(ran.stderr, `${what} ${args.join(" ")}`).toBe("")
        }
      }
      // the same words either way
      const plain = yield* runWith(["--help"], { tty: false })
      expect(terminal.stdout.replace(/\x1b\[[0-9;]*m/g, "")).toBe(plain.stdout)
      expect(plain.stdout).toContain("EXIT CODES")
      // forced on off a terminal
      expect((yield* runWith(["--help"], { tty: false, env: { FORCE_COLOR: "1" } })).stdout).toContain(esc)
    }))

  it.effect("a failure is one plain line, even on a terminal", () =>
    Effect.gen(function*() {
      for (const args of [["frobnicate"], ["search"], ["install", "tool@"]]) {
        const ran = yield* runWith(args, { tty: true })
        expect(ran.code, args.join(" ")).toBe(2)
        expect(ran.stderr, args.join(" ")).toMatch(/^error: usage: [^\x1b\n]+\n$/)
        expect(ran.stdout, args.join(" ")).toBe("")
      }
    }))
})
