#!/usr/bin/env node
// The registry CLI as an installed command: the compiled CLI in dist/ (npm run build).
import { existsSync } from "node:fs"

const main = new URL("../dist/Cli/main.js", import.meta.url)
if (!existsSync(main)) {
  console.error("error: the CLI is not built: run `npm run build` in the registry's folder")
  process.exit(1)
}
await import(main.href)
