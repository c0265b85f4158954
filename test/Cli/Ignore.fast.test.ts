/**
 * `.registryignore` patterns: the gitignore syntax by example, by property, and against git
 * itself (the same patterns as a `.gitignore`, the same files, `git ls-files --others
 * --exclude-standard` as the oracle).
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll } from "vitest"
import { isIgnored, parseRules } from "../../src/Cli/Ignore.ts"
import { forAllSync } from "../support/Property.ts"

const ignored = (patterns: string, paths: ReadonlyArray<string>) => {
  const rules = parseRules(patterns)
  return paths.filter((p) => isIgnored(rules, p))
}

describe(".registryignore by example", () => {
  const tree = [
    "README.md",
    "build/out.js",
    "src/build/keep.ts",
    "src/a.ts",
    "src/a.test.ts",
    "docs/build",
    "logs/x.log",
    "deep/logs/y.log",
    "a/b/c/d.txt",
    "a/x/d.txt",
    ".env",
    "#notes",
    "!bang",
    "trail "
  ]

  it("comments and blank lines are skipped; \\# and \\! are literal", () => {
    expect(ignored("# README.md\n\n   \n", tree)).toEqual([])
    expect(ignored("\\#notes\n\\!bang", tree)).toEqual(["#notes", "!bang"])
  })

  it("a name matches at any depth; a leading or middle / anchors it", () => {
    expect(ignored("build", tree)).toEqual(["build/out.js", "src/build/keep.ts", "docs/build"])
    expect(ignored("/build", tree)).toEqual(["build/out.js"])
    expect(ignored("src/build", tree)).toEqual(["src/build/keep.ts"])
  })

  it("a trailing / matches directories only", () => {
    expect(ignored("build/", tree)).toEqual(["build/out.js", "src/build/keep.ts"])
  })

  it("* stays within a segment; ? is one character; classes", () => {
    expect(ignored("*.log", tree)).toEqual(["logs/x.log", "deep/logs/y.log"])
    expect(ignored("src/*.ts", tree)).toEqual(["src/a.ts", "src/a.test.ts"])
    expect(ignored("/*.md", tree)).toEqual(["README.md"])
    expect(ignored("src/?.ts", tree)).toEqual(["src/a.ts"])
    expect(ignored("[.]env", tree)).toEqual([".env"])
    expect(ignored("[!.]env", tree)).toEqual([])
    expect(ignored("a/[a-b]", tree)).toEqual(["a/b/c/d.txt"])
    // a reversed range matches nothing, rather than failing
    expect(ignored("[z-a]*", tree)).toEqual([])
  })

  it("** as leading, trailing and middle segment", () => {
    expect(ignored("**/logs", tree)).toEqual(["logs/x.log", "deep/logs/y.log"])
    expect(ignored("logs/**", tree)).toEqual(["logs/x.log"])
    expect(ignored("a/**/d.txt", tree)).toEqual(["a/b/c/d.txt", "a/x/d.txt"])
    expect(ignored("**", tree)).toEqual(tree)
  })

  it("! re-includes; the last match decides; a file under an excluded directory stays excluded", () => {
    expect(ignored("src/*\n!src/a.ts", tree)).toEqual(["src/build/keep.ts", "src/a.test.ts"])
    expect(ignored("logs/\n!logs/x.log", tree)).toEqual(["logs/x.log", "deep/logs/y.log"])
    expect(ignored("logs/\n!logs/", tree)).toEqual([])
  })

  it("trailing spaces go unless escaped", () => {
    expect(ignored("README.md   ", tree)).toEqual(["README.md"])
    expect(ignored("trail\\ ", tree)).toEqual(["trail "])
    expect(ignored("trail", tree)).toEqual([])
  })
})

// --- properties ----------------------------------------------------------------------------------

const name = fc.stringMatching(/^[a-z]{1,3}(\.[a-z]{1,2})?$/)
const filePath = fc.array(name, { minLength: 1, maxLength: 4 }).map((s) => s.join("/"))
const paths = fc.uniqueArray(filePath, { minLength: 1, maxLength: 30 })

describe(".registryignore by property", () => {
  it("a pattern followed by its negation excludes nothing", () => forAllSync({ pattern: fc.oneof(name, filePath), ps: paths }, ({ pattern, ps }) => {
    expect(ignored(`${pattern}\n!${pattern}`, ps)).toEqual([])
  }))

  it("a plain name excludes exactly the paths with a segment of that name", () => forAllSync({ n: name, ps: paths }, ({ n, ps }) => {
    expect(ignored(n, ps)).toEqual(ps.filter((p) => p.split("/").includes(n)))
  }))

  it("/name excludes exactly the paths whose first segment is that name", () => forAllSync({ n: name, ps: paths }, ({ n, ps }) => {
    expect(ignored(`/${n}`, ps)).toEqual(ps.filter((p) => p.split("/")[0] === n))
  }))

  it("name/ excludes exactly the paths with a directory of that name", () => forAllSync({ n: name, ps: paths }, ({ n, ps }) => {
    expect(ignored(`${n}/`, ps)).toEqual(ps.filter((p) => p.split("/").slice(0, -1).includes(n)))
  }))

  it("*.ext excludes exactly the paths with a segment ending in .ext", () => forAllSync({ ext: fc.stringMatching(/^[a-z]{1,2}$/), ps: paths }, ({ ext, ps }) => {
    expect(ignored(`*.${ext}`, ps)).toEqual(ps.filter((p) => p.split("/").some((s) => s.endsWith(`.${ext}`))))
  }))

  it("an exact path excludes itself and everything under it", () => forAllSync({ p: filePath, ps: paths }, ({ p, ps }) => {
    expect(ignored(`/${p}`, ps)).toEqual(ps.filter((q) => q === p || q.startsWith(`${p}/`)))
  }))
})

// --- against git -----------------------------------------------------------------------------------

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "registry-ignore-"))
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }))
let runs = 0

/**
 * One repository, created once, with an empty index: each run lists its own work tree against it,
 * one git process a run instead of two (an init per run was most of this file's time).
 */
const gitDir = path.join(scratch, "repository", ".git")
execFileSync("git", ["init", "-q", path.dirname(gitDir)])

/** The files git leaves out with these patterns as the root's `.gitignore`. */
const gitIgnored = (patterns: string, files: ReadonlyArray<string>): Array<string> => {
  const dir = path.join(scratch, `r${runs++}`)
  fs.mkdirSync(dir)
  for (const file of files) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true })
    fs.writeFileSync(path.join(dir, file), "x")
  }
  fs.writeFileSync(path.join(dir, ".gitignore"), patterns)
  const kept = new Set(
    execFileSync("git", [`--git-dir=${gitDir}`, `--work-tree=${dir}`, "ls-files", "-z", "--others", "--exclude-standard"], {
      cwd: dir,
      encoding: "utf8"
    }).split("\0")
  )
  fs.rmSync(dir, { recursive: true, force: true })
  return files.filter((f) => !kept.has(f))
}

/** A file set where no file is also a directory. */
const tree = paths.map((ps) => ps.filter((p) => !ps.some((q) => q.startsWith(`${p}/`))))

const segmentGlob = fc.oneof(name, fc.constantFrom("*", "?", "*.a", "[a-c]*", "[!a]", "a*", "**"))
const pattern = fc.tuple(
  fc.boolean(),
  fc.boolean(),
  fc.array(segmentGlob, { minLength: 1, maxLength: 3 }),
  fc.boolean()
).map(([negated, anchored, segments, directoryOnly]) =>
  `${negated ? "!" : ""}${anchored ? "/" : ""}${segments.join("/")}${directoryOnly ? "/" : ""}`
)

describe(".registryignore against git", () => {
  it("excludes what git excludes", () => forAllSync({
    files: tree,
    patterns: fc.array(pattern, { minLength: 1, maxLength: 5 })
  }, ({ files, patterns }) => {
    const text = patterns.join("\n") + "\n"
    // .gitignore itself is not one of the files
    expect(ignored(text, files), text).toEqual(gitIgnored(text, files))
  }, { numRuns: 60 }))
})
