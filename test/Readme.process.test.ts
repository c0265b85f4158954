/**
 * The README's walkthrough, replayed as a newcomer types it: the shell blocks marked `<!-- replayed
 * by test/Readme.process.test.ts -->`, in order, in one bash session (the service that its first
 * block starts with `npm start &` serves them all), in a scratch folder of its own on a free port.
 * Every command must succeed (`set -e`), every HTTP answer must be below 400, and where the README
 * shows an answer (`# 201 {"id": "acme", …}`) the last answer before it must have that status and
 * that shape: `…` stands for any value, any more members or elements, or any text within a string.
 *
 * Not replayed: the install and test commands (the suite itself), the music example (it uploads a
 * video file), the benchmarks (minutes), the demo's token command (Demo.process.test.ts runs what
 * the demo prints). The session runs against the suite's PostgreSQL (`DATABASE_URL`): the embedded
 * server that a fresh clone gets is started by Demo.process.test.ts, so this one skips its seconds
 * of start-up.
 */
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { freePort } from "../src/Db/Embedded.ts"
import { replayMarker, shellBlocksAfter } from "./support/Markdown.ts"
import { freshDatabase } from "./support/Service.ts"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const ellipsis = "…"

interface Expectation {
  readonly status: number
  readonly text: string
}

/** Commands up to an answer the README shows (or to the end of a block). */
interface Segment {
  readonly script: string
  readonly expectation: Expectation | undefined
}

/** The bodies of the marked shell blocks, in order. */
export const replayedBlocks = (readme: string) =>
  shellBlocksAfter(readme, replayMarker("test/Readme.process.test.ts")).map((block) => block.script)

/** A block cut after each shown answer: `# <status> <JSON>`, continued on the comment lines below it. */
export const segmentsOf = (block: string): Array<Segment> => {
  const lines = block.split("\n")
  const segments: Array<Segment> = []
  let current: Array<string> = []
  for (let i = 0; i < lines.length; i++) {
    const shown = /^# (\d{3}) (.*)$/.exec(lines[i]!)
    if (!shown) {
      current.push(lines[i]!)
      continue
    }
    let text = shown[2]!
    while (i + 1 < lines.length && /^#\s/.test(lines[i + 1]!) && !/^# \d{3} /.test(lines[i + 1]!)) {
      text += " " + lines[++i]!.replace(/^#\s*/, "")
    }
    segments.push({ script: current.join("\n"), expectation: { status: Number(shown[1]), text } })
    current = []
  }
  if (current.some((line) => line.trim() !== "")) segments.push({ script: current.join("\n"), expectation: undefined })
  return segments
}

/**
 * A shown answer as a JSON template: a bare `…` becomes the string "…", and one that stands for
 * more members of an object is dropped (more members are always allowed).
 */
export const templateOf = (text: string): unknown => {
  let json = ""
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!
    if (inString) {
      json += ch
      if (ch === "\\") json += text[++i] ?? ""
      else if (ch === "\"") inString = false
    } else if (ch === "\"") {
      inString = true
      json += ch
    } else {
      json += ch === ellipsis ? JSON.stringify(ellipsis) : ch
    }
  }
  const members = json.replace(/,\s*"…"\s*(?=\})/g, "").replace(/\{\s*"…"\s*\}/g, "{}")
  return JSON.parse(members)
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** Where `actual` departs from the template, or undefined when it has its shape. */
export const mismatch = (actual: unknown, template: unknown, at = "$"): string | undefined => {
  if (template === ellipsis) return undefined
  if (typeof template === "string" && template.includes(ellipsis)) {
    const pattern = new RegExp(`^${template.split(ellipsis).map(escapeRegExp).join("[\\s\\S]*")}$`)
    return typeof actual === "string" && pattern.test(actual) ? undefined : `${at}: ${JSON.stringify(actual)} is not ${template}`
  }
  if (Array.isArray(template)) {
    if (!Array.isArray(actual)) return `${at}: ${JSON.stringify(actual)} is not an array`
    const open = template.at(-1) === ellipsis
    const listed = open ? template.slice(0, -1) : template
    if (open ? actual.length < listed.length : actual.length !== listed.length) {
      return `${at}: ${actual.length} elements, the README shows ${listed.length}${open ? " or more" : ""}`
    }
    for (const [i, element] of listed.entries()) {
      const problem = mismatch(actual[i], element, `${at}[${i}]`)
      if (problem !== undefined) return problem
    }
    return undefined
  }
  if (typeof template === "object" && template !== null) {
    if (typeof actual !== "object" || actual === null || Array.isArray(actual)) return `${at}: ${JSON.stringify(actual)} is not an object`
    for (const [key, value] of Object.entries(template)) {
      if (!(key in actual)) return `${at}.${key} is missing`
      const problem = mismatch((actual as Record<string, unknown>)[key], value, `${at}.${key}`)
      if (problem !== undefined) return problem
    }
    return undefined
  }
  return Object.is(actual, template) ? undefined : `${at}: ${JSON.stringify(actual)} is not ${JSON.stringify(template)}`
}

const quoted = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`

/**
 * Before the README's commands: stop at the first failing one, naming it; `npm` runs the project's
 * scripts from this scratch folder, the service's output going to service.log; `curl` ends each
 * answer with a newline, and reports its status on standard error.
 */
const preamble = `set -eo pipefail
trap 'echo "::failed with status $? at: $BASH_COMMAND" >&2' ERR
npm() {
  if [ "$1" = start ]; then command npm --prefix ${quoted(root)} "$@" >>service.log 2>&1
  else command npm --prefix ${quoted(root)} "$@"; fi
}
curl() { command curl -w '\\n%{stderr}::http %{http_code} %{url_effective}\\n' "$@"; }
`

const marker = (i: number) => `printf '\\n::segment ${i}\\n'; printf '::segment ${i}\\n' >&2`

/** Every setting (docs/operating.md, "Settings"): none may leak in from the suite's environment. */
const configured = (operating: string) => {
  const table = operating.slice(operating.indexOf("## Settings"), operating.indexOf("## Logs"))
  return new Set([...table.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!))
}

interface Session {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Resolves once no process of the group is left; SIGKILL after `graceMillis`. */
const groupGone = async (pgid: number, graceMillis: number) => {
  const alive = () => {
    try {
      process.kill(-pgid, 0)
      return true
    } catch {
      return false
    }
  }
  const deadline = Date.now() + graceMillis
  while (alive()) {
    if (Date.now() > deadline) process.kill(-pgid, "SIGKILL")
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/**
 * Runs the script in its own process group; when bash is done (or the time is up), the group is
 * sent SIGTERM, as Ctrl-C would stop the service it started. Resolves once every member of the
 * group is gone (the service writes to its log, not to these pipes).
 */
const runSession = (script: string, cwd: string, env: NodeJS.ProcessEnv, timeoutMillis: number) =>
  new Promise<Session>((resolve, reject) => {
    const child = spawn("bash", ["-c", script], { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    let code: number | null = null
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d))
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
    const stopGroup = (signal: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, signal)
      } catch {
        // the group is gone already
      }
    }
    const timer = setTimeout(() => {
      stderr += `\n::timed out after ${timeoutMillis} ms\n`
      stopGroup("SIGKILL")
    }, timeoutMillis)
    const stragglers = setTimeout(() => stopGroup("SIGKILL"), timeoutMillis + 30_000)
    child.on("error", reject)
    child.on("exit", (exitCode) => {
      code = exitCode
      stopGroup("SIGTERM")
    })
    child.on("close", () => {
      clearTimeout(timer)
      clearTimeout(stragglers)
      groupGone(child.pid!, 30_000).then(() => resolve({ code, stdout, stderr }), reject)
    })
  })

/** Each segment's part of a stream, by its markers. */
const bySegment = (output: string) => {
  const parts = new Map<number, string>()
  for (const part of output.split(/^::segment (?=\d+$)/m).slice(1)) {
    const newline = part.indexOf("\n")
    parts.set(Number(part.slice(0, newline)), part.slice(newline + 1))
  }
  return parts
}

/** The answer shown on the last line of a segment's output, as JSON. */
const parsed = (line: string, where: string): unknown => {
  try {
    return JSON.parse(line)
  } catch {
    return expect.fail(`the last line of output is not JSON: ${line}\n${where}`)
  }
}

const hasTools = (...tools: Array<string>) => {
  try {
    execFileSync("bash", ["-c", tools.map((t) => `command -v ${t}`).join(" && ")], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
}

// a developer without them is told by the skip; CI installs them (.ci/run), so there it must run
it.live.skipIf(!hasTools("curl", "jq", "zip") && process.env.CI === undefined)("the README's walkthrough runs as written, in order, with the answers it shows", () =>
  Effect.gen(function*() {
    const scratch = yield* Effect.acquireRelease(
      Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "registry-readme-"))),
      (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
    )
    const { url } = yield* freshDatabase
    const port = yield* Effect.promise(() => freePort())
    const readme = (yield* Effect.promise(() => fs.readFile(path.join(root, "README.md"), "utf8")))
    const operating = yield* Effect.promise(() => fs.readFile(path.join(root, "docs", "operating.md"), "utf8"))
    const env: NodeJS.ProcessEnv = { ...process.env }
    for (const name of configured(operating)) delete env[name]
    Object.assign(env, { PORT: String(port), HOST: "127.0.0.1", DATABASE_URL: url, DATA_DIR: path.join(scratch, "data") })

    const blocks = replayedBlocks(readme.replaceAll("localhost:8080", `localhost:${port}`))
    expect(blocks.length).toBeGreaterThanOrEqual(5)
    expect(blocks[0]).toMatch(/npm start &/)
    const segments = blocks.flatMap(segmentsOf)
    const script = [preamble, ...segments.flatMap((segment, i) => [marker(i), segment.script]), marker(segments.length)].join("\n")

    const session = yield* Effect.promise(() => runSession(script, scratch, env, 240_000))
    const serviceLog = yield* Effect.promise(() => fs.readFile(path.join(scratch, "service.log"), "utf8").catch(() => ""))
    const context = `stdout:\n${session.stdout}\nstderr:\n${session.stderr}\nservice.log:\n${serviceLog}`
    expect(session.code, context).toBe(0)

    const stdouts = bySegment(session.stdout)
    const stderrs = bySegment(session.stderr)
    expect(stdouts.has(segments.length), `not every command ran:\n${context}`).toBe(true)
    for (const [i, segment] of segments.entries()) {
      const answers = [...(stderrs.get(i) ?? "").matchAll(/^::http (\d{3}) (\S+)$/gm)]
        .map((m) => ({ status: Number(m[1]), url: m[2]! }))
        .filter((answer) => !answer.url.endsWith("/ready"))
      const where = `after:\n${segment.script}\n${context}`
      const last = answers.at(-1)
      for (const answer of segment.expectation === undefined ? answers : answers.slice(0, -1)) {
        expect(answer.status, `${answer.url} ${where}`).toBeLessThan(400)
      }
      if (segment.expectation === undefined) continue
      expect(last?.status, where).toBe(segment.expectation.status)
      const lines = (stdouts.get(i) ?? "").split("\n").filter((line) => line.trim() !== "")
      const answer = parsed(lines.at(-1) ?? "", where)
      expect(mismatch(answer, templateOf(segment.expectation.text)), `${JSON.stringify(answer)}\n${where}`).toBeUndefined()
    }
  }), 300_000)

it("the README's shown answers read as templates, and a template tells its shape from others", async () => {
  const readme = await fs.readFile(path.join(root, "README.md"), "utf8")
  const shown = replayedBlocks(readme).flatMap(segmentsOf).flatMap((s) => s.expectation === undefined ? [] : [s.expectation])
  expect(shown.length).toBeGreaterThanOrEqual(8)
  for (const expectation of shown) expect(() => templateOf(expectation.text), expectation.text).not.toThrow()

  const template = templateOf(`{"id": "acme", "nodes": [{"id": "…", …}, …], "url": "http://h/a?x=…&y=…", "n": …, …}`)
  const good = { id: "acme", nodes: [{ id: "a", more: 1 }, { id: "b" }], url: "http://h/a?x=1&y=2", n: 3, extra: true }
  expect(mismatch(good, template)).toBeUndefined()
  expect(mismatch({ ...good, id: "other" }, template)).toMatch(/\$\.id/)
  expect(mismatch({ ...good, nodes: [] }, template)).toMatch(/\$\.nodes/)
  expect(mismatch({ ...good, url: "http://h/b?x=1&y=2" }, template)).toMatch(/\$\.url/)
  const { n: _, ...withoutN } = good
  expect(mismatch(withoutN, template)).toMatch(/\$\.n is missing/)
  expect(mismatch({ generated: ["x"] }, templateOf(`{"generated": []}`))).toMatch(/elements/)
})
