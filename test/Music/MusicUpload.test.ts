/**
 * The upload limit: a 1025 MiB file, generated on the fly by a node:http client and never held
 * in memory on either side, is refused with 413 as soon as 1024 MiB are crossed, the connection
 * is closed, the spooled part is removed, and the service's memory stays flat while it streams.
 * A declared length far over the limit is refused before a byte is read.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import { FakeMusicVendor } from "../support/FakeMusicVendor.ts"
import { decodeError, expectErrorBody, parseJson } from "../support/Http.ts"
import { generatePath, leftoverTempFiles, serviceWithFakeVendor } from "../support/Music.ts"
import { Service } from "../support/Service.ts"
import { mp4 } from "../support/Video.ts"

const MiB = 1024 * 1024

interface Outcome {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
  /** File bytes written before the answer came. */
  readonly sent: number
  readonly peakRssGrowth: number
}

/**
 * Streams a multipart form whose `0.video` part holds `fileBytes` bytes (the same 1 MiB buffer
 * written again and again, with backpressure) until the service answers.
 */
const uploadOnTheFly = (baseUrl: string, token: string, fileBytes: number, declaredLength?: number) =>
  new Promise<Outcome>((resolve, reject) => {
    const boundary = "x-upload-boundary-7f3a"
    const head = Buffer.from(
      `--${boundary}\r\ncontent-disposition: form-data; name="0.video"; filename="big.mp4"\r\ncontent-type: video/mp4\r\n\r\n`
    )
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`)
    const first = mp4(60, 0)
    const block = Buffer.alloc(MiB, 7)
    const rssBefore = process.memoryUsage().rss
    let peak = rssBefore
    const sampler = setInterval(() => void (peak = Math.max(peak, process.memoryUsage().rss)), 25)
    let sent = 0
    let answered = false
    const request = http.request(`${baseUrl}${generatePath}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": `multipart/form-data; boundary=${boundary}`,
        ...(declaredLength === undefined ? {} : { "content-length": String(declaredLength) })
      }
    })
    request.on("response", (response) => {
      answered = true
      let body = ""
      response.setEncoding("utf8")
      response.on("data", (chunk) => (body += chunk))
      response.on("end", () => {
        clearInterval(sampler)
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body, sent, peakRssGrowth: peak - rssBefore })
      })
    })
    // once the service has answered and closed, our writes fail: that is expected
    request.on("error", (e) => {
      if (!answered) {
        clearInterval(sampler)
        reject(e)
      }
    })
    const pump = () => {
      while (!answered && !request.destroyed) {
        if (sent >= fileBytes) return void request.end(tail)
        const piece = sent === 0 ? first : block.subarray(0, Math.min(MiB, fileBytes - sent))
        sent += piece.length
        if (!request.write(sent === piece.length ? Buffer.concat([head, piece]) : piece)) return void request.once("drain", pump)
      }
    }
    pump()
  })

let token = ""

layer(serviceWithFakeVendor(), { excludeTestServices: true })("upload limit", (it) => {
  it.effect("mints a caller", () =>
    Effect.gen(function*() {
      const service = yield* Service
      token = yield* Effect.promise(() => service.token({ sub: "uma" }))
    }))

  it.effect("a 1025 MiB upload is 413 once 1024 MiB are crossed, with flat memory and nothing left on disk", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.reset()
      const outcome = yield* Effect.promise(() => uploadOnTheFly(service.baseUrl, token, 1025 * MiB))
      expect(outcome.status, outcome.body).toBe(413)
      expectErrorBody(decodeError(parseJson(outcome.body, "413")), "payload_too_large")
      expect(outcome.headers.connection).toBe("close")
      // the limit was reached by streaming (the last MiB may sit in socket buffers when the answer comes)
      expect(outcome.sent).toBeGreaterThan(1024 * MiB)
      expect(outcome.peakRssGrowth).toBeLessThan(150 * MiB)
      // the vendor's request, started with the file part, was broken off: never a whole form
      for (let i = 0; i < 100 && fake.broken() < fake.arrived(); i++) yield* Effect.sleep("50 millis")
      expect(fake.broken()).toBe(fake.arrived())
      expect(fake.received()).toEqual([])
      expect(yield* leftoverTempFiles(service)).toEqual([])
    }), 120_000)

  it.effect("a declared length far over the limit is refused before the body is read", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const outcome = yield* Effect.promise(() => uploadOnTheFly(service.baseUrl, token, 64 * MiB, 2 * 1024 * MiB))
      expect(outcome.status).toBe(413)
      expectErrorBody(decodeError(parseJson(outcome.body, "413")), "payload_too_large")
      expect(outcome.sent).toBeLessThan(64 * MiB)
    }), 60_000)
})
