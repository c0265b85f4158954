#!/usr/bin/env node
/**
 * Compiles src/ to dist/ (`npm run build`), or with `--if-stale` only when dist/ is missing or
 * older than what it is built from (`npm start`, the test and bench set-ups). Plain JavaScript:
 * it runs before anything is compiled, on every start, so it must cost milliseconds.
 *
 * The commands people run by hand are also bundled, one file each (`bundles` below).
 *
 * dist/.built is written after a successful build, dated when the build began: a source saved
 * during a build still counts as newer.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { isStale as isStaleStamp, writeStamp } from "./lib/Stamp.mjs"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const dist = path.join(root, "dist")
const stamp = path.join(dist, ".built")
/** What dist/ is compiled from; migrations/ is read from the repository at run time, not copied. */
const inputs = ["src", "package.json", "tsconfig.json", "tsconfig.build.json", "scripts/build.mjs", "scripts/token.ts"]

const isStale = () => isStaleStamp(stamp, inputs.map((input) => path.join(root, input)))

const require = createRequire(path.join(root, "package.json"))

/** The compiler, when the development dependencies are installed (not after `npm ci --omit=dev`). */
const compiler = () => {
  try {
    return require.resolve("typescript/bin/tsc")
  } catch {
    return undefined
  }
}

/**
 * The commands people run by hand, each bundled into one file of dist/ with everything it imports
 * but Node's own modules: the CLI (dist/cli.js, which bin/registry.mjs runs) and `npm run token`
 * (dist/token.js). One file starts in a fraction of the CPU that loading hundreds of modules (or
 * transforming them with tsx) takes: about 2 s per CLI command before, 3.0-3.5 s per token under
 * tsx, 0.3-0.5 s bundled. esbuild is loaded only when a build runs, so that `--if-stale` stays
 * cheap. CommonJS dependencies (yazl, yauzl, semver) call `require`, which an ES module lacks: the
 * banner gives it one.
 */
const bundles = [
  { entry: "src/Cli/main.ts", out: "cli.js" },
  { entry: "scripts/token.ts", out: "token.js" }
]

const bundleCommands = () => {
  try {
    const esbuild = require("esbuild")
    for (const { entry, out } of bundles) {
      esbuild.buildSync({
        entryPoints: [path.join(root, entry)],
        outfile: path.join(dist, out),
        bundle: true,
        platform: "node",
        format: "esm",
        target: "node22",
        sourcemap: true,
        sourcesContent: false,
        logLevel: "warning",
        banner: { js: `import { createRequire as __bundleRequire } from "node:module"; const require = __bundleRequire(import.meta.url);` }
      })
    }
    return 0
  } catch {
    // esbuild has printed its errors
    return 1
  }
}

const build = () => {
  const tsc = compiler()
  if (tsc === undefined) {
    if (fs.existsSync(path.join(dist, "main.js"))) {
      console.error("build: dist/ is older than src/ but TypeScript is not installed (npm ci --omit=dev?); running dist/ as it is")
      return 0
    }
    console.error("build: dist/ is missing and TypeScript is not installed: run `npm ci` then `npm run build`")
    return 1
  }
  const began = new Date()
  fs.rmSync(dist, { recursive: true, force: true })
  const run = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: root, stdio: "inherit" })
  if (run.status !== 0) return run.status ?? 1
  if (bundleCommands() !== 0) return 1
  writeStamp(stamp, began)
  return 0
}

const ifStale = process.argv.includes("--if-stale")
process.exitCode = !ifStale || isStale() ? build() : 0
