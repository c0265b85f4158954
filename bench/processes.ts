/** The bench's child processes (services, s3rver). */
import type { ChildProcess } from "node:child_process"
import { serviceNodeOptions } from "../test/support/Process.ts"

/**
 * The node options of a benchmarked service: `npm start`'s, and with BENCH_PROFILE_DIR set a V8
 * CPU profile of it, written there when it exits (bench/README.md says why it needs an idle machine).
 */
export const benchedServiceOptions: ReadonlyArray<string> = [
  ...serviceNodeOptions,
  ...(process.env.BENCH_PROFILE_DIR ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [])
]

/** Stops `child`: SIGTERM, then SIGKILL if it has not exited 15 s later; resolves once it has. */
export const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000)
    child.once("exit", () => {
      clearTimeout(timer)
      resolve()
    })
    child.kill("SIGTERM")
  })

/** Resolves once the service at `base` answers `/ready` 200; fails if `child` exits first or two minutes pass. */
export const waitReady = async (base: string, child: ChildProcess) => {
  const deadline = Date.now() + 120_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode} while starting`)
    if (await fetch(`${base}/ready`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false)) return
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  throw new Error("the service did not become ready within 120 s")
}
