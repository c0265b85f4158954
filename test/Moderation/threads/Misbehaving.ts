/**
 * A scan thread's program for the tests of failed scans: the real rules, except that a file named
 * `hang.py` never answers, one named `crash.py` ends the thread, and a file whose text says
 * `hang until <epoch ms>` never answers before that time.
 */
import { parentPort } from "node:worker_threads"
import { scanFile } from "../../../src/Moderation/Rules.ts"
import type { ScanRequest } from "../../../src/Moderation/ScanThread.ts"

const hangs = (path: string, bytes: Uint8Array) => {
  if (path === "hang.py") return true
  const until = /hang until (\d+)/.exec(new TextDecoder().decode(bytes))
  return until !== null && Date.now() < Number(until[1])
}

parentPort?.on("message", ({ bytes, id, path }: ScanRequest) => {
  if (path === "crash.py") process.exit(3)
  if (hangs(path, bytes)) for (;;);
  parentPort!.postMessage({ id, scan: scanFile(path, bytes) })
})

parentPort?.postMessage({ ready: true })
