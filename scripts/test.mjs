/**
 * `npm test` and `npm run test:all`: the type check and vitest side by side, rather than one after
 * the other. The suite leaves a core idle for about a fifth of its run (a file waiting on
 * PostgreSQL, on a socket or on a timer), and the type check (TypeScript 7, about 17 s of CPU)
 * fits in those gaps at a lower priority; one after the other it added its 9 s of wall time.
 * Its report is printed once vitest is done, so that neither output cuts into the other, and
 * the run fails if either does.
 *
 *   node scripts/test.mjs [vitest arguments...]
 */
import { spawn } from "node:child_process"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)))

const typecheck = spawn(process.execPath, [path.join(root, "node_modules/typescript7/bin/tsc"), "--noEmit", "-p", root], {
  cwd: root,
  stdio: ["ignore", "pipe", "pipe"]
})
try {
  os.setPriority(typecheck.pid, 10)
} catch {
  // a priority the system refuses only slows the type check
}
let report = ""
typecheck.stdout.on("data", (chunk) => (report += chunk))
typecheck.stderr.on("data", (chunk) => (report += chunk))
const typechecked = new Promise((resolve) => typecheck.on("close", (code) => resolve(code ?? 1)))

const vitest = spawn(process.execPath, [path.join(root, "node_modules/vitest/vitest.mjs"), "run", ...process.argv.slice(2)], {
  cwd: root,
  stdio: "inherit"
})
const tested = new Promise((resolve) => vitest.on("close", (code) => resolve(code ?? 1)))

// Ctrl-C reaches both children through the terminal; a signal sent to this process alone is passed on
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    typecheck.kill(signal)
    vitest.kill(signal)
  })
}

const [tests, types] = await Promise.all([tested, typechecked])
process.stdout.write(types === 0 ? "type check: no errors\n" : `type check failed:\n${report}`)
process.exitCode = tests !== 0 ? tests : types
