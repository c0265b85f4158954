/**
 * The layers of ARCHITECTURE.md, checked on the source text: the contract (`src/Api.ts`, each
 * feature's `Api.ts`, `src/Domain`) is a leaf that a client can import without the server, `src`
 * has no import cycles, its folders sit on floors that import only downwards (so no folder imports
 * another that imports it back), and no module imports a package that Effect 4 folded into `effect`.
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

/** The specifiers a module imports or re-exports from, type-only ones included, in source order, each with its line. */
const importLines = (source: string): Array<{ readonly specifier: string; readonly line: number }> =>
  [...source.matchAll(fromImport), ...source.matchAll(sideEffectImport)]
    .sort((a, b) => a.index - b.index)
    .map((match) => ({ specifier: match[1]!, line: source.slice(0, match.index).split("\n").length }))

const importsOf = (source: string): Array<string> => importLines(source).map((found) => found.specifier)

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
 * `effect/http-api`; not `@effect/platform-node`). `semver` and `@renovatebot/pep440` are the
 * exceptions: the Domain's version and range schemas parse with them (node-semver's and PEP 440's
 * forms), and both are plain JavaScript without dependencies that runs anywhere.
 */
const isContractPackage = (specifier: string): boolean =>
  specifier === "effect" || specifier.startsWith("effect/") ||
  specifier === "semver" || specifier === "@renovatebot/pep440"

/** Effect 3 packages that Effect 4 folded into `effect`: importing one would install Effect 3 again. */
/** Effect's package scope: the folded names are built from it, so that no literal here reads as an import of them. */
const effectScope = "@effect/"
const foldedIntoEffect = ["platform", "sql", "schema", "cli", "printer", "printer-ansi", "rpc", "cluster", "experimental"]
  .map((name) => `${effectScope}${name}`)

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

// --- (c) folders on floors -----------------------------------------------------------------------

/**
 * A folder directly under `src` (`Catalog/`) or a file directly in it (`Api.ts`): what the floors
 * place. Paths here are relative to `src`, with `/`.
 */
const unitOf = (file: string): string => {
  const [first, ...rest] = file.split("/")
  return rest.length === 0 ? first! : `${first}/`
}

interface Floor {
  readonly name: string
  /** Each unit on the floor, with the units of its own floor it may import (it may import every lower floor). */
  readonly units: Readonly<Record<string, ReadonlyArray<string>>>
}

/**
 * The floors of `src`, lowest first: the allowed direction, written down. A unit imports units on
 * lower floors, and on its own floor only those listed beside it; never a higher floor. Since the
 * lists beside the units have no cycle either, no folder can import another that imports it back.
 * A new folder goes on a floor here (the test says when one is missing).
 */
const floors: ReadonlyArray<Floor> = [
  { name: "domain (the records and errors every floor speaks in)", units: { "Domain/": [] } },
  { name: "spans", units: { "Tracing.ts": [] } },
  { name: "the clients' aliases", units: { "Compat/": [] } },
  { name: "configuration", units: { "Config.ts": [] } },
  // above the configuration: the tracer and the log output are configured
  { name: "signals (logs, metrics, traces) and the vendors' failure reading", units: { "Observability/": [], "Vendors/": [] } },
  { name: "database", units: { "Db/": [] } },
  // the job runner, on the service's database; the features register their tasks with it
  { name: "durable jobs", units: { "Jobs/": [] } },
  { name: "stores and clients", units: { "Storage/": [], "Repohost/": [] } },
  // below the features: they answer in its vocabulary (Representation, Download, the caller's notes)
  // and never the other way round; the application hands the edge its routes (App.ts)
  { name: "HTTP edge", units: { "Http/": [] } },
  {
    name: "features",
    units: {
      "ApiKeys/": [],
      // authentication looks up API keys
      "Auth/": ["ApiKeys/"],
      "Catalog/": ["Auth/"],
      // a node's download statistics are as public as the node: the catalogue says whether it is
      "Downloads/": ["Catalog/"],
      "Tokens/": ["Auth/"],
      "Publishers/": ["Auth/", "Catalog/"],
      // the scanner of uploaded archives and the reviews of what it holds
      "Moderation/": ["Auth/", "Catalog/"],
      // trusted publishing looks up the node a workflow is trusted for
      "TrustedPublishing/": ["Auth/", "Catalog/"],
      "Publishing/": ["Auth/", "Catalog/", "Moderation/", "Publishers/", "Tokens/", "TrustedPublishing/"],
      "Claims/": ["Auth/", "Catalog/"],
      "HostNodes/": ["Auth/", "Catalog/"],
      "Reviews/": ["Catalog/"],
      "Versions/": ["Catalog/"],
      "Admin/": ["Auth/", "Catalog/", "Moderation/", "Publishers/", "Publishing/"],
      // the change feed and the snapshot render the catalogue's own pages
      "Sync/": ["Catalog/"],
      // its usage page reads the catalogue's paging parameters
      "Customers/": ["Catalog/"],
      // every proxied operation is metered (quotas, usage events); an image task's end is
      // announced to the client's webhook
      "Images/": ["Customers/", "Webhooks/"],
      "Webhooks/": ["Catalog/"],
      "Music/": ["Customers/"],
      "MediaStorage/": ["Customers/"],
      // the sweeps clear the music form's spool
      "System/": ["Music/"]
    }
  },
  { name: "the contract, composed", units: { "Api.ts": [] } },
  { name: "over the contract", units: { "ApiDocument.ts": [], "Client/": [] } },
  { name: "applications", units: { "App.ts": [], "client.ts": [] } },
  { name: "entry points", units: { "main.ts": [], "Cli/": [] } }
]

/** An import in `src`: the importing file, its line, and the file imported. */
interface Import {
  readonly from: string
  readonly line: number
  readonly to: string
}

const showImport = (i: Import) => `src/${i.from}:${i.line} imports src/${i.to}`

/**
 * Imports the floors do not judge yet, each with why: none today. An entry is a debt with its
 * reason; the test fails on an entry that excuses nothing any more.
 */
interface Exception {
  readonly why: string
  readonly excuses: (i: Import) => boolean
}

const knownExceptions: ReadonlyArray<Exception> = []

const srcPath = (file: string) => path.relative(src, file).split(path.sep).join("/")

/** Every relative import from a module of `src` to another, in file and line order. */
const srcImports = (): Array<Import> =>
  sourceFiles(src).sort().flatMap((file) =>
    importLines(fs.readFileSync(file, "utf8"))
      .filter((found) => isRelative(found.specifier))
      .map((found) => ({ from: srcPath(file), line: found.line, to: srcPath(resolve(file, found.specifier)) }))
      .filter((i) => !i.to.startsWith("../"))
  )

/** The imports between two units that no exception excuses. */
const judged = (imports: ReadonlyArray<Import>, exceptions: ReadonlyArray<Exception>) =>
  imports.filter((i) => unitOf(i.from) !== unitOf(i.to) && !exceptions.some((e) => e.excuses(i)))

/** Why the floors are not a well-formed list: units placed twice, and same-floor allowances that name another floor or close a cycle. */
const floorFaults = (list: ReadonlyArray<Floor>): Array<string> => {
  const faults: Array<string> = []
  const placed = new Map<string, string>()
  for (const floor of list) {
    for (const [unit, alongside] of Object.entries(floor.units)) {
      if (placed.has(unit)) faults.push(`${unit} is on two floors: ${placed.get(unit)} and ${floor.name}`)
      placed.set(unit, floor.name)
      for (const other of alongside) {
        if (!(other in floor.units)) faults.push(`${unit} may import ${other} "on its floor", which is not on ${floor.name}`)
      }
    }
  }
  const allowances = new Map(list.flatMap((floor) => Object.entries(floor.units)))
  for (const cycle of findCycles(allowances)) faults.push(`the floors allow a cycle: ${cycle.join(" -> ")}`)
  return faults
}

/** Each import that goes up a floor, or sideways where its floor does not list it: the import, and the rule. */
const wrongWayImports = (imports: ReadonlyArray<Import>, list: ReadonlyArray<Floor>, exceptions: ReadonlyArray<Exception>) => {
  const level = new Map(list.flatMap((floor, index) => Object.keys(floor.units).map((unit) => [unit, index] as const)))
  return judged(imports, exceptions).flatMap((i) => {
    const from = unitOf(i.from)
    const to = unitOf(i.to)
    const [a, b] = [level.get(from), level.get(to)]
    if (a === undefined || b === undefined || b < a || (a === b && list[a]!.units[from]!.includes(to))) return []
    const rule = a === b
      ? `${from} may import ${to} only if the floors list it beside ${from} (${list[a]!.name})`
      : `${from} (${list[a]!.name}) is below ${to} (${list[b]!.name})`
    return [`${showImport(i)}: ${rule}`]
  })
}

/** Cycles between units, each step shown by its first import. */
const unitCycles = (imports: ReadonlyArray<Import>, exceptions: ReadonlyArray<Exception>): Array<string> => {
  const first = new Map<string, Import>()
  for (const i of judged(imports, exceptions)) {
    const key = `${unitOf(i.from)}\n${unitOf(i.to)}`
    if (!first.has(key)) first.set(key, i)
  }
  const graph = new Map<string, Array<string>>()
  for (const key of first.keys()) {
    const [from, to] = key.split("\n") as [string, string]
    graph.set(from, [...graph.get(from) ?? [], to])
    if (!graph.has(to)) graph.set(to, [])
  }
  return findCycles(graph).map((cycle) =>
    `${cycle.join(" -> ")}: ${cycle.slice(1).map((to, n) => showImport(first.get(`${cycle[n]}\n${to}`)!)).join("; ")}`
  )
}

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
    expect(isFoldedPackage(`${effectScope}platform/HttpApi`)).toBe(true)
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

  it("the floor check names each import against the floors, and each folder cycle by its imports", () => {
    const list: ReadonlyArray<Floor> = [
      { name: "low", units: { "Db/": [] } },
      { name: "middle", units: { "Catalog/": [], "Publishing/": ["Catalog/"] } },
      { name: "high", units: { "Api.ts": [] } }
    ]
    const imports: ReadonlyArray<Import> = [
      { from: "Publishing/Service.ts", line: 3, to: "Catalog/Repo.ts" },
      { from: "Catalog/Repo.ts", line: 5, to: "Db/Rows.ts" },
      { from: "Catalog/Repo.ts", line: 6, to: "Catalog/Records.ts" },
      { from: "Catalog/Http.ts", line: 7, to: "Publishing/Archives.ts" },
      { from: "Db/Rows.ts", line: 9, to: "Api.ts" }
    ]
    expect(wrongWayImports(imports, list, [])).toEqual([
      "src/Catalog/Http.ts:7 imports src/Publishing/Archives.ts: Catalog/ may import Publishing/ only if the floors list it beside Catalog/ (middle)",
      "src/Db/Rows.ts:9 imports src/Api.ts: Db/ (low) is below Api.ts (high)"
    ])
    expect(unitCycles(imports, [])).toEqual([
      "Publishing/ -> Catalog/ -> Publishing/: src/Publishing/Service.ts:3 imports src/Catalog/Repo.ts; src/Catalog/Http.ts:7 imports src/Publishing/Archives.ts"
    ])
    const excused: Exception = { why: "a test's", excuses: (i) => i.from === "Catalog/Http.ts" }
    expect(wrongWayImports(imports, list, [excused])).toHaveLength(1)
    expect(unitCycles(imports, [excused])).toEqual([])
    expect(floorFaults(list)).toEqual([])
    expect(floorFaults([...list, { name: "top", units: { "Db/": ["Api.ts"], "A/": ["B/"], "B/": ["A/"] } }])).toEqual([
      "Db/ is on two floors: low and top",
      `Db/ may import Api.ts "on its floor", which is not on top`,
      "the floors allow a cycle: A/ -> B/ -> A/"
    ])
  })

  it("every folder of src and every file directly in it is on a floor, and the floors are well formed", () => {
    const units = [...new Set(sourceFiles(src).map((file) => unitOf(srcPath(file))))].sort()
    const placed = floors.flatMap((floor) => Object.keys(floor.units))
    expect(units.filter((unit) => !placed.includes(unit)), "on no floor: add each to `floors`").toEqual([])
    expect(placed.filter((unit) => !units.includes(unit)), "on a floor but not in src").toEqual([])
    expect(floorFaults(floors)).toEqual([])
  })

  it("folders import only down the floors, beside issue 24's known exceptions", () => {
    const wrong = wrongWayImports(srcImports(), floors, knownExceptions)
    expect(wrong, `imports against the floors:\n${wrong.join("\n")}`).toEqual([])
  })

  it("no folder imports another that imports it back, directly or through others", () => {
    const cycles = unitCycles(srcImports(), knownExceptions)
    expect(cycles, `folder cycles:\n${cycles.join("\n")}`).toEqual([])
  })

  it("each known exception still excuses an import (delete the ones that do not)", () => {
    const imports = srcImports().filter((i) => unitOf(i.from) !== unitOf(i.to))
    expect(knownExceptions.filter((e) => !imports.some(e.excuses)).map((e) => e.why)).toEqual([])
  })
})
