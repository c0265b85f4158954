/**
 * Which files of a node's directory go into its archive: the ones git tracks (`git ls-files` run
 * in the directory), minus those `.registryignore` excludes, plus the manifest's `includes` (even
 * untracked ones), in byte order of their paths so that the same tree always gives the same list.
 *
 * Only regular files are archived: a tracked symbolic link or submodule is skipped (installers
 * refuse links, and a link could point outside the node).
 */
import { Effect, Stream } from "effect"
import { ChildProcess } from "effect/process"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { failed, usage } from "./Failure.ts"
import { isIgnored, parseRule, parseRules } from "./Ignore.ts"

const ignoreFileName = ".registryignore"

export interface FileList {
  /** Paths relative to the directory, `/`-separated, sorted. */
  readonly files: ReadonlyArray<string>
  /** Tracked or included paths left out, with why. */
  readonly skipped: ReadonlyArray<{ readonly path: string; readonly reason: string }>
}

const collect = <E>(stream: Stream.Stream<Uint8Array, E>) =>
  Effect.map(Stream.runCollect(stream), (chunks) => Buffer.concat(chunks).toString("utf8"))

/** `git <args>` in `dir`: its standard output; a failure naming git's first line of complaint otherwise. */
const git = (dir: string, ...args: Array<string>) =>
  Effect.scoped(Effect.gen(function*() {
    const process = yield* ChildProcess.make("git", args, { cwd: dir })
    const [stdout, stderr, exitCode] = yield* Effect.all([collect(process.stdout), collect(process.stderr), process.exitCode], {
      concurrency: "unbounded"
    })
    if (exitCode !== 0) {
      const complaint = stderr.split("\n").find((line) => line.trim() !== "") ?? `exit code ${exitCode}`
      return yield* usage("not_a_git_repository", `git ${args.join(" ")} in ${dir} failed: ${complaint.trim()}`)
    }
    return stdout
  })).pipe(
    Effect.catchTag("PlatformError", (e) => Effect.fail(usage("git_missing", `cannot run git: ${e.message}`)))
  )

/** What is at `file`, without following a link. */
const kindOf = (file: string) =>
  Effect.promise(() =>
    fs.lstat(file).then(
      (stat) => stat.isFile() ? "file" as const : stat.isSymbolicLink() ? "symlink" as const : stat.isDirectory() ? "directory" as const : "other" as const,
      () => "missing" as const
    )
  )

/** Every regular file under `dir` (not inside `.git`, not through links), relative and `/`-separated. */
const walk = (dir: string): Effect.Effect<ReadonlyArray<string>, ReturnType<typeof failed>> =>
  Effect.tryPromise({
    try: async () => {
      const out: Array<string> = []
      const visit = async (relative: string): Promise<void> => {
        const entries = await fs.readdir(path.join(dir, relative), { withFileTypes: true })
        for (const entry of entries) {
          const child = relative === "" ? entry.name : `${relative}/${entry.name}`
          if (entry.isDirectory()) {
            if (entry.name !== ".git") await visit(child)
          } else if (entry.isFile()) {
            out.push(child)
          }
        }
      }
      await visit("")
      return out
    },
    catch: (e) => failed("io_error", `cannot list ${dir}: ${e instanceof Error ? e.message : String(e)}`)
  })

/** The rules of `dir`'s `.registryignore`, none when there is no such file. */
const ignoreRules = (dir: string) =>
  Effect.promise(() => fs.readFile(path.join(dir, ignoreFileName), "utf8").catch(() => "")).pipe(Effect.map(parseRules))

/** The archive's files for the node in `dir`. */
export const archiveFiles = (dir: string, includes: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const tracked = (yield* git(dir, "ls-files", "-z", "--cached")).split("\0").filter((p) => p !== "")
    const rules = yield* ignoreRules(dir)
    const chosen = new Set<string>()
    const skipped: Array<{ path: string; reason: string }> = []
    // a file listed twice (a merge conflict's stages) is looked at once
    for (const file of new Set(tracked)) {
      if (isIgnored(rules, file)) continue
      const kind = yield* kindOf(path.join(dir, file))
      if (kind === "file") chosen.add(file)
      else if (kind !== "missing") skipped.push({ path: file, reason: kind === "directory" ? "a submodule" : `a ${kind}` })
    }
    if (includes.length > 0) {
      const everything = yield* walk(dir)
      for (const include of includes) {
        const rule = parseRule(include)
        const matched = rule === undefined ? [] : everything.filter((file) => isIgnored([rule], file))
        if (matched.length === 0) {
          return yield* usage("bad_manifest", `pyproject.toml: [tool.registry] includes: ${include} matches no file in ${dir}`)
        }
        for (const file of matched) chosen.add(file)
      }
    }
    return { files: [...chosen].sort(), skipped } satisfies FileList
  })
