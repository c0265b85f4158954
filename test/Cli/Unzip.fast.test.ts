/**
 * Unpacking an archive the CLI does not trust: a good one lands whole; a malicious one (names
 * leaving the target, links, duplicates, too many entries or bytes) is refused with nothing left
 * behind. The archives are built with yazl; those with names yazl itself refuses to write (`../x`,
 * `/x`) by test/support/Zip.ts's `rawZip`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import * as fc from "fast-check"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import yazl from "yazl"
import { exitCodeOf, reportOf } from "../../src/Cli/Failure.ts"
import { checkEntryName, extractZip } from "../../src/Cli/Unzip.ts"
import { forAllSync } from "../support/Property.ts"
import { rawZip } from "../support/Zip.ts"

interface Entry {
  readonly name: string
  readonly content?: string
  readonly mode?: number
  readonly directory?: boolean
}

/** Names yazl refuses to write: absolute, with a drive letter, a `..` segment or a backslash. */
const yazlRefuses = (name: string) =>
  name.startsWith("/") || /^[A-Za-z]:/.test(name) || name.split(/[\\/]/).includes("..") || name.includes("\\")

/** A zip of these entries, built by yazl; one with a name yazl refuses is written byte by byte by `rawZip`. */
const zipOf = (entries: ReadonlyArray<Entry>): Promise<Buffer> => {
  const contentOf = (entry: Entry, i: number) => entry.content ?? `content of ${i}`
  if (entries.some((entry) => yazlRefuses(entry.name))) {
    // rawZip writes plain files: no modes, no directories
    if (entries.some((entry) => entry.mode !== undefined || entry.directory === true)) throw new Error("rawZip has no modes or directories")
    return Promise.resolve(rawZip(entries.map((entry, i) => ({ name: entry.name, content: contentOf(entry, i) }))))
  }
  return new Promise((resolve, reject) => {
    const zip = new yazl.ZipFile()
    entries.forEach((entry, i) => {
      const options = entry.mode === undefined ? {} : { mode: entry.mode }
      if (entry.directory === true) zip.addEmptyDirectory(entry.name, options)
      else zip.addBuffer(Buffer.from(contentOf(entry, i)), entry.name, options)
    })
    zip.end()
    const chunks: Array<Buffer> = []
    zip.outputStream.on("data", (c: Buffer) => chunks.push(c))
    zip.outputStream.on("error", reject)
    zip.outputStream.on("end", () => resolve(Buffer.concat(chunks)))
  })
}

const tempDir = Effect.acquireRelease(
  Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "registry-unzip-"))),
  (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
)

/** Every file under `dir`, relative, with its content. */
const tree = (dir: string): Promise<Record<string, string>> =>
  fs.readdir(dir, { recursive: true, withFileTypes: true }).then(async (entries) => {
    const out: Record<string, string> = {}
    for (const entry of entries.filter((e) => e.isFile())) {
      const full = path.join(entry.parentPath, entry.name)
      out[path.relative(dir, full).split(path.sep).join("/")] = await fs.readFile(full, "utf8")
    }
    return out
  })

/** Unpacks `bytes` into `<scratch>/target`. */
const unpack = (scratch: string, bytes: Buffer, options: Parameters<typeof extractZip>[2] = {}) =>
  Effect.gen(function*() {
    const zipFile = path.join(scratch, "archive.zip")
    yield* Effect.promise(() => fs.writeFile(zipFile, bytes))
    return yield* extractZip(zipFile, path.join(scratch, "out", "target"), options)
  })

describe("safe unzip", () => {
  it.effect("a good archive lands whole, with its directories and modes", () =>
    Effect.gen(function*() {
      const scratch = yield* tempDir
      const bytes = yield* Effect.promise(() =>
        zipOf([
          { name: "pkg/", directory: true },
          { name: "pkg/__init__.py", content: "NODES = {}\n" },
          { name: "pkg/run.sh", content: "#!/bin/sh\n", mode: 0o100755 },
          { name: "empty/", directory: true },
          { name: "README.md", content: "# Hi\n" }
        ])
      )
      const result = yield* unpack(scratch, bytes)
      const target = path.join(scratch, "out", "target")
      expect(result).toEqual({ files: 3, bytes: 26, target })
      expect(yield* Effect.promise(() => tree(target))).toEqual({
        "pkg/__init__.py": "NODES = {}\n",
        "pkg/run.sh": "#!/bin/sh\n",
        "README.md": "# Hi\n"
      })
      expect((yield* Effect.promise(() => fs.stat(path.join(target, "pkg/run.sh")))).mode & 0o777).toBe(0o755)
      expect((yield* Effect.promise(() => fs.stat(path.join(target, "README.md")))).mode & 0o777).toBe(0o644)
      expect((yield* Effect.promise(() => fs.stat(path.join(target, "empty")))).isDirectory()).toBe(true)
      // nothing else beside the target: the staging directory was renamed, not copied
      expect(yield* Effect.promise(() => fs.readdir(path.join(scratch, "out")))).toEqual(["target"])
    }))

  const malicious: ReadonlyArray<readonly [string, ReadonlyArray<Entry>, RegExp]> = [
    ["a parent segment", [{ name: "ok.txt" }, { name: "../evil.txt" }], /'\.\.' segment/],
    ["a parent segment deeper in", [{ name: "a/../../evil.txt" }], /'\.\.' segment/],
    ["an absolute path", [{ name: "/tmp/evil.txt" }], /absolute path/],
    ["a drive letter", [{ name: "C:/evil.txt" }], /absolute path/],
    ["a backslash", [{ name: "a\\..\\evil.txt" }], /backslash/],
    ["a dot segment", [{ name: "./a.txt" }], /empty or '\.' segment/],
    ["an empty segment", [{ name: "a//b.txt" }], /empty or '\.' segment/],
    ["a symbolic link", [{ name: "link", content: "/etc/passwd", mode: 0o120777 }], /symbolic link/],
    ["a link to a parent directory", [{ name: "up", content: "..", mode: 0o120777 }, { name: "up/evil.txt" }], /symbolic link/],
    ["a special file", [{ name: "fifo", mode: 0o010644 }], /not a regular file/],
    ["a duplicate name", [{ name: "a.txt" }, { name: "a.txt" }], /appears twice/],
    ["names differing in case", [{ name: "README.md" }, { name: "readme.md" }], /differ only in case/],
    ["a file that is also a directory", [{ name: "a" }, { name: "a/b.txt" }], /both a file and a directory/],
    ["a directory that is also a file", [{ name: "a/b.txt" }, { name: "a" }], /both a file and a directory/]
  ]

  for (const [what, entries, reason] of malicious) {
    it.effect(`refuses ${what}, leaving nothing behind`, () =>
      Effect.gen(function*() {
        const scratch = yield* tempDir
        const bytes = yield* Effect.promise(() => zipOf(entries))
        const error = yield* Effect.flip(unpack(scratch, bytes))
        const report = reportOf(error)
        expect(report).toMatchObject({ kind: "server", code: "unsafe_archive" })
        expect(report.message).toMatch(reason)
        expect(exitCodeOf(report)).toBe(6)
        expect(yield* Effect.promise(() => fs.readdir(path.join(scratch, "out")))).toEqual([])
        // and nothing escaped next to the scratch directory
        expect(yield* Effect.promise(() => fs.readdir(scratch))).toEqual(["archive.zip", "out"])
      }))
  }

  it.effect("refuses more entries or bytes than the limits allow, and sizes that lie", () =>
    Effect.gen(function*() {
      const scratch = yield* tempDir
      const many = yield* Effect.promise(() => zipOf(Array.from({ length: 11 }, (_, i) => ({ name: `f${i}.txt` }))))
      const tooMany = reportOf(yield* Effect.flip(unpack(scratch, many, { limits: { maxEntries: 10, maxBytes: 1_000_000 } })))
      expect(tooMany).toMatchObject({ code: "unsafe_archive" })
      expect(tooMany.message).toContain("11 entries, more than the limit of 10")
      const big = yield* Effect.promise(() => zipOf([{ name: "a.bin", content: "x".repeat(600) }, { name: "b.bin", content: "y".repeat(600) }]))
      const tooBig = reportOf(yield* Effect.flip(unpack(scratch, big, { limits: { maxEntries: 10, maxBytes: 1000 } })))
      expect(tooBig.message).toContain("unpacks to more than 1000 bytes")
      // an entry whose header claims less than it holds: refused when its bytes run over
      const lying = rawZip([{ name: "a.txt", content: "0123456789", declaredSize: 5 }])
      expect(reportOf(yield* Effect.flip(unpack(scratch, lying)))).toMatchObject({ kind: "server", code: "unsafe_archive" })
      const garbage = reportOf(yield* Effect.flip(unpack(scratch, Buffer.from("not a zip at all"))))
      expect(garbage).toMatchObject({ code: "unsafe_archive" })
      expect(garbage.message).toContain("not a valid zip")
      expect(yield* Effect.promise(() => fs.readdir(path.join(scratch, "out")))).toEqual([])
    }))

  it.effect("an existing target is refused unless replacing; replacing swaps it whole", () =>
    Effect.gen(function*() {
      const scratch = yield* tempDir
      const target = path.join(scratch, "out", "target")
      yield* Effect.promise(() => fs.mkdir(target, { recursive: true }))
      yield* Effect.promise(() => fs.writeFile(path.join(target, "old.txt"), "old"))
      const bytes = yield* Effect.promise(() => zipOf([{ name: "new.txt", content: "new" }]))
      const refused = reportOf(yield* Effect.flip(unpack(scratch, bytes)))
      expect(refused).toMatchObject({ kind: "usage", code: "target_exists" })
      expect(yield* Effect.promise(() => tree(target))).toEqual({ "old.txt": "old" })
      yield* unpack(scratch, bytes, { replace: true })
      expect(yield* Effect.promise(() => tree(target))).toEqual({ "new.txt": "new" })
      expect(yield* Effect.promise(() => fs.readdir(path.join(scratch, "out")))).toEqual(["target"])
      // a refused replacement keeps the old content
      const evil = yield* Effect.promise(() => zipOf([{ name: "../x" }]))
      yield* Effect.flip(unpack(scratch, evil, { replace: true }))
      expect(yield* Effect.promise(() => tree(target))).toEqual({ "new.txt": "new" })
    }))
})

// --- the name check by property ------------------------------------------------------------------

const segment = fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9_. -]{0,12}$/).filter((s) => s !== "." && s !== "..")

describe("entry names by property", () => {
  it("whatever a name is, an accepted one lands strictly inside the target", () => forAllSync({ name: fc.string({ maxLength: 40 }) }, ({ name }) => {
    const checked = checkEntryName(name)
    if (Result.isSuccess(checked)) {
      const landed = path.posix.resolve("/target", checked.success)
      expect(landed.startsWith("/target/"), name).toBe(true)
      expect(checked.success.split("/")).not.toContain("..")
    }
  }, { numRuns: 2000 }))

  it("names made of '.', '/' and letters: accepted ones stay inside", () => forAllSync({
    name: fc.array(fc.constantFrom(".", "/", "a", "..", "\\"), { maxLength: 10 }).map((parts) => parts.join(""))
  }, ({ name }) => {
    const checked = checkEntryName(name)
    if (Result.isSuccess(checked)) expect(path.posix.resolve("/target", checked.success).startsWith("/target/"), name).toBe(true)
  }, { numRuns: 2000 }))

  it("plain relative names pass; with a '..' segment, a leading '/', a drive letter or a backslash they fail", () => forAllSync({
    segments: fc.array(segment, { minLength: 1, maxLength: 5 }),
    at: fc.nat(),
    trick: fc.constantFrom("..", "/", "C:", "\\")
  }, ({ segments, at, trick }) => {
    const plain = segments.join("/")
    expect(checkEntryName(plain)).toEqual(Result.succeed(plain))
    expect(checkEntryName(plain + "/")).toEqual(Result.succeed(plain))
    const i = at % (segments.length + 1)
    const name = trick === ".."
      ? [...segments.slice(0, i), "..", ...segments.slice(i)].join("/")
      : trick === "\\"
      ? plain.slice(0, i) + "\\" + plain.slice(i)
      : trick + plain
    expect(Result.isFailure(checkEntryName(name)), name).toBe(true)
  }))
})
