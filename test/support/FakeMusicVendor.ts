/**
 * A loopback stand-in for the music vendor's `POST /v2m/generate` and `POST /t2m/generate`. It
 * records what it was sent (path, headers, form fields, multipart or URL-encoded, the uploaded
 * file's size and hash, whether the request was aborted) and
 * answers as the test tells it: an NDJSON stream (paced, cut off, reset), an error status, a hang,
 * a reset before answering. `discard` reads the body without keeping it (large uploads).
 */
import { Context, Effect, Layer } from "effect"
import { createHash } from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { closeServer } from "./Loopback.ts"

export type Behaviour =
  /**
   * 200 NDJSON: `lines` written as given (each followed by `\n`), `delayMillis` apart; then the
   * end: `finish` ends the body properly, `cut` ends it early without the rest, `reset` destroys
   * the socket, `hold` keeps it open until the client goes away.
   */
  | {
    readonly kind: "stream"
    readonly lines: ReadonlyArray<string>
    readonly delayMillis?: number
    readonly end?: "finish" | "reset" | "hold"
  }
  /** An error status with a JSON body and headers. */
  | { readonly kind: "status"; readonly status: number; readonly body?: unknown; readonly headers?: Record<string, string> }
  /** Answers an error status as soon as the request arrives, without reading its body. */
  | { readonly kind: "refuse"; readonly status: number; readonly body?: unknown }
  /** Reads the request and never answers. */
  | { readonly kind: "hang" }
  /** Destroys the connection without answering. */
  | { readonly kind: "reset" }

export interface Received {
  /** `/v2m/generate` or `/t2m/generate`. */
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  /** Text fields of the form. */
  readonly fields: Record<string, string>
  /** The file part, if any. */
  readonly file?: { readonly field: string; readonly filename: string; readonly size: number; readonly sha256: string }
  /** Body bytes received in all. */
  readonly bodyBytes: number
}

export interface Fake {
  readonly url: string
  readonly apiKey: string
  /** How the next requests are answered (until changed). */
  readonly behave: (behaviour: Behaviour) => void
  /** What the vendor received, request by request (a request is recorded once its body is read). */
  readonly received: () => ReadonlyArray<Received>
  /** How many requests were closed by the client before the answer was complete. */
  readonly aborted: () => number
  /** Number of requests that arrived (recorded at once, before the body). */
  readonly arrived: () => number
  /** Requests whose body ended without completing (the client broke it off), in order. */
  readonly broken: () => number
  /** For each request that sent body bytes, when its first body byte arrived (`Date.now()`). */
  readonly firstBytes: () => ReadonlyArray<number>
  readonly reset: () => void
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

/** The paths the vendor answers. */
const generatePaths: ReadonlySet<string> = new Set(["/v2m/generate", "/t2m/generate"])

/** Parses a small multipart or URL-encoded body (tests only send small files to the vendor). */
const parseForm = async (contentType: string, body: Buffer) => {
  const form = await new Request("http://fake/", { method: "POST", headers: { "content-type": contentType }, body }).formData()
  const fields: Record<string, string> = {}
  let file: Received["file"]
  for (const [name, value] of form.entries()) {
    if (typeof value === "string") fields[name] = value
    else {
      const bytes = new Uint8Array(await value.arrayBuffer())
      file = { field: name, filename: value.name, size: bytes.length, sha256: sha256(bytes) }
    }
  }
  return { fields, file }
}

const start = () =>
  new Promise<{ server: http.Server; fake: Fake }>((resolve) => {
    const apiKey = "test-music-vendor-key-0123456789"
    let behaviour: Behaviour = { kind: "stream", lines: ['{"type":"complete"}'] }
    let received: Array<Received> = []
    let aborted = 0
    let arrived = 0
    let broken = 0
    let firstBytes: Array<number> = []

    const answer = async (req: http.IncomingMessage, res: http.ServerResponse, current: Behaviour) => {
      switch (current.kind) {
        case "hang":
        case "refuse":
          return
        case "reset":
          return void req.socket.destroy()
        case "status": {
          const text = JSON.stringify(current.body ?? {})
          res.writeHead(current.status, { "content-type": "application/json", ...current.headers })
          return void res.end(text)
        }
        case "stream": {
          res.writeHead(200, { "content-type": "application/x-ndjson" })
          for (const line of current.lines) {
            if (res.destroyed) return
            res.write(`${line}\n`)
            if (current.delayMillis) await new Promise((r) => setTimeout(r, current.delayMillis))
          }
          if (current.end === "reset") return void res.socket?.destroy()
          if (current.end === "hold") return
          return void res.end()
        }
      }
    }

    const server = http.createServer((req, res) => {
      arrived++
      const current = behaviour
      res.on("close", () => {
        if (!res.writableFinished) aborted++
      })
      if (req.method !== "POST" || !generatePaths.has(req.url ?? "") || req.headers.authorization !== `Bearer ${apiKey}`) {
        req.resume()
        res.writeHead(req.headers.authorization === `Bearer ${apiKey}` ? 404 : 401, { "content-type": "application/json" })
        return void res.end(JSON.stringify({ message: "not here" }))
      }
      req.on("close", () => {
        if (!req.complete) broken++
      })
      if (current.kind === "refuse") {
        res.writeHead(current.status, { "content-type": "application/json", connection: "close" })
        res.end(JSON.stringify(current.body ?? {}))
        return void req.resume()
      }
      const chunks: Array<Buffer> = []
      let bodyBytes = 0
      // bodies beyond 8 MiB are counted, not kept (benchmark-sized uploads): the test's process
      // hosts the service too, whose memory tests measure
      const keepBytes = 8 * 1024 * 1024
      req.on("data", (chunk: Buffer) => {
        if (bodyBytes === 0) firstBytes.push(Date.now())
        bodyBytes += chunk.length
        if (bodyBytes <= keepBytes) chunks.push(chunk)
        else chunks.length = 0
      })
      req.on("end", async () => {
        const kept = bodyBytes <= keepBytes
        const form = kept ? await parseForm(req.headers["content-type"] ?? "", Buffer.concat(chunks)).catch(() => undefined) : undefined
        received.push({ path: req.url ?? "", headers: req.headers, fields: form?.fields ?? {}, ...(form?.file ? { file: form.file } : {}), bodyBytes })
        void answer(req, res, current)
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({
        server,
        fake: {
          url: `http://127.0.0.1:${port}`,
          apiKey,
          behave: (b) => void (behaviour = b),
          received: () => [...received],
          aborted: () => aborted,
          arrived: () => arrived,
          broken: () => broken,
          firstBytes: () => [...firstBytes],
          reset: () => {
            broken = 0
            firstBytes = []
            received = []
            aborted = 0
            arrived = 0
          }
        }
      })
    })
  })

export class FakeMusicVendor extends Context.Service<FakeMusicVendor, Fake>()("test/FakeMusicVendor") {
  static readonly layer = Layer.effect(
    FakeMusicVendor,
    Effect.acquireRelease(Effect.promise(start), ({ server }) =>
      Effect.promise(() => closeServer(server))).pipe(Effect.map(({ fake }) => fake))
  )
}
