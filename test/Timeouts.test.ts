/**
 * Connection limits (HTTP_*_TIMEOUT_SECONDS, UPLOAD_IDLE_TIMEOUT_SECONDS) over raw sockets, with
 * short settings: silent, slow-header and slow-body clients are closed within their limits while
 * a normal client is served, and a slow streamed upload that keeps moving is not cut by the
 * request limit.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { expectErrorBody, send } from "./support/Http.ts"
import { freshStart, paths, skinBody, withFakeVendor } from "./support/ImageProxy.ts"
import { mediaUploadTarget, piecesOf, putHead } from "./support/MediaUpload.ts"
import { closedAfterPromise, slowRequestPromise } from "./support/RawHttp.ts"
import { type Running, Service } from "./support/Service.ts"

const limits = {
  headersTimeoutMillis: 3_000,
  requestTimeoutMillis: 4_000,
  keepAliveTimeoutMillis: 500,
  idleTimeoutMillis: 1_000,
  uploadIdleTimeoutMillis: 1_000
}
/** What a limit may overshoot by: Node checks headers on a beat, and the machine is busy. */
const slack = 2_000

/**
 * The tests of one service wait on its clocks, each on its own connection, not on each other: they
 * run side by side (6 s in all rather than 18).
 */
const sideBySide = { timeout: 20_000, concurrent: true }

const TestService = Service.layer((c) => ({
  ...c,
  http: limits,
  storage: { ...c.storage, signingSecret: Option.some(Redacted.make("timeouts-signing-secret-of-this-test")) }
}))

const closedAfter = (service: Running, talk: Parameters<typeof closedAfterPromise>[1]) =>
  Effect.promise(() => closedAfterPromise(service.baseUrl, talk))

/** A client that sends `head`, then a piece of `pieces` every 300 ms, and reads the answer. */
const slowly = (service: Running, head: string, pieces: ReadonlyArray<string>) =>
  Effect.promise(() => slowRequestPromise(service.baseUrl, head, pieces, 300))

const timed = <A>(effect: Effect.Effect<A>) =>
  Effect.gen(function*() {
    const started = Date.now()
    const answer = yield* effect
    return { answer, millis: Date.now() - started }
  })

/** A normal client, asking again and again while `busy` runs: every answer must be a 200. */
const servedMeanwhile = <A>(service: Running, busy: Effect.Effect<A>) =>
  Effect.gen(function*() {
    let done = false
    const statuses: Array<number> = []
    const normal = Effect.promise(async () => {
      while (!done) {
        statuses.push((await service.fetch("/health")).status)
        await new Promise((r) => setTimeout(r, 100))
      }
    })
    const [result] = yield* Effect.all([Effect.ensuring(busy, Effect.sync(() => void (done = true))), normal], {
      concurrency: "unbounded"
    })
    expect(statuses.length).toBeGreaterThan(3)
    expect(statuses.every((s) => s === 200)).toBe(true)
    return result
  })

layer(TestService, { excludeTestServices: true })("connection limits", (it) => {
  it.effect("connections that never send a byte are closed within the idle limit, others served", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const closes = yield* servedMeanwhile(service, Effect.all(Array.from({ length: 50 }, () => closedAfter(service, () => {})), {
        concurrency: "unbounded"
      }))
      // before the headers limit could have closed them: the idle limit did
      for (const millis of closes) expect(millis).toBeLessThan(limits.headersTimeoutMillis - 500)
    }), sideBySide)

  it.effect("slow headers (a byte every 300 ms) are answered 408 and closed within the headers limit", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const request = `GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ${"a".repeat(200)}\r\n\r\n`
      const { answer, millis } = yield* servedMeanwhile(service, timed(slowly(service, "", [...request])))
      expect(answer.status).toBe(408)
      expectErrorBody(JSON.parse(answer.body), "request_timeout")
      // a byte every 300 ms never lets the idle limit fire: the headers limit closed it
      expect(millis).toBeGreaterThanOrEqual(limits.headersTimeoutMillis - 100)
      expect(millis).toBeLessThan(limits.headersTimeoutMillis + slack)
    }), sideBySide)

  it.effect("a slow body on an ordinary route is answered 408 and closed within the request limit", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const head = "POST /bulk/nodes/versions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
        "Content-Length: 400\r\n\r\n"
      const body = `{"node_versions":[${" ".repeat(370)}]}`
      const { answer, millis } = yield* servedMeanwhile(service, timed(slowly(service, head, [...body])))
      expect(answer.status).toBe(408)
      expectErrorBody(JSON.parse(answer.body), "request_timeout")
      expect(millis).toBeGreaterThanOrEqual(limits.requestTimeoutMillis - 100)
      expect(millis).toBeLessThan(limits.requestTimeoutMillis + slack)
    }), sideBySide)

  it.effect("a kept-alive connection is closed after the keep-alive limit", () =>
    Effect.gen(function*() {
      const service = yield* Service
      let answeredAt = 0
      const started = Date.now()
      const millis = yield* closedAfter(service, (socket) => {
        socket.on("data", () => void (answeredAt ||= Date.now()))
        socket.write("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
      })
      expect(answeredAt).toBeGreaterThan(0)
      // Node waits a second past the advertised `Keep-Alive: timeout=`, so that the client closes first
      const idleAfterAnswer = started + millis - answeredAt
      expect(idleAfterAnswer).toBeGreaterThanOrEqual(limits.keepAliveTimeoutMillis)
      expect(idleAfterAnswer).toBeLessThan(limits.keepAliveTimeoutMillis + 1_000 + slack)
    }), sideBySide)

  it.effect("a slow streamed upload that keeps moving outlives the request limit (PUT /media/…)", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const target = yield* mediaUploadTarget(service, "slow-uploader", "slow.bin")
      // 20 pieces, 300 ms apart: 6 s in all, past the request limit, never a second silent
      const bytes = randomBytes(20 * 512)
      const started = Date.now()
      const answer = yield* Effect.promise(() => slowRequestPromise(service.baseUrl, putHead(target, bytes.length), piecesOf(bytes, 20), 300))
      expect(answer.status).toBe(204)
      expect(Date.now() - started).toBeGreaterThan(limits.requestTimeoutMillis)
      const stored = yield* Effect.promise(async () => Buffer.from(await (await service.fetch(target.pathname)).arrayBuffer()))
      expect(stored.equals(bytes)).toBe(true)
    }), sideBySide)

  it.effect("a streamed upload that stops moving is cut after the upload idle limit", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const target = yield* mediaUploadTarget(service, "stalled-uploader", "stalled.bin")
      const millis = yield* closedAfter(service, (socket) => {
        socket.write(`PUT ${target.pathname}${target.search} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n`)
        socket.write("x".repeat(100))
      })
      expect(millis).toBeLessThan(limits.uploadIdleTimeoutMillis + slack)
    }), sideBySide)
})

layer(withFakeVendor((c) => ({ ...c, http: limits, vendorTimeoutMillis: 10_000 })), { excludeTestServices: true })(
  "connection limits while the service works",
  (it) => {
    it.effect("a request that has arrived whole waits for a slow vendor past the idle limit", () =>
      Effect.gen(function*() {
        const { fake, service, token } = yield* freshStart()
        // the connection is silent while the vendor thinks: twice the idle limit
        fake.setDelay(2 * limits.idleTimeoutMillis)
        const answer = yield* send(service, "POST", paths.skin, { token, body: skinBody })
        expect(answer.status).toBe(200)
      }), 20_000)
  }
)
