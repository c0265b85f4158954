/**
 * The documentation's relative links resolve: in README.md, docs/*.md, docs/design/*.md and bench/README.md, every
 * link that is not an absolute URL names a file or folder of the repository, and a `#anchor`
 * names a heading of the page it points at, as GitHub derives heading anchors. Links inside code
 * blocks and code spans are text, not links. Reads files only: no service, no database.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"

const root = path.resolve(import.meta.dirname, "..")

/** The pages whose links are checked, relative to the repository. */
export const documentationPages = (): Array<string> => [
  "README.md",
  ...fs.readdirSync(path.join(root, "docs")).filter((name) => name.endsWith(".md")).sort().map((name) => `docs/${name}`),
  ...fs.readdirSync(path.join(root, "docs", "design")).filter((name) => name.endsWith(".md")).sort().map((name) => `docs/design/${name}`),
  "bench/README.md"
]

/** The page without its fenced code blocks, each line kept (blank) so that line numbers hold. */
const withoutFences = (markdown: string): Array<string> => {
  let fence: string | undefined
  return markdown.split("\n").map((line) => {
    const opening = /^\s*(```+|~~~+)/.exec(line)
    if (fence === undefined && opening) {
      fence = opening[1]!
      return ""
    }
    if (fence !== undefined) {
      if (line.trim().startsWith(fence)) fence = undefined
      return ""
    }
    return line
  })
}

/** A line without its code spans, except where a span is a link's whole text (`[`x`](y)`). */
const withoutCodeSpans = (line: string) => line.replace(/(?<!\[)`[^`]*`(?!\])/g, "")

export interface Link {
  readonly line: number
  readonly target: string
}

/** The inline links of a page (`[text](target)`, images too), with their line. */
export const linksOf = (markdown: string): Array<Link> =>
  withoutFences(markdown).flatMap((text, i) =>
    [...withoutCodeSpans(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => ({ line: i + 1, target: m[1]! }))
  )

/**
 * A heading's anchor as GitHub makes it: lower case, punctuation dropped (letters, digits, `-`,
 * `_` and spaces stay), each space a hyphen; a repeated anchor gets `-1`, `-2`, ...
 */
export const slugOf = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\- _]/gu, "")
    .replace(/ /g, "-")

/** The anchors of a page's headings (ATX headings outside code blocks). */
export const anchorsOf = (markdown: string): Set<string> => {
  const seen = new Map<string, number>()
  const anchors = new Set<string>()
  for (const line of withoutFences(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (!heading) continue
    const slug = slugOf(heading[1]!.replace(/`/g, ""))
    const count = seen.get(slug) ?? 0
    seen.set(slug, count + 1)
    anchors.add(count === 0 ? slug : `${slug}-${count}`)
  }
  return anchors
}

const isAbsolute = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target)

/** What is wrong with a page's relative links: one line per broken link, naming the page and line. */
export const brokenLinks = (page: string): Array<string> => {
  const file = path.join(root, page)
  const text = fs.readFileSync(file, "utf8")
  const problems: Array<string> = []
  for (const { line, target } of linksOf(text)) {
    if (isAbsolute(target)) continue
    const [pathPart, anchor] = target.split("#", 2) as [string, string | undefined]
    const resolved = pathPart === "" ? file : path.resolve(path.dirname(file), decodeURIComponent(pathPart))
    const where = `${page}:${line}: ${target}`
    if (!resolved.startsWith(root + path.sep) && resolved !== root) {
      problems.push(`${where}: leaves the repository`)
      continue
    }
    if (!fs.existsSync(resolved)) {
      problems.push(`${where}: no such file`)
      continue
    }
    if (anchor === undefined || anchor === "") continue
    if (!resolved.endsWith(".md")) {
      problems.push(`${where}: an anchor into a file that is not markdown`)
      continue
    }
    if (!anchorsOf(fs.readFileSync(resolved, "utf8")).has(anchor)) problems.push(`${where}: no heading with this anchor`)
  }
  return problems
}

describe("the documentation's links", () => {
  it("reads links and anchors as GitHub renders them", () => {
    expect(slugOf("Media proxy: video to music")).toBe("media-proxy-video-to-music")
    expect(slugOf("Browsers (CORS)")).toBe("browsers-cors")
    expect(slugOf("Media proxy — images")).toBe("media-proxy--images")
    expect(slugOf("Adding an endpoint, a feature, a setting")).toBe("adding-an-endpoint-a-feature-a-setting")
    expect(slugOf("The manifest: pyproject.toml")).toBe("the-manifest-pyprojecttoml")
    expect([...anchorsOf("# A\n## Notes\n```sh\n# not a heading\n```\n## Notes\n### `publish`\n")]).toEqual(["a", "notes", "notes-1", "publish"])
    const page = "[a](docs/x.md#y) `[b](not/a/link.md)` [`c`](z.md)\n```sh\n[d](nor/this.md)\n```\n![e](img.png \"title\")\n"
    expect(linksOf(page)).toEqual([
      { line: 1, target: "docs/x.md#y" },
      { line: 1, target: "z.md" },
      { line: 5, target: "img.png" }
    ])
  })

  it("checks every page of the documentation map", () => {
    const pages = documentationPages()
    expect(pages).toEqual(expect.arrayContaining(["README.md", "docs/operating.md", "docs/api.md", "docs/publishing.md", "docs/architecture.md", "docs/design/publishing.md", "bench/README.md"]))
    const linked = pages.reduce((n, page) => n + linksOf(fs.readFileSync(path.join(root, page), "utf8")).filter((l) => !isAbsolute(l.target)).length, 0)
    expect(linked).toBeGreaterThan(100)
  })

  it("finds a missing file and a missing anchor", () => {
    const scratch = fs.mkdtempSync(path.join(root, "docs", ".links-"))
    try {
      const page = path.relative(root, path.join(scratch, "page.md"))
      fs.writeFileSync(path.join(scratch, "page.md"), "# Title\n\n[ok](#title) [gone](#nowhere) [none](missing.md) [up](../../README.md#two-commands)\n")
      expect(brokenLinks(page)).toEqual([`${page}:3: #nowhere: no heading with this anchor`, `${page}:3: missing.md: no such file`])
    } finally {
      fs.rmSync(scratch, { recursive: true, force: true })
    }
  })

  it.each(documentationPages())("every relative link of %s resolves", (page) => {
    expect(brokenLinks(page)).toEqual([])
  })
})
