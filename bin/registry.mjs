#!/usr/bin/env node
// The registry CLI as an installed command: the bundled CLI in dist/ (npm run build).
import { existsSync } from "node:fs"
import * as module from "node:module"

const main = new URL("../dist/cli.js", import.meta.url)
if (!existsSync(main)) {
  console.error("error: the CLI is not built: run `npm run build` in the registry's folder")
  process.exit(1)
}
// Node keeps the compiled bundle in its cache folder: later starts skip parsing it.
module.enableCompileCache?.()
await import(main.href)
