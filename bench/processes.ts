/** The bench's child processes (services, s3rver). */
import type { ChildProcess } from "node:child_process"

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
