#!/usr/bin/env node
/**
 * Builds the published client into dist/: the declarations of src/client.ts and what it imports
 * (tsc, tsconfig.json), and one ES module bundled from the same sources (esbuild) that imports
 * only `effect` and Node's built-ins. Bundling, rather than compiling file by file, inlines what
 * the contract's schemas use beyond Effect (node-semver and the PEP 440 library, which check versions and ranges), so the
 * package depends on nothing but its peer `effect`; the licence of each inlined package heads
 * the bundle.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { isStale, writeStamp } from "../../scripts/lib/Stamp.mjs"

const here = path.dirname(fileURLToPath(import.meta.url))
const dist = path.join(here, "dist")
const entry = path.join(here, "../../src/client.ts")
const require = createRequire(path.join(here, "package.json"))

/** Imports the bundle may keep: its peer dependency and Node's built-ins. */
const allowedImport = (specifier) => specifier === "effect" || specifier.startsWith("effect/") || specifier.startsWith("node:")

/** Written after a build (../../scripts/lib/Stamp.mjs). */
const stamp = path.join(dist, ".built")
/** What dist/ is built from: the service's sources (the client's graph is part of them) and this package. */
const inputs = [path.join(here, "../../src"), path.join(here, "../../tsconfig.json"), path.join(here, "tsconfig.json"), path.join(here, "build.mjs"), path.join(here, "package.json")]

// a pack of an unchanged tree (the package test, run again) reuses the last build: tsc's
// declarations take most of its 20 s of CPU
if (!isStale(stamp, inputs)) process.exit(0)

const began = new Date()
fs.rmSync(dist, { recursive: true, force: true })

// TypeScript 7 (the typescript7 alias): its package exports no path to its command, so from its folder
const tsc = spawnSync(process.execPath, [path.join(path.dirname(require.resolve("typescript7/package.json")), "bin/tsc"), "-p", path.join(here, "tsconfig.json")], {
  stdio: "inherit"
})
if (tsc.status !== 0) process.exit(tsc.status ?? 1)

// tsc rewrites `.ts` imports in the JavaScript it emits, not in declarations: a consumer's tsc
// would refuse them without allowImportingTsExtensions
const relativeTs = /((?:from|import)\s*\(?\s*["'])(\.{1,2}\/[^"']*)\.ts(["'])/g
for (const file of fs.readdirSync(dist, { recursive: true })) {
  if (!file.endsWith(".d.ts")) continue
  const at = path.join(dist, file)
  fs.writeFileSync(at, fs.readFileSync(at, "utf8").replace(relativeTs, "$1$2.js$3"))
}

const esbuild = await import(require.resolve("esbuild"))

/** The packages of node_modules a build inlined, by directory: each one's licence text. */
const licences = (inputs) => {
  const dirs = new Set()
  for (const input of inputs) {
    const match = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input)
    if (match !== null && !/node_modules\/effect$/.test(match[1])) dirs.add(match[1])
  }
  return [...dirs].sort().map((dir) => {
    const file = fs.readdirSync(dir).find((name) => /^licen[sc]e/i.test(name))
    if (file === undefined) throw new Error(`build: ${dir} is inlined but has no licence file`)
    const { name, version } = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"))
    return `${name}@${version}\n\n${fs.readFileSync(path.join(dir, file), "utf8").trim()}`
  })
}

const options = {
  entryPoints: [entry],
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node22",
  external: ["effect", "effect/*"],
  write: false,
  metafile: true,
  logLevel: "warning"
}
// a first pass finds what is inlined, so that the written bundle can carry the licences
const probe = await esbuild.build({ ...options, outfile: path.join(dist, "client.js") })
const inlined = licences(Object.keys(probe.metafile.inputs))
const banner = inlined.length === 0 ? "" :
  `/*!\n * @node-registry/client inlines these packages, under these licences:\n *\n${
    inlined.join("\n\n").split("\n").map((line) => ` * ${line}`.trimEnd()).join("\n")
  }\n */`
const result = await esbuild.build({ ...options, outfile: path.join(dist, "client.js"), write: true, banner: { js: banner } })

const imports = Object.values(result.metafile.outputs).flatMap((output) => output.imports.map((i) => i.path))
const stray = [...new Set(imports.filter((specifier) => !allowedImport(specifier)))]
if (stray.length > 0) {
  console.error(`build: the bundle imports ${stray.join(", ")}; it may import only effect and node: built-ins`)
  process.exit(1)
}

writeStamp(stamp, began)
