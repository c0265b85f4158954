/**
 * The local archive store and the entry-name check on their own: an atomic, bounded, streamed
 * write whose inspection sees the complete file before it becomes visible; reading; and which zip
 * entry names are refused, by property.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { expect, it } from "@effect/vitest"
import { Effect, Exit, FastCheck as fc, Option, Stream } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { unsafeEntryName } from "../../src/Publishing/Checks.ts"
import { makeLocalStorage } from "../../src/Publishing/Storage.ts"

const tempDir = Effect.acquireRelease(
  Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "registry-storage-"))),
  (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
)

const chunks = (n: number, size: number) => Stream.fromIterable(Array.from({ length: n }, (_, i) => new Uint8Array(size).fill(i)))

const files = (dir: string) =>
  Effect.promise(async () => [...await fs.readdir(dir), ...(await fs.readdir(path.join(dir, ".incoming"))).map((f) => `.incoming/${f}`)]
    .filter((f) => f !== ".incoming").sort())

const readAll = <E>(stream: Stream.Stream<Uint8Array, E>) =>
  Effect.map(Stream.runCollect(stream), (c) => Buffer.concat([...c]))

it.scoped("put streams, inspects the complete file, then makes it visible; open reads it back", () =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const storage = yield* Effect.provide(makeLocalStorage(dir), NodeFileSystem.layer)
    let inspected = -1
    const stored = yield* storage.put("a.zip", chunks(10, 1000), {
      maxBytes: 10_000,
      inspect: (file) =>
        Effect.promise(async () => {
          inspected = (await fs.stat(file)).size
          // not visible under its key while it is inspected
          expect(await fs.access(path.join(dir, "a.zip")).then(() => true, () => false)).toBe(false)
          return "checked"
        })
    })
    expect(stored).toEqual({ bytes: 10_000, inspection: "checked" })
    expect(inspected).toBe(10_000)
    const opened = Option.getOrThrow(yield* storage.open("a.zip"))
    expect(opened.bytes).toBe(10_000)
    const content = yield* readAll(opened.stream)
    expect(content.length).toBe(10_000)
    expect(content[0]).toBe(0)
    expect(content[9_999]).toBe(9)
    expect(yield* files(dir)).toEqual(["a.zip"])
    expect(Option.isNone(yield* storage.open("b.zip"))).toBe(true)
  }))

it.scoped("past the limit, a failed body or a failed inspection: nothing stored, the old content kept", () =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const storage = yield* Effect.provide(makeLocalStorage(dir), NodeFileSystem.layer)
    const ok = { maxBytes: 10_000, inspect: () => Effect.void }
    yield* storage.put("b.zip", chunks(1, 100), ok)
    const tooLarge = yield* Effect.exit(storage.put("b.zip", chunks(11, 1000), ok))
    expect(Exit.isFailure(tooLarge) && JSON.stringify(tooLarge.cause)).toContain("BodyTooLarge")
    const broken = yield* Effect.exit(storage.put("b.zip", Stream.concat(chunks(2, 1000), Stream.fail(new Error("reset"))), ok))
    expect(Exit.isFailure(broken) && JSON.stringify(broken.cause)).toContain("BodyBroken")
    const refused = yield* Effect.exit(storage.put("b.zip", chunks(2, 1000), { maxBytes: 10_000, inspect: () => Effect.fail("bad" as const) }))
    expect(Exit.isFailure(refused)).toBe(true)
    expect(yield* files(dir)).toEqual(["b.zip"])
    expect(Option.getOrThrow(yield* storage.open("b.zip")).bytes).toBe(100)
  }))

const segment = fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9_. -]{0,12}$/).filter((s) => s !== "." && s !== "..")

it.prop("plain relative names pass; a '..' segment, a leading '/', a drive letter or a backslash anywhere fail", {
  segments: fc.array(segment, { minLength: 1, maxLength: 5 }),
  at: fc.nat(),
  trick: fc.constantFrom("..", "/", "C:", "\\")
}, ({ segments, at, trick }) => {
  expect(unsafeEntryName(segments.join("/"))).toBeUndefined()
  expect(unsafeEntryName(segments.join("/") + "/")).toBeUndefined()
  const i = at % (segments.length + 1)
  const name = trick === ".."
    ? [...segments.slice(0, i), "..", ...segments.slice(i)].join("/")
    : trick === "\\"
    ? segments.join("/").slice(0, i) + "\\" + segments.join("/").slice(i)
    : trick + segments.join("/")
  expect(unsafeEntryName(name), name).toBeDefined()
})
