/**
 * A 413 the client reads (issue 12, finding 8). A body over a limit, sent without waiting for an
 * answer (no `Expect: 100-continue`), declared (Content-Length) or chunked, on a JSON route
 * (publish, over its 16 MiB) and on each upload route over its limit (archive, media file, the
 * music video form): the client reads a 413 ErrorResponse, whether it reads while it writes (Node's
 * fetch, curl) or only once it has sent everything (a raw socket, Python requests); the
 * connection then closes, after a bounded drain; the service goes on serving.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Fiber, Option, Redacted } from "effect"
import * as fc from "fast-check"
import { execFile } from "node:child_process"
import * as fs from "node:fs/promises"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { PassThrough } from "node:stream"
import { BodyOverLimit, readWithin } from "../src/Http/RefusedBodies.ts"
import { decodeError, expectErrorBody, expectStatus, parseJson, send } from "./support/Http.ts"
import { generatePath } from "./support/Music.ts"
import { forAll } from "./support/Property.ts"
import { type Running, Service } from "./support/Service.ts"
import { makePublisher, pathOf, published } from "./Publishing/Flow.ts"

const MiB = 1024 * 1024
/** Over the JSON routes' fixed 16 MiB, declared and chunked. */
const jsonSizes = { declared: 17 * MiB, chunked: 20 * MiB }
/**
 * Over the 1 MiB the upload routes are given here (and the video form's 64 KiB), and past what
 * loopback's socket buffers hold (a few MiB each way), so that the client is still writing when
 * the answer leaves. A quarter of the bytes the JSON route needs, for the same behaviour.
 */
const uploadSizes = { declared: 5 * MiB, chunked: 8 * MiB }

/** An endpoint the body goes to, over its limit with either shape. */
interface Target {
  readonly name: string
  readonly method: "POST" | "PUT"
  /** Path and query on the instance. */
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  /** The body's size in either shape, over the route's limit. */
  readonly bytes: Readonly<Record<Shape, number>>
}

type Shape = "declared" | "chunked"

interface Outcome {
  readonly status?: number | undefined
  readonly body?: string | undefined
  /** What went wrong on the client's side, if anything. */
  readonly error?: string | undefined
  /** The server closed the connection (raw client only). */
  readonly closed?: boolean | undefined
}

const filler = Buffer.alloc(MiB, "a")
const bodyOf = (bytes: number) => Buffer.alloc(bytes, "a")

/** Parses a complete HTTP/1.1 answer with a Content-Length out of `raw`, or undefined while incomplete. */
const completeAnswer = (raw: Buffer): { status: number; headers: string; body: string } | undefined => {
  const headEnd = raw.indexOf("\r\n\r\n")
  if (headEnd < 0) return undefined
  const head = raw.subarray(0, headEnd).toString("latin1")
  const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? NaN)
  if (!(raw.length >= headEnd + 4 + length)) return undefined
  return {
    status: Number(head.slice(9, 12)),
    headers: head.toLowerCase(),
    body: raw.subarray(headEnd + 4, headEnd + 4 + length).toString("utf8")
  }
}

/**
 * A client that writes the whole request at once and reads only after (as Python's http.client
 * does), then waits for the server to close the connection.
 */
const sendAllThenRead = (baseUrl: string, target: Target, shape: Shape, timeoutMillis = 20_000) =>
  new Promise<Outcome>((resolve) => {
    const { hostname, port } = new URL(baseUrl)
    const socket = net.connect({ host: hostname, port: Number(port) })
    const chunks: Array<Buffer> = []
    let error: string | undefined
    const finish = (closed: boolean) => {
      clearTimeout(timer)
      socket.destroy()
      const answer = completeAnswer(Buffer.concat(chunks))
      resolve({ status: answer?.status, body: answer?.body, error, closed })
    }
    const timer = setTimeout(() => finish(false), timeoutMillis)
    socket.on("data", (chunk) => chunks.push(chunk))
    socket.on("error", (e) => void (error ??= e.message))
    socket.on("close", () => finish(true))
    socket.on("connect", () => {
      const headers = Object.entries(target.headers).map(([k, v]) => `${k}: ${v}\r\n`).join("")
      const bytes = target.bytes[shape]
      const framing = shape === "declared" ? `content-length: ${bytes}\r\n` : "transfer-encoding: chunked\r\n"
      socket.write(`${target.method} ${target.path} HTTP/1.1\r\nhost: 127.0.0.1\r\n${headers}${framing}\r\n`)
      if (shape === "declared") return void socket.write(bodyOf(bytes))
      const size = `${MiB.toString(16)}\r\n`
      for (let sent = 0; sent < bytes; sent += MiB) socket.write(Buffer.concat([Buffer.from(size), filler, Buffer.from("\r\n")]))
      socket.end("0\r\n\r\n")
    })
  })

/** Node's fetch (undici): it reads the answer while it still sends, and stops sending once answered. */
const fetchWhileSending = (baseUrl: string, target: Target, shape: Shape) =>
  (async (): Promise<Outcome> => {
    let sent = 0
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= target.bytes.chunked) return controller.close()
        sent += MiB
        controller.enqueue(filler)
      }
    })
    try {
      const response = await fetch(baseUrl + target.path, {
        method: target.method,
        headers: target.headers,
        body: shape === "declared" ? bodyOf(target.bytes.declared) : stream,
        duplex: "half"
      } as RequestInit)
      return { status: response.status, body: await response.text() }
    } catch (e) {
      return { error: String((e as { cause?: unknown }).cause ?? e) }
    }
  })()

let filesDir: string | undefined

/** A body of `bytes` as a file, for the clients run as programs. */
const bodyFile = (bytes: number) =>
  Effect.promise(async () => {
    filesDir ??= await fs.mkdtemp(path.join(os.tmpdir(), "refused-bodies-"))
    const file = path.join(filesDir, String(bytes))
    if (!(await fs.stat(file).catch(() => undefined))) await fs.writeFile(file, bodyOf(bytes))
    return file
  })

const run = (program: string, args: ReadonlyArray<string>) =>
  new Promise<{ stdout: string; stderr: string; failed: boolean }>((resolve) =>
    execFile(program, args, { maxBuffer: 1024 * 1024, timeout: 30_000 }, (error, stdout, stderr) =>
      resolve({ stdout, stderr, failed: error !== null })))

/** `curl --data-binary @file`, as a shell script would upload: chunked when told so. */
const curl = (baseUrl: string, target: Target, shape: Shape, file: string) =>
  run("/usr/bin/curl", [
    "-sS",
    "-o",
    "-",
    "-w",
    "%{http_code}",
    "-X",
    target.method,
    ...Object.entries(target.headers).flatMap(([k, v]) => ["-H", `${k}: ${v}`]),
    ...(shape === "chunked" ? ["-H", "transfer-encoding: chunked"] : []),
    "--data-binary",
    `@${file}`,
    baseUrl + target.path
  ]).then(({ failed, stderr, stdout }): Outcome => ({
    status: Number(stdout.slice(-3)),
    body: stdout.slice(0, -3),
    ...(failed ? { error: stderr } : {})
  }))

/** Python requests: a file object is sent with its length, a generator chunked; it reads after sending. */
const pythonRequests = `
import json, sys, requests
method, url, headers, file, shape = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4], sys.argv[5]
def pieces():
    with open(file, "rb") as f:
        while True:
            piece = f.read(1024 * 1024)
            if not piece:
                return
            yield piece
with open(file, "rb") as f:
    r = requests.request(method, url, headers=headers, data=f if shape == "declared" else pieces(), timeout=30)
print(json.dumps({"status": r.status_code, "body": r.text}))
`

const python = (baseUrl: string, target: Target, shape: Shape, file: string) =>
  run("python3", ["-c", pythonRequests, target.method, baseUrl + target.path, JSON.stringify(target.headers), file, shape])
    .then(({ failed, stderr, stdout }): Outcome =>
      failed ? { error: stderr.split("\n").filter((l) => l !== "").slice(-1)[0] ?? "failed" } : JSON.parse(stdout) as Outcome)

/** The outcome is a 413 ErrorResponse, read by the client. */
const expectRefusal = (outcome: Outcome, what: string) => {
  expect(outcome.status, `${what}: ${JSON.stringify(outcome)}`).toBe(413)
  expectErrorBody(decodeError(parseJson(outcome.body ?? "", what)), "payload_too_large")
}

const tries = (n: number, attempt: (i: number) => Promise<Outcome>, what: string) =>
  Effect.promise(async () => {
    for (let i = 0; i < n; i++) expectRefusal(await attempt(i), `${what}, try ${i + 1}`)
  })

/** The service still answers a plain request. */
const stillServing = (service: Running) =>
  Effect.map(send(service, "GET", "/health"), (answer) => expectStatus(answer, 200, "GET /health after the refusals"))

const signingSecret = "refused-bodies-signing-secret-of-this-test"

const TestService = Service.layer((c) => ({
  ...c,
  vendorMode: "simulated",
  storage: { ...c.storage, maxArchiveBytes: MiB, signingSecret: Option.some(Redacted.make(signingSecret)) },
  media: { ...c.media, maxFileBytes: MiB }
}))

layer(TestService, { excludeTestServices: true })("a body over its limit, sent without waiting", (it) => {
  const targets: Array<Target> = []

  it.effect("setup: the four routes, each with a body it refuses for its size", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const acme = yield* makePublisher(service, "acme")
      const { signedUrl } = yield* published(service, acme, "big", "1.0.0")
      const jwt = yield* Effect.promise(() => service.token({ sub: "uploader" }))
      const file = yield* send<{ upload_url: string }>(service, "POST", "/customers/storage", {
        token: jwt,
        body: { file_name: "big.png", content_type: "image/png" }
      })
      targets.push(
        // comfy-cli's publish (registry/api.py, publish_node_version: a JSON body): limit 16 MiB
        {
          name: "publish (JSON)",
          method: "POST",
          path: "/publishers/acme/nodes/big/versions",
          headers: { "content-type": "application/json" },
          bytes: jsonSizes
        },
        // the archive PUT to the signed URL (comfy-cli, file_utils.py, upload_file_to_signed_url): limit 1 MiB here
        { name: "archive upload", method: "PUT", path: pathOf(signedUrl), headers: { "content-type": "application/zip" }, bytes: uploadSizes },
        // the media file PUT of the host's API nodes (comfy_api_nodes/util/upload_helpers.py, upload_file): limit 1 MiB here
        {
          name: "media upload",
          method: "PUT",
          path: pathOf(expectStatus(file, 200, "create a media file").body.upload_url),
          headers: { "content-type": "image/png" },
          bytes: uploadSizes
        },
        // the music node's form, URL-encoded (comfy_api_nodes/nodes_sonilo.py sends its video URL so): limit 64 KiB
        {
          name: "video form",
          method: "POST",
          path: generatePath,
          headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Bearer ${jwt}` },
          bytes: uploadSizes
        }
      )
    }))

  for (const [index, sizes] of [jsonSizes, uploadSizes, uploadSizes, uploadSizes].entries()) {
    for (const shape of ["declared", "chunked"] as const) {
      const label = shape === "declared" ? `Content-Length ${sizes.declared / MiB} MiB` : `chunked ${sizes.chunked / MiB} MiB`
      it.effect(`route ${index + 1}, ${label}: 10 raw clients that read only after sending, 10 Node fetch`, () =>
        Effect.gen(function*() {
          const service = yield* Service
          const target = targets[index]!
          yield* tries(10, () => sendAllThenRead(service.baseUrl, target, shape).then((outcome) => {
            // everything was drained: the server closed the connection, and never reset it
            expect(outcome.closed, JSON.stringify(outcome)).toBe(true)
            expect(outcome.error).toBeUndefined()
            return outcome
          }), `${target.name}, ${label}, raw`)
          yield* tries(10, () => fetchWhileSending(service.baseUrl, target, shape), `${target.name}, ${label}, fetch`)
          yield* stillServing(service)
        }), 60_000)

      it.effect(`route ${index + 1}, ${label}: curl and Python requests`, () =>
        Effect.gen(function*() {
          const service = yield* Service
          const target = targets[index]!
          const file = yield* bodyFile(target.bytes[shape])
          yield* tries(1, () => curl(service.baseUrl, target, shape, file), `${target.name}, ${label}, curl`)
          yield* tries(1, () => python(service.baseUrl, target, shape, file), `${target.name}, ${label}, Python requests`)
          yield* stillServing(service)
        }), 60_000)
    }
  }

  it.effect("cleanup: the body files", () =>
    Effect.promise(async () => {
      if (filesDir !== undefined) await fs.rm(filesDir, { recursive: true, force: true })
    }))
})

/**
 * A client that writes `head` and `body` at once, reads, never closes its side, and then, if
 * `trickle`, goes on sending a byte every 100 ms: how long until the server closes on it (its
 * writes then fail), and whether it had the whole answer before anything failed.
 */
const untilClosed = (baseUrl: string, head: string, body: Buffer, trickle: boolean) =>
  new Promise<{ answer: ReturnType<typeof completeAnswer>; millis: number; answeredFirst: boolean }>((resolve, reject) => {
    const { hostname, port } = new URL(baseUrl)
    const started = Date.now()
    const socket = net.connect({ host: hostname, port: Number(port), allowHalfOpen: true })
    const chunks: Array<Buffer> = []
    let answeredFirst: boolean | undefined
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error("the server kept the connection open"))
    }, 15_000)
    const trickling = setInterval(() => trickle && socket.writable && socket.write("a"), 100)
    socket.on("data", (chunk) => chunks.push(chunk))
    socket.on("error", () => void (answeredFirst ??= completeAnswer(Buffer.concat(chunks)) !== undefined))
    socket.on("close", () => {
      clearTimeout(timer)
      clearInterval(trickling)
      const answer = completeAnswer(Buffer.concat(chunks))
      resolve({ answer, millis: Date.now() - started, answeredFirst: answeredFirst ?? answer !== undefined })
    })
    socket.on("connect", () => socket.write(Buffer.concat([Buffer.from(head), body])))
  })

const drainBytes = MiB
const drainMillis = 800

layer(Service.layer((c) => ({ ...c, refusedBodies: { drainBytes, drainMillis } })), { excludeTestServices: true })(
  "the drain is bounded",
  (it) => {
    const head = `POST /publishers/acme/nodes/big/versions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${jsonSizes.declared}\r\n\r\n`

    it.effect("past the bound of bytes the connection closes, after the answer", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const outcome = yield* Effect.promise(() => untilClosed(service.baseUrl, head, bodyOf(jsonSizes.declared), false))
        expect(outcome.answeredFirst).toBe(true)
        expect(outcome.answer?.status).toBe(413)
        expect(outcome.answer?.headers).toContain("connection: close")
        expect(outcome.millis).toBeLessThan(drainMillis)
        yield* stillServing(service)
      }))

    it.effect("a client that goes on sending slowly is cut off after the bound of time, after the answer", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const outcome = yield* Effect.promise(() => untilClosed(service.baseUrl, head, bodyOf(64 * 1024), true))
        expect(outcome.answeredFirst).toBe(true)
        expect(outcome.answer?.status).toBe(413)
        expect(outcome.millis).toBeGreaterThanOrEqual(drainMillis - 50)
        expect(outcome.millis).toBeLessThan(drainMillis + 2_000)
        yield* stillServing(service)
      }))
  }
)

describe("readWithin", () => {
  it.effect(
    "reads a body whole up to the limit; past it fails at once and leaves the rest in the stream",
    () =>
      forAll(
        { pieces: fc.array(fc.integer({ min: 1, max: 5_000 }), { maxLength: 20 }), limit: fc.integer({ min: 0, max: 40_000 }) },
        ({ limit, pieces }) =>
          Effect.gen(function*() {
            const stream = new PassThrough()
            const chunks = pieces.map((size, i) => Buffer.alloc(size, i % 256))
            const total = pieces.reduce((a, b) => a + b, 0)
            const read = Effect.runFork(Effect.result(readWithin(stream, limit)))
            for (const chunk of chunks) stream.write(chunk)
            stream.end()
            const outcome = yield* Fiber.join(read)
            if (total <= limit) {
              expect(outcome._tag).toBe("Success")
              expect(Buffer.compare(outcome._tag === "Success" ? outcome.success : Buffer.alloc(0), Buffer.concat(chunks))).toBe(0)
              return
            }
            expect(outcome._tag === "Failure" && outcome.failure instanceof BodyOverLimit).toBe(true)
            // the stream is intact and what came after the crossing chunk is still there to drain
            expect(stream.destroyed).toBe(false)
            let crossing = 0
            let at = 0
            while (at <= limit) at += pieces[crossing++]!
            const rest = yield* Effect.promise(async () => {
              const left: Array<Buffer> = []
              for await (const chunk of stream) left.push(chunk as Buffer)
              return Buffer.concat(left)
            })
            expect(rest.length).toBe(total - at)
          })
      )
  )
})
