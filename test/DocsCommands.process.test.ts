/**
 * The commands docs/ marks as replayable run as written: each shell block after a
 * `<!-- replayed by test/DocsCommands.process.test.ts -->` line in docs/*.md or bench/README.md runs in
 * bash (`set -eo pipefail`), in a scratch folder of its own, and must succeed. Marked are only
 * commands that run in seconds, offline and without a service (the README's walkthrough, which
 * starts one, is test/Readme.process.test.ts's). `npm` runs the project's scripts from the scratch folder,
 * which also holds the data folder, so that no block writes into the repository.
 */
import { expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import { replayMarker, shellBlocksAfter } from "./support/Markdown.ts"

const root = path.resolve(import.meta.dirname, "..")
const execFileAsync = promisify(execFile)

const marker = replayMarker("test/DocsCommands.process.test.ts")

interface Block {
  readonly page: string
  readonly line: number
  readonly script: string
}

/** The marked shell blocks of a page, with the line of each marker. */
export const replayable = (page: string, markdown: string): Array<Block> =>
  shellBlocksAfter(markdown, marker).map(({ index, script }) => ({ page, line: markdown.slice(0, index).split("\n").length, script }))

const pages = [
  ...fs.readdirSync(path.join(root, "docs")).filter((name) => name.endsWith(".md")).sort().map((name) => `docs/${name}`),
  "bench/README.md"
]
const blocks = pages.flatMap((page) => replayable(page, fs.readFileSync(path.join(root, page), "utf8")))

/** Every setting (docs/operating.md, "Settings"): none may leak in from the suite's environment. */
const settings = () => {
  const page = fs.readFileSync(path.join(root, "docs", "operating.md"), "utf8")
  const table = page.slice(page.indexOf("## Settings"), page.indexOf("## Logs"))
  return new Set([...table.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!))
}

const quoted = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`

const preamble = `set -eo pipefail
npm() { command npm --prefix ${quoted(root)} "$@"; }
`

it("finds the marked blocks, and only whole shell blocks", () => {
  const marked = pages.reduce((n, page) => n + fs.readFileSync(path.join(root, page), "utf8").split(marker).length - 1, 0)
  expect(blocks.length, "a marker not followed by a ```sh block").toBe(marked)
  expect(blocks.length).toBeGreaterThanOrEqual(4)
  expect(replayable("x.md", `a\n${marker}\n\`\`\`sh\necho 1\n\`\`\`\n\`\`\`sh\necho 2\n\`\`\`\n`).map((b) => b.script)).toEqual(["echo 1"])
})

it.each(blocks.map((block) => [`${block.page}:${block.line}`, block] as const))("the commands at %s run as written", async (_, block) => {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "registry-docs-"))
  try {
    const env: NodeJS.ProcessEnv = { ...process.env }
    for (const name of settings()) delete env[name]
    env.DATA_DIR = path.join(scratch, "data")
    const run = await execFileAsync("bash", ["-c", preamble + block.script], { cwd: scratch, env, timeout: 120_000 })
      .then(() => undefined, (error: { code?: number; stdout?: string; stderr?: string }) =>
        `exit ${error.code}\nstdout:\n${error.stdout}\nstderr:\n${error.stderr}`)
    expect(run, `${block.page}:${block.line}\n${block.script}`).toBeUndefined()
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true })
  }
}, 150_000)
