/**
 * A loopback stand-in for the image vendor (plain node:http, so the benchmark uses it too). It
 * answers tasks in any of the shapes the vendor may use, and misbehaves on demand: an error
 * status, a rate limit, a hang, a connection reset. Every request is recorded with its headers
 * and body, so tests see what the vendor received.
 */
import { Context, Effect, Layer } from "effect"
import { randomUUID } from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { closeServer } from "./Loopback.ts"

export type Behaviour =
  /** A task: `wrapped` in `data` (the default), `flat`, or flat with `task_status`. */
  | {
    readonly kind: "task"
    readonly shape?: "wrapped" | "flat" | "task_status"
    /** Default: CREATED for a POST; for a GET the task's scripted status, else IN_PROGRESS. */
    readonly status?: string
    /** `null` leaves `generated` out; default `[]`. */
    readonly generated?: ReadonlyArray<string> | null
    /** Default: a fresh UUID for a POST, the path's id for a GET. */
    readonly taskId?: string
  }
  /** Any status with a JSON body (or raw text) and headers. */
  | { readonly kind: "status"; readonly status: number; readonly body?: unknown; readonly text?: string; readonly headers?: Record<string, string> }
  /** Reads the request and never answers. */
  | { readonly kind: "hang" }
  /** Destroys the connection without an answer. */
  | { readonly kind: "reset" }

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  /** The JSON body without `webhook_url`, which the fake keeps as `callbackUrl`. */
  readonly body: unknown
  /** The `webhook_url` a start was given: where the vendor calls back. */
  readonly callbackUrl?: string
}

export interface FakeVendor {
  readonly url: string
  /** How every request is answered from now on. */
  readonly behave: (behaviour: Behaviour) => void
  /** The statuses that polls of `taskId` answer, in order; the last one repeats. */
  readonly script: (taskId: string, statuses: ReadonlyArray<string>) => void
  /** Delays every answer by this much. */
  readonly setDelay: (millis: number) => void
  readonly requests: () => ReadonlyArray<RecordedRequest>
  readonly clearRequests: () => void
  /** The vendor ids of the tasks started with a callback URL, in order. */
  readonly callbackUrlOfAll: () => Iterable<string>
  /** The callback URL the start of `taskId` was given. */
  readonly callbackUrlOf: (taskId: string) => string | undefined
  /**
   * Calls back as the vendor does when a task moves: POSTs `body` (default: the task wrapped in
   * `data`, COMPLETED with `generated`) to the URL its start was given, or to `url`. Answers the status.
   */
  readonly callBack: (taskId: string, options?: { readonly body?: unknown; readonly url?: string; readonly generated?: ReadonlyArray<string> }) => Promise<number>
  /** Back to answering tasks, no delay, no scripts, nothing recorded. */
  readonly reset: () => void
  readonly close: () => Promise<void>
}

const defaultBehaviour: Behaviour = { kind: "task" }

const taskBody = (b: Extract<Behaviour, { kind: "task" }>, taskId: string, status: string) => {
  const generated = b.generated === null ? {} : { generated: b.generated ?? [] }
  switch (b.shape ?? "wrapped") {
    case "flat":
      return { task_id: taskId, status, ...generated }
    case "task_status":
      return { task_id: taskId, task_status: status, ...generated }
    case "wrapped":
      return { data: { task_id: taskId, status, ...generated } }
  }
}

/** Starts the fake on a free loopback port; `record: false` keeps nothing (for load tests). */
export const startFakeImageVendor = (options: { readonly record?: boolean } = {}) =>
  new Promise<FakeVendor>((resolve) => {
    const record = options.record ?? true
    let behaviour: Behaviour = defaultBehaviour
    let delay = 0
    const scripts = new Map<string, Array<string>>()
    const recorded: Array<RecordedRequest> = []
    const callbacks = new Map<string, string>()

    const answer = (req: http.IncomingMessage, res: http.ServerResponse, path: string, callbackUrl?: string) => {
      const b = behaviour
      switch (b.kind) {
        case "hang":
          return
        case "reset":
          return req.socket.destroy()
        case "status": {
          const text = b.text ?? JSON.stringify(b.body ?? {})
          res.writeHead(b.status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...b.headers })
          return res.end(text)
        }
        case "task": {
          const polled = req.method === "GET" ? /\/([^/]+)$/.exec(path)?.[1] : undefined
          const taskId = b.taskId ?? (polled === undefined ? randomUUID() : decodeURIComponent(polled))
          let status = b.status
          if (status === undefined && polled !== undefined) {
            const script = scripts.get(taskId)
            status = script && script.length > 0 ? (script.length > 1 ? script.shift()! : script[0]!) : "IN_PROGRESS"
          }
          if (req.method === "POST" && callbackUrl !== undefined) callbacks.set(taskId, callbackUrl)
          const text = JSON.stringify(taskBody(b, taskId, status ?? "CREATED"))
          res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
          return res.end(text)
        }
      }
    }

    const server = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        const path = (req.url ?? "/").split("?")[0]!
        const text = Buffer.concat(chunks).toString("utf8")
        let body: unknown = undefined
        try {
          body = text === "" ? undefined : JSON.parse(text)
        } catch {
          body = text
        }
        let callbackUrl: string | undefined
        if (typeof body === "object" && body !== null && "webhook_url" in body) {
          const { webhook_url, ...rest } = body as Record<string, unknown>
          callbackUrl = typeof webhook_url === "string" ? webhook_url : undefined
          body = rest
        }
        if (record) recorded.push({ method: req.method ?? "", path, headers: req.headers, body, ...(callbackUrl ? { callbackUrl } : {}) })
        if (delay > 0) setTimeout(() => answer(req, res, path, callbackUrl), delay)
        else answer(req, res, path, callbackUrl)
      })
    })
    server.keepAliveTimeout = 60_000
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({
        url: `http://127.0.0.1:${port}`,
        behave: (b) => void (behaviour = b),
        script: (taskId, statuses) => void scripts.set(taskId, [...statuses]),
        setDelay: (millis) => void (delay = millis),
        requests: () => [...recorded],
        callbackUrlOf: (taskId) => callbacks.get(taskId),
        callbackUrlOfAll: () => callbacks.keys(),
        callBack: async (taskId, options = {}) => {
          const url = options.url ?? callbacks.get(taskId)
          if (url === undefined) throw new Error(`the fake vendor was given no callback URL for ${taskId}`)
          const body = options.body ?? { data: { task_id: taskId, status: "COMPLETED", generated: options.generated ?? [`https://cdn.imagevendor.example/${taskId}.png`] } }
          const answer = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
          await answer.arrayBuffer()
          return answer.status
        },
        clearRequests: () => void (recorded.length = 0),
        reset: () => {
          behaviour = defaultBehaviour
          delay = 0
          scripts.clear()
          recorded.length = 0
          callbacks.clear()
        },
        close: () => closeServer(server)
      })
    })
  })

export class FakeImageVendor extends Context.Service<FakeImageVendor, FakeVendor>()("test/FakeImageVendor") {
  static readonly layer = Layer.effect(
    FakeImageVendor,
    Effect.acquireRelease(Effect.promise(() => startFakeImageVendor()), (fake) => Effect.promise(fake.close))
  )
}
