/**
 * The archive of a node's directory: git's tracked files minus `.registryignore`, plus the
 * manifest's includes, sorted; and the zip of them, the same bytes every time.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import yauzl from "yauzl"
import { writeZip } from "../../src/Cli/Archive.ts"
import { archiveFiles } from "../../src/Cli/Files.ts"
import { reportOf } from "../../src/Cli/Failure.ts"

const tempDir = Effect.acquireRelease(
  Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "registry-files-"))),
  (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
)

const write = (dir: string, files: Readonly<Record<string, string>>) =>
  Effect.promise(async () => {
    for (const [name, content] of Object.entries(files)) {
      await fs.mkdir(path.dirname(path.join(dir, name)), { recursive: true })
      await fs.writeFile(path.join(dir, name), content)
    }
  })

const git = (dir: string, ...args: Array<string>) =>
  Effect.sync(() => execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", ...args], { cwd: dir, encoding: "utf8" }))

/** A repository whose node lives in `node/`, with tracked, ignored and untracked files. */
const repository = Effect.gen(function*() {
  const root = yield* tempDir
  yield* git(root, "init", "-q")
  yield* write(root, {
    "outside.txt": "not the node's",
    "node/pyproject.toml": "[project]\n",
    "node/__init__.py": "NODES = {}\n",
    "node/src/a.py": "a\n",
    "node/src/a_test.py": "test\n",
    "node/docs/guide.md": "# Guide\n",
    "node/web/app.js": "js\n",
    "node/.registryignore": "# tests and docs stay out\n*_test.py\n/docs/\n",
    "node/.gitignore": "models/\n*.log\n",
    "node/models/big.bin": "weights",
    "node/models/small.bin": "w",
    "node/models/readme.txt": "r",
    "node/debug.log": "log"
  })
  yield* Effect.promise(() => fs.chmod(path.join(root, "node/src/a.py"), 0o755))
  yield* Effect.promise(() => fs.symlink("__init__.py", path.join(root, "node/link.py")))
  yield* git(root, "add", ".")
  yield* git(root, "commit", "-q", "-m", "initial")
  // tracked, then deleted from the working tree: not archived
  yield* write(root, { "node/gone.py": "x" })
  yield* git(root, "add", "node/gone.py")
  yield* git(root, "commit", "-q", "-m", "gone")
  yield* Effect.promise(() => fs.rm(path.join(root, "node/gone.py")))
  return path.join(root, "node")
})

const entriesOf = (zipFile: string) =>
  Effect.promise(async () => {
    const zip = await yauzl.openPromise(zipFile)
    const out: Array<{ name: string; mode: number; content: string }> = []
    for await (const entry of zip.eachEntry()) {
      const stream = await zip.openReadStreamPromise(entry)
      const chunks: Array<Buffer> = []
      for await (const chunk of stream) chunks.push(chunk as Buffer)
      out.push({ name: entry.fileName, mode: (entry.externalFileAttributes >>> 16) & 0o777, content: Buffer.concat(chunks).toString() })
    }
    zip.close()
    return out
  })

describe("the archive's files", () => {
  it.effect("tracked files minus .registryignore, plus includes, sorted; links skipped", () =>
    Effect.gen(function*() {
      const dir = yield* repository
      const list = yield* archiveFiles(dir, ["models/*.bin"])
      expect(list.files).toEqual([
        ".gitignore",
        ".registryignore",
        "__init__.py",
        "models/big.bin",
        "models/small.bin",
        "pyproject.toml",
        "src/a.py",
        "web/app.js"
      ])
      expect(list.skipped).toEqual([{ path: "link.py", reason: "a symlink" }])
      // a directory include takes everything under it
      expect((yield* archiveFiles(dir, ["models/"])).files).toContain("models/readme.txt")
    }).pipe(Effect.provide(NodeServices.layer)))

  it.effect("an include that matches nothing, or a directory git does not know, is a usage failure", () =>
    Effect.gen(function*() {
      const dir = yield* repository
      const error = yield* Effect.flip(archiveFiles(dir, ["weights/*.safetensors"]))
      expect(reportOf(error)).toMatchObject({ kind: "usage", code: "bad_manifest" })
      expect(error.message).toContain("weights/*.safetensors matches no file")
      const plain = yield* tempDir
      const notGit = yield* Effect.flip(archiveFiles(plain, []))
      expect(reportOf(notGit)).toMatchObject({ kind: "usage", code: "not_a_git_repository" })
    }).pipe(Effect.provide(NodeServices.layer)))

  it.effect("the zip holds those files with their content and modes, and is the same bytes each time", () =>
    Effect.gen(function*() {
      const dir = yield* repository
      const out = yield* tempDir
      const { files } = yield* archiveFiles(dir, [])
      const size = yield* writeZip(dir, files, path.join(out, "a.zip"))
      expect(size).toBe((yield* Effect.promise(() => fs.stat(path.join(out, "a.zip")))).size)
      const entries = yield* entriesOf(path.join(out, "a.zip"))
      expect(entries.map((e) => e.name)).toEqual(files)
      expect(entries.find((e) => e.name === "src/a.py")).toMatchObject({ mode: 0o755, content: "a\n" })
      expect(entries.find((e) => e.name === "__init__.py")).toMatchObject({ mode: 0o644, content: "NODES = {}\n" })
      // touched files, another moment: the same bytes
      yield* Effect.promise(() => fs.utimes(path.join(dir, "__init__.py"), new Date(), new Date(2001, 1, 1)))
      yield* writeZip(dir, files, path.join(out, "b.zip"))
      const [a, b] = yield* Effect.promise(() => Promise.all([fs.readFile(path.join(out, "a.zip")), fs.readFile(path.join(out, "b.zip"))]))
      expect(Buffer.compare(a, b)).toBe(0)
    }).pipe(Effect.provide(NodeServices.layer)))
})
