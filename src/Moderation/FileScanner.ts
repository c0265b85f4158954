/**
 * Where the rules run over a file's bytes. In the service, a scan thread (ScanThread.ts): the
 * rules' CPU (up to about 0.4 s for a pathological 1 MiB file) is then not spent on the event loop
 * that answers requests, and a rescan of every archive leaves the read routes their latency. In
 * scripts and fast tests, the same function inline.
 *
 * The thread takes one file at a time; the others wait here, in order. A file that takes longer
 * than `timeoutMs` (counted once the thread has loaded: its start is not the file's), or a thread that dies (out of its memory limit, say), fails that file's scan
 * with ScanFailed: the thread is ended and the next file starts a new one. A failed scan is a
 * failure, not a finding: the caller records it and the job runner retries it (Rescan.ts).
 */
import { Context, Data, Effect, Layer } from "effect"
import { Worker } from "node:worker_threads"
import { type FileScan, scanFile } from "./Rules.ts"
import type { ScanRequest } from "./ScanThread.ts"

/** A file's scan did not finish: the thread took too long, or stopped. */
export class ScanFailed extends Data.TaggedError("ScanFailed")<{ readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

export interface FileScannerShape {
  /** The rules over one file's bytes; rejects with ScanFailed when no answer came. */
  readonly scanFile: (path: string, bytes: Uint8Array) => Promise<FileScan>
}

/** The thread's program: this folder's ScanThread.ts from the sources, scan-thread.js beside the bundle (scripts/build.mjs). */
const threadProgram = import.meta.url.endsWith(".ts")
  ? new URL("./ScanThread.ts", import.meta.url)
  : new URL("./scan-thread.js", import.meta.url)

export interface ThreadOptions {
  /** The longest one file may take. */
  readonly timeoutMs: number
  /** The thread's heap limit. */
  readonly maxHeapMb: number
  /** The thread's program (a test gives its own). */
  readonly program: URL
}

export const defaultThreadOptions: ThreadOptions = { timeoutMs: 20_000, maxHeapMb: 256, program: threadProgram }

interface Waiting {
  readonly path: string
  readonly bytes: Uint8Array
  readonly resolve: (scan: FileScan) => void
  readonly reject: (failure: ScanFailed) => void
}

/** The longest a new thread may take to load its program. */
const startMs = 30_000

/** One scan thread, started when a file first needs it, and again after it ended. */
const threadScanner = (options: ThreadOptions) => {
  const queue: Array<Waiting> = []
  let thread: Worker | undefined
  // whether the thread has loaded its program (it says so once)
  let ready = false
  let current: { readonly id: number; readonly waiting: Waiting; timer: NodeJS.Timeout; counting: boolean } | undefined
  let ids = 0
  let closed = false

  const settle = (outcome: { readonly scan: FileScan } | { readonly failure: string }) => {
    if (current === undefined) return
    const { timer, waiting } = current
    current = undefined
    clearTimeout(timer)
    if ("scan" in outcome) waiting.resolve(outcome.scan)
    else waiting.reject(new ScanFailed({ reason: outcome.failure }))
    next()
  }

  /** Ends the thread: the file it was on fails with `failure`. */
  const end = (failure: string) => {
    const ended = thread
    thread = undefined
    void ended?.terminate()
    settle({ failure })
  }

  const start = () => {
    const started = new Worker(options.program, { resourceLimits: { maxOldGenerationSizeMb: options.maxHeapMb } })
    ready = false
    // a waiting scan holds the process open through its caller, not through the thread
    started.unref()
    started.on("message", (answer: { readonly ready: true } | { readonly id: number; readonly scan: FileScan }) => {
      if (thread !== started) return
      if ("ready" in answer) {
        ready = true
        if (current !== undefined && !current.counting) {
          clearTimeout(current.timer)
          current.timer = limit(current.waiting)
          current.counting = true
        }
      } else if (current?.id === answer.id) settle({ scan: answer.scan })
    })
    started.on("error", (e: Error) => {
      if (thread === started) end(`the scan thread failed: ${e.message}`)
    })
    started.on("exit", (code) => {
      if (thread === started) end(`the scan thread stopped (exit code ${code})`)
    })
    return started
  }

  /** The timer that ends the thread when `waiting` takes too long. */
  const limit = (waiting: Waiting) =>
    setTimeout(() => end(`the scan of ${waiting.path} took longer than ${options.timeoutMs / 1000} s`), options.timeoutMs)

  const next = () => {
    if (current !== undefined || closed) return
    const waiting = queue.shift()
    if (waiting === undefined) return
    thread ??= start()
    const id = ++ids
    current = ready
      ? { id, waiting, timer: limit(waiting), counting: true }
      : { id, waiting, timer: setTimeout(() => end(`the scan thread did not start within ${startMs / 1000} s`), startMs), counting: false }
    // a copy of its own, moved to the thread: the caller's buffer may be a slice of a shared pool
    const bytes = new Uint8Array(waiting.bytes)
    const request: ScanRequest = { id, path: waiting.path, bytes }
    thread.postMessage(request, [bytes.buffer])
  }

  return {
    scanFile: (path: string, bytes: Uint8Array) =>
      new Promise<FileScan>((resolve, reject) => {
        if (closed) return reject(new ScanFailed({ reason: "the service is stopping" }))
        queue.push({ path, bytes, resolve, reject })
        next()
      }),
    close: async () => {
      closed = true
      for (const waiting of queue.splice(0)) waiting.reject(new ScanFailed({ reason: "the service is stopping" }))
      const ended = thread
      thread = undefined
      if (current !== undefined) settle({ failure: "the service is stopping" })
      await ended?.terminate()
    }
  }
}

export class FileScanner extends Context.Service<FileScanner, FileScannerShape>()("FileScanner") {
  /** The rules on a thread of their own, ended with the layer. */
  static readonly thread = (options: Partial<ThreadOptions> = {}) =>
    Layer.effect(
      FileScanner,
      Effect.acquireRelease(
        Effect.sync(() => threadScanner({ ...defaultThreadOptions, ...options })),
        (scanner) => Effect.promise(scanner.close)
      )
    )

  /** The rules on the caller's thread: for scripts and tests of the rules themselves. */
  static readonly inline = Layer.succeed(FileScanner, { scanFile: async (path, bytes) => scanFile(path, bytes) })
}
