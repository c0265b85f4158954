/**
 * The layers of ARCHITECTURE.md, checked on the source text: the contract (`src/Api.ts`, each
 * feature's `Api.ts`, `src/Domain`) is a leaf that a client can import without the server, `src`
 * has no import cycles, and no module imports a package that Effect 4 folded into `effect`.
 *
 * Imports are read with a small parser rather than by importing `src`, so these checks run (and
 * say where the layering broke) even while `src` does not type-check.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"

const root = path.resolve(import.meta.dirname, "..")
const src = path.join(root, "src")

/** A path as the messages show it: relative to the repository, with `/`. */
const show = (file: string) => path.relative(root, file).split(path.sep).join("/")

// --- the parser ----------------------------------------------------------------------------------

/**
 * What may stand between `import`/`export` and `from`: names, `*`, `as`, `type`, braces, commas,
 * whitespace (multi-line lists) and comments. No `=`, `(`, `:` or quote, so a match cannot run
 * from an `export const` or `export interface` into a later statement's `from "x"`.
 */
const clause = String.raw`(?:[\w$*\s{},]|\/\/[^\n]*|\/\*[\s\S]*?\*\/)*?`
const fromImport = new RegExp(String.raw`^[ \t]*(?:import|export)\b${clause}\bfrom\s*["']([^"']+)["']`, "gm")
const sideEffectImport = /^[ \t]*import\s*["']([^"']+)["']/gm

/** The specifiers a module imports or re-exports from, type-only ones included, in source order. */
const importsOf = (source: string): Array<string> =>
  [...source.matchAll(fromImport), ...source.matchAll(sideEffectImport)]
    .sort((a, b) => a.index - b.index)
    .map((match) => match[1]!)

const isRelative = (specifier: string) => specifier.startsWith("./") || specifier.startsWith("../")

/** The file a relative specifier names: `.ts` as written, or the `.ts` behind a `.js` or bare path. */
const resolve = (from: string, specifier: string): string => {
  const target = path.resolve(path.dirname(from), specifier)
  if (target.endsWith(".ts")) return target
  if (target.endsWith(".js")) return target.slice(0, -3) + ".ts"
  return fs.existsSync(`${target}.ts`) ? `${target}.ts` : path.join(target, "index.ts")
}

interface Module {
  readonly relative: ReadonlyArray<string>
  readonly bare: ReadonlyArray<string>
}

const readModule = (file: string): Module => {
  const specifiers = importsOf(fs.readFileSync(file, "utf8"))
  return {
    relative: [...new Set(specifiers.filter(isRelative).map((s) => resolve(file, s)))],
    bare: [...new Set(specifiers.filter((s) => !isRelative(s)))]
  }
}

// --- (a) the contract is a leaf ------------------------------------------------------------------

const contractRoot = path.join(src, "Api.ts")

const isContractModule = (file: string): boolean => {
  const parts = path.relative(src, file).split(path.sep)
  return file === contractRoot ||
    (parts.length === 2 && parts[1] === "Api.ts") ||
    (parts.length >= 2 && parts[0] === "Domain")
}

/**
 * What a client of the contract must be able to install: `effect` alone (its HttpApi is
 * `effect/http-api`; not `@effect/platform-node`). `semver` is the one exception: the Domain's
 * semantic-version schemas parse with it, and it runs anywhere.
 */
const isContractPackage = (specifier: string): boolean =>
  specifier === "effect" || specifier.startsWith("effect/") ||
  specifier === "semver"

/** Effect 3 packages that Effect 4 folded into `effect`: importing one would install Effect 3 again. */
const foldedIntoEffect = ["@effect/platform", "@effect/sql", "@effect/schema", "@effect/cli", "@effect/printer", "@effect/printer-ansi", "@effect/rpc", "@effect/cluster", "@effect/experimental"]

const isFoldedPackage = (specifier: string): boolean =>
  foldedIntoEffect.some((name) => specifier === name || specifier.startsWith(`${name}/`))

interface ContractWalk {
  /** Every module reached, with the chain of imports from `src/Api.ts` that reached it first. */
  readonly reached: Map<string, ReadonlyArray<string>>
  readonly problems: Array<string>
}

/**
 * Breadth first, so each chain is a shortest one. A module outside the contract is reported and
 * not walked into: cutting that one import removes everything behind it.
 */
const walkContract = (): ContractWalk => {
  const reached = new Map<string, ReadonlyArray<string>>([[contractRoot, [contractRoot]]])
  const problems: Array<string> = []
  const queue = [contractRoot]
  const chainOf = (file: string) => reached.get(file)!.map(show).join(" -> ")
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    if (!isContractModule(file)) {
      problems.push(`${show(file)} is not part of the contract (src/Api.ts, src/<Feature>/Api.ts, src/Domain/), reached by ${chainOf(file)}`)
      continue
    }
    if (!fs.existsSync(file)) {
      problems.push(`${show(file)} does not exist, imported by ${chainOf(file)}`)
      continue
    }
    const module = readModule(file)
    for (const specifier of module.bare.filter((s) => !isContractPackage(s))) {
      problems.push(`${show(file)} imports "${specifier}", reached by ${chainOf(file)}`)
    }
    for (const target of module.relative) {
      if (reached.has(target)) continue
      reached.set(target, [...reached.get(file)!, target])
      queue.push(target)
    }
  }
  return { reached, problems }
}

// --- (b) no import cycles ------------------------------------------------------------------------

const sourceFiles = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(full)
    return entry.name.endsWith(".ts") ? [full] : []
  })

/**
 * Depth first with colours: an edge into a module still on the stack (grey) closes a cycle,
 * the stack from that module on. Cycles come in the order the walk closes them, each once
 * (whichever of its modules the walk entered it by).
 */
const findCycles = (graph: ReadonlyMap<string, ReadonlyArray<string>>): Array<Array<string>> => {
  const colour = new Map<string, "grey" | "black">()
  const stack: Array<string> = []
  const seen = new Set<string>()
  const cycles: Array<Array<string>> = []
  const visit = (node: string) => {
    colour.set(node, "grey")
    stack.push(node)
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue
      const state = colour.get(next)
      if (state === "grey") {
        const cycle = stack.slice(stack.indexOf(next))
        const start = cycle.indexOf([...cycle].sort()[0]!)
        const key = [...cycle.slice(start), ...cycle.slice(0, start)].join("\n")
        if (!seen.has(key)) {
          seen.add(key)
          cycles.push([...cycle, next])
        }
      } else if (state === undefined) {
        visit(next)
      }
    }
    stack.pop()
    colour.set(node, "black")
  }
  for (const node of graph.keys()) {
    if (!colour.has(node)) visit(node)
  }
  return cycles
}

const sourceGraph = (): Map<string, ReadonlyArray<string>> =>
  new Map(sourceFiles(src).sort().map((file) => [file, readModule(file).relative]))

// --- the tests -----------------------------------------------------------------------------------

describe("architecture", () => {
  it("the parser reads every form of import and re-export", () => {
    const source = [
      `import { a } from "./a.ts"`,
      `import type { B } from "./b.ts"`,
      `import {`,
      `  c, // the one we need`,
      `  type D`,
      `} from "../c.ts"`,
      `import * as e from "effect"`,
      `import f, { g } from 'f'`,
      `import "./side-effect.ts"`,
      `export { h } from "./h.ts"`,
      `export type { I } from "./i.ts"`,
      `export * as j from "./j.ts"`,
      `export const k = "not from here"`,
      `export interface L { readonly from: "no" }`,
      `// import { m } from "./commented.ts"`,
      ` * import { n } from "./in-a-doc-comment.ts"`
    ].join("\n")
    expect(importsOf(source)).toEqual([
      "./a.ts", "./b.ts", "../c.ts", "effect", "f", "./side-effect.ts", "./h.ts", "./i.ts", "./j.ts"
    ])
  })

  it("the cycle finder reports each cycle once, as a closed path", () => {
    const graph = new Map([
      ["a", ["b"]],
      ["b", ["c", "a"]],
      ["c", ["b"]],
      ["d", ["a"]]
    ])
    expect(findCycles(graph).map((cycle) => cycle.join(" -> "))).toEqual(["b -> c -> b", "a -> b -> a"])
  })

  it("the walk from src/Api.ts reaches the feature contracts and the Domain", () => {
    const { reached } = walkContract()
    expect([...reached.keys()].map(show)).toEqual(
      expect.arrayContaining(["src/Api.ts", "src/Catalog/Api.ts", "src/Domain/ApiErrors.ts"])
    )
  })

  it("the contract is a leaf: src/Api.ts reaches only contracts and Domain, over effect", () => {
    const { problems } = walkContract()
    expect(problems, `the contract must not pull in the server:\n${problems.join("\n")}`).toEqual([])
  })

  it("no module imports an Effect 3 package that Effect 4 folded into effect", () => {
    expect(isFoldedPackage("@effect/platform/HttpApi")).toBe(true)
    expect(isFoldedPackage("@effect/platform-node")).toBe(false)
    const found = ["src", "test", "scripts", "bench"].flatMap((dir) => sourceFiles(path.join(root, dir))).flatMap((file) =>
      readModule(file).bare.filter(isFoldedPackage).map((specifier) => `${show(file)}: ${specifier}`)
    )
    expect(found).toEqual([])
  })

  it("no import cycles in src", () => {
    const cycles = findCycles(sourceGraph()).map((cycle) => cycle.map(show).join(" -> "))
    expect(cycles, `import cycles:\n${cycles.join("\n")}`).toEqual([])
  })
})
