/**
 * A scenario's file run on its own (`npx tsx bench/<file>.ts [--quick]`): it builds the compiled
 * service it measures, as bench/run.ts does, then prints its table.
 */
import { execFileSync } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"

/** The repository's root. */
export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

/** Runs `bench` when `moduleUrl` is the script node was started with; a failure exits with 1. */
export const runAlone = (moduleUrl: string, bench: (options: { readonly quick: boolean }) => Promise<string>) => {
  if (!process.argv[1] || path.resolve(process.argv[1]) !== fileURLToPath(moduleUrl)) return
  const { values } = parseArgs({ options: { quick: { type: "boolean", default: false } } })
  execFileSync(process.execPath, ["scripts/build.mjs", "--if-stale"], { cwd: root, stdio: "inherit" })
  bench({ quick: values.quick }).then(
    (table) => console.log(`\n${table}\n`),
    (e: unknown) => {
      console.error(e)
      process.exitCode = 1
    }
  )
}
