/**
 * The local archive store and the entry-name check on their own: an atomic, bounded, streamed
 * write whose record sees the complete file before it becomes visible, and places it; reading;
 * which keys hold nothing; the tests-only fault setting; and which zip entry names are refused,
 * by property.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Option, Result, Stream } from "effect"
import * as fc from "fast-check"
import { createHash } from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { appConfig, storageFaultSteps } from "../../src/Config.ts"
import { unsafeEntryName } from "../../src/Publishing/Checks.ts"
import { makeLocalStorage, type StorageFailed, type Written } from "../../src/Storage/Storage.ts"
import { forAll, forAllSync } from "../support/Property.ts"

const tempDir = Effect.acquireRelease(
  Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "registry-storage-"))),
  (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
)

const chunks = (n: number, size: number) => Stream.fromIterable(Array.from({ length: n }, (_, i) => new Uint8Array(size).fill(i)))

const files = (dir: string) =>
  Effect.promise(async () => [...await fs.readdir(dir), ...(await fs.readdir(path.join(dir, ".incoming"))).map((f) => `.incoming/${f}`)]
    .filter((f) => f !== ".incoming").sort())

const sha256Of = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

const readAll = <E>(stream: Stream.Stream<Uint8Array, E>) =>
  Effect.map(Stream.runCollect(stream), (c) => Buffer.concat([...c]))

it.effect("put streams, records the complete file, which is placed under its key only by the record's place", () =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const storage = yield* Effect.provide(makeLocalStorage(dir), NodeFileSystem.layer)
    let inspected = -1
    const visible = () => fs.access(path.join(dir, "a.zip")).then(() => true, () => false)
    const stored = yield* storage.put("a.zip", chunks(10, 1000), {
      maxBytes: 10_000,
      record: (file, written, place) =>
        Effect.gen(function*() {
          // the local store hands the path of its synced temporary file, and the digest of its bytes
          inspected = (yield* Effect.promise(() => fs.stat(file as string))).size
          expect(written.bytes).toBe(10_000)
          expect(written.sha256.toString("hex")).toBe(sha256Of(yield* Effect.promise(() => fs.readFile(file as string))))
          // not visible under its key while it is checked
          expect(yield* Effect.promise(visible)).toBe(false)
          yield* place
          // visible once placed, before the record is done
          expect(yield* Effect.promise(visible)).toBe(true)
          return "checked"
        })
    })
    expect(stored).toEqual({ bytes: 10_000, recorded: "checked" })
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

it.effect("past the limit, a failed body, a failed record or one that does not place: nothing stored, the old content kept", () =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const storage = yield* Effect.provide(makeLocalStorage(dir), NodeFileSystem.layer)
    const ok = { maxBytes: 10_000, record: (_: unknown, __: Written, place: Effect.Effect<void, StorageFailed>) => place }
    yield* storage.put("b.zip", chunks(1, 100), ok)
    const tooLarge = yield* Effect.exit(storage.put("b.zip", chunks(11, 1000), ok))
    expect(Exit.isFailure(tooLarge) && JSON.stringify(tooLarge.cause)).toContain("BodyTooLarge")
    const broken = yield* Effect.exit(storage.put("b.zip", Stream.concat(chunks(2, 1000), Stream.fail(new Error("reset"))), ok))
    expect(Exit.isFailure(broken) && JSON.stringify(broken.cause)).toContain("BodyBroken")
    const refused = yield* Effect.exit(storage.put("b.zip", chunks(2, 1000), { maxBytes: 10_000, record: () => Effect.fail("bad" as const) }))
    expect(Exit.isFailure(refused)).toBe(true)
    yield* storage.put("b.zip", chunks(3, 1000), { maxBytes: 10_000, record: () => Effect.void })
    expect(yield* files(dir)).toEqual(["b.zip"])
    expect(Option.getOrThrow(yield* storage.open("b.zip")).bytes).toBe(100)
  }))

it.effect("missing answers exactly the keys whose content is absent, in the order asked", () => forAll({
  keys: fc.uniqueArray(fc.stringMatching(/^[a-z0-9]{1,8}\.zip$/), { maxLength: 12 }),
  stored: fc.array(fc.boolean(), { minLength: 12, maxLength: 12 })
}, ({ keys, stored }) =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const storage = yield* Effect.provide(makeLocalStorage(dir), NodeFileSystem.layer)
    const place = { maxBytes: 100, record: (_: unknown, __: Written, place: Effect.Effect<void, StorageFailed>) => place }
    for (const [i, key] of keys.entries()) if (stored[i]) yield* storage.put(key, chunks(1, 1), place)
    expect(yield* storage.missing(keys)).toEqual(keys.filter((_, i) => !stored[i]))
  }).pipe(Effect.scoped), { numRuns: 30 }))

it("FAULT_INJECT_STORAGE: unset is no fault; exactly the five step names are taken", () => forAllSync({
  raw: fc.oneof(fc.constantFrom(...storageFaultSteps), fc.string({ maxLength: 20 }))
}, ({ raw }) => {
  const read = (env: Record<string, string>) =>
    Effect.runSync(Effect.result(appConfig.parse(ConfigProvider.fromEnv({ env, preserveEmptyStrings: true }))))
  expect(Option.isNone(Result.getOrThrow(read({})).storage.faultInjection)).toBe(true)
  const result = read({ FAULT_INJECT_STORAGE: raw })
  if ((storageFaultSteps as ReadonlyArray<string>).includes(raw)) {
    expect(Result.getOrThrow(result).storage.faultInjection).toEqual(Option.some(raw))
  } else {
    expect(Result.isFailure(result)).toBe(true)
  }
}))

const segment = fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9_. -]{0,12}$/).filter((s) => s !== "." && s !== "..")

it("plain relative names pass; a '..' segment, a leading '/', a drive letter or a backslash anywhere fail", () => forAllSync({
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
}))
