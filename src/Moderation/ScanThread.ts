/**
 * The scan thread's program (a `node:worker_threads` worker, FileScanner.ts starts it): it runs
 * the rules over one file at a time, so that a scan's CPU is spent off the event loop that answers
 * requests. It imports the rules only, which import nothing: the thread starts in milliseconds,
 * from dist/scan-thread.js when bundled and from this file (Node strips its types) otherwise.
 */
import { parentPort } from "node:worker_threads"
import { scanFile } from "./Rules.ts"

/** One file to scan, as FileScanner.ts posts it; its answer carries the same `id`. */
export interface ScanRequest {
  readonly id: number
  readonly path: string
  readonly bytes: Uint8Array
}

parentPort?.on("message", ({ id, path, bytes }: ScanRequest) => {
  parentPort!.postMessage({ id, scan: scanFile(path, bytes) })
})

// loaded: a file's time limit runs from here, not from the thread's start
parentPort?.postMessage({ ready: true })
