/**
 * An upload forwarded while it arrives (live mode). An ISO media file (MP4, MOV) goes to the vendor
 * as it comes, its duration read from its movie box on the way, first or last; the vendor's form is
 * completed only once the client's form was read whole and is valid. A video stated too long, an
 * MP4 without a duration, an invalid form or an upload broken off break the vendor's request off
 * (it never sees a whole form) and are answered as before; a vendor refusing while the upload still
 * arrives is answered at once. Any other file is spooled and checked whole before the vendor sees
 * any of it.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import * as http from "node:http"
import { type Fake, FakeMusicVendor } from "../support/FakeMusicVendor.ts"
import { decodeError, expectErrorBody, parseJson } from "../support/Http.ts"
import { generatePath, leftoverTempFiles, serviceWithFakeVendor } from "../support/Music.ts"
import { Service } from "../support/Service.ts"
import { mp4, mp4MovieLast } from "../support/Video.ts"

const MiB = 1024 * 1024
const boundary = "x-tee-boundary-51c2"

interface Answer {
  readonly status: number
  readonly body: string
  /** When the client had sent the first half (`Date.now()`), and when it went on. */
  readonly pausedAt: number
  readonly resumedAt: number
}

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

/**
 * Sends a multipart form with `video` as `0.video` and a prompt: the first half, then a pause of
 * `pauseMillis` (or until `until` holds), then the rest; with `breakOff` the connection is
 * destroyed in the pause instead.
 */
const pacedUpload = (
  baseUrl: string,
  token: string,
  video: Buffer,
  options: { readonly pauseMillis: number; readonly until?: () => boolean; readonly breakOff?: boolean }
) =>
  new Promise<Answer>((resolve, reject) => {
    const head = Buffer.from(
      `--${boundary}\r\ncontent-disposition: form-data; name="0.video"; filename="paced.mp4"\r\ncontent-type: video/mp4\r\n\r\n`
    )
    const tail = Buffer.from(
      `\r\n--${boundary}\r\ncontent-disposition: form-data; name="prompt"\r\n\r\ncalm piano\r\n--${boundary}--\r\n`
    )
    const half = Math.floor(video.length / 2)
    let answered = false
    let pausedAt = 0
    let resumedAt = 0
    const request = http.request(`${baseUrl}${generatePath}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": `multipart/form-data; boundary=${boundary}` }
    })
    request.on("response", (response) => {
      answered = true
      let body = ""
      response.setEncoding("utf8")
      response.on("data", (chunk) => (body += chunk))
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body, pausedAt, resumedAt }))
    })
    request.on("error", (e) => {
      if (options.breakOff) resolve({ status: 0, body: "", pausedAt, resumedAt })
      else if (!answered) reject(e)
    })
    request.write(Buffer.concat([head, video.subarray(0, half)]), async () => {
      pausedAt = Date.now()
      const deadline = Date.now() + options.pauseMillis
      while (Date.now() < deadline && !answered && !(options.until?.() ?? false)) await sleep(20)
      if (answered) return
      if (options.breakOff) return void request.destroy()
      resumedAt = Date.now()
      request.end(Buffer.concat([video.subarray(half), tail]))
    })
  })

const errorCode = (answer: Answer, status: number, code: string) => {
  expect(answer.status, answer.body).toBe(status)
  expectErrorBody(decodeError(parseJson(answer.body, String(status))), code)
}

/** The vendor's request was broken off: none arrived whole, every one that arrived ended early. */
const brokenOff = (fake: Fake) =>
  Effect.gen(function*() {
    for (let i = 0; i < 100 && fake.broken() < fake.arrived(); i++) yield* Effect.sleep("50 millis")
    expect(fake.arrived()).toBe(1)
    expect(fake.broken()).toBe(1)
    expect(fake.received()).toEqual([])
  })

/** An MP4 of `seconds` with `mediaBytes` of media, its movie box after the media (as the host application writes it). */
const movieLast = (seconds: number, mediaBytes: number) => {
  const { head, tail } = mp4MovieLast(seconds, mediaBytes)
  return Buffer.concat([head, Buffer.alloc(mediaBytes, 0x33), tail])
}

/** A WAV file of `dataBytes` of silence (8 kHz, mono, 16-bit: 16,000 bytes a second): no ISO media file, yet with a duration. */
const wav = (dataBytes: number) => {
  const header = Buffer.alloc(44)
  header.write("RIFF", 0, "latin1")
  header.writeUInt32LE(36 + dataBytes, 4)
  header.write("WAVEfmt ", 8, "latin1")
  header.writeUInt32LE(16, 16)
  header.writeUInt16LE(1, 20)
  header.writeUInt16LE(1, 22)
  header.writeUInt32LE(8000, 24)
  header.writeUInt32LE(16000, 28)
  header.writeUInt16LE(2, 32)
  header.writeUInt16LE(16, 34)
  header.write("data", 36, "latin1")
  header.writeUInt32LE(dataBytes, 40)
  return Buffer.concat([header, Buffer.alloc(dataBytes)])
}

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex")

let token = ""

layer(serviceWithFakeVendor(), { excludeTestServices: true })("the upload forwarded as it arrives", (it) => {
  it.effect("mints a caller", () =>
    Effect.gen(function*() {
      const service = yield* Service
      token = yield* Effect.promise(() => service.token({ sub: "tee" }))
    }))

  it.effect("an MP4 reaches the vendor while the client still holds the rest, its movie box first or last", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.behave({ kind: "stream", lines: ['{"type":"complete"}'] })
      for (const video of [mp4(120, 4 * MiB), movieLast(120, 4 * MiB)]) {
        fake.reset()
        // the client waits (up to 10 s) for the vendor to have bytes before it sends its second half
        const answer = yield* Effect.promise(() =>
          pacedUpload(service.baseUrl, token, video, { pauseMillis: 10_000, until: () => fake.firstBytes().length > 0 })
        )
        expect(answer.status, answer.body).toBe(200)
        const [first] = fake.firstBytes()
        expect(first).toBeDefined()
        // the client went on because the vendor had bytes (the same millisecond at the closest), not after its 10 s
        expect(first!).toBeLessThanOrEqual(answer.resumedAt)
        expect(answer.resumedAt - answer.pausedAt).toBeLessThan(10_000)
        const [got] = fake.received()
        // sent while it arrives, so of no known length: chunked
        expect(got?.headers["transfer-encoding"]).toBe("chunked")
        expect(got?.file).toEqual({ field: "0.video", filename: "paced.mp4", size: video.length, sha256: sha256(video) })
        expect(got?.fields).toEqual({ prompt: "calm piano" })
      }
      expect(yield* leftoverTempFiles(service)).toEqual([])
    }), 30_000)

  it.effect("a movie box first that states too long a video is refused before the rest is sent; the vendor gets nothing", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.behave({ kind: "stream", lines: ['{"type":"complete"}'] })
      fake.reset()
      // the client would pause 10 s after its first half: the answer comes first
      const answer = yield* Effect.promise(() => pacedUpload(service.baseUrl, token, mp4(420, 4 * MiB), { pauseMillis: 10_000 }))
      errorCode(answer, 400, "video_too_long")
      expect(answer.resumedAt).toBe(0)
      expect(fake.arrived()).toBe(0)
      expect(yield* leftoverTempFiles(service)).toEqual([])
    }), 30_000)

  it.effect("a movie box last that states too long a video, or an MP4 without one, breaks the vendor's request off", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.behave({ kind: "stream", lines: ['{"type":"complete"}'] })
      fake.reset()
      const long = yield* Effect.promise(() => pacedUpload(service.baseUrl, token, movieLast(420, MiB), { pauseMillis: 200 }))
      errorCode(long, 400, "video_too_long")
      expect(long.body).toContain("420")
      yield* brokenOff(fake)
      fake.reset()
      // the file type box and media, and no movie box: an MP4 cut off before its end
      const noMovie = mp4MovieLast(60, MiB).head
      const cut = Buffer.concat([noMovie, Buffer.alloc(MiB, 0x33)])
      errorCode(yield* Effect.promise(() => pacedUpload(service.baseUrl, token, cut, { pauseMillis: 200 })), 400, "invalid_video")
      yield* brokenOff(fake)
      expect(yield* leftoverTempFiles(service)).toEqual([])
    }), 30_000)

  it.effect("a file that is no ISO media file is checked whole before the vendor gets any of it", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.behave({ kind: "stream", lines: ['{"type":"complete"}'] })
      fake.reset()
      // 4 MiB of 16,000 bytes a second: 262 s, within the limit
      const audio = wav(4 * MiB)
      const answer = yield* Effect.promise(() => pacedUpload(service.baseUrl, token, audio, { pauseMillis: 300 }))
      expect(answer.status, answer.body).toBe(200)
      expect(fake.firstBytes()[0]!).toBeGreaterThanOrEqual(answer.resumedAt)
      const [got] = fake.received()
      expect(got?.headers["transfer-encoding"]).toBeUndefined()
      expect(Number(got?.headers["content-length"])).toBe(got?.bodyBytes)
      expect(got?.file?.sha256).toBe(sha256(audio))
      fake.reset()
      // nor an ISO file nor anything with a duration: refused, and the vendor got nothing
      const notVideo = Buffer.alloc(MiB, 0x41)
      errorCode(yield* Effect.promise(() => pacedUpload(service.baseUrl, token, notVideo, { pauseMillis: 200 })), 400, "invalid_video")
      expect(fake.arrived()).toBe(0)
      expect(yield* leftoverTempFiles(service)).toEqual([])
    }), 30_000)

  it.effect("an upload broken off mid-way breaks the vendor's request off", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.behave({ kind: "stream", lines: ['{"type":"complete"}'] })
      fake.reset()
      yield* Effect.promise(() =>
        pacedUpload(service.baseUrl, token, movieLast(60, 4 * MiB), { pauseMillis: 10_000, until: () => fake.firstBytes().length > 0, breakOff: true })
      )
      yield* brokenOff(fake)
      for (let i = 0; i < 100 && (yield* leftoverTempFiles(service)).length > 0; i++) yield* Effect.sleep("50 millis")
      expect(yield* leftoverTempFiles(service)).toEqual([])
    }), 30_000)

  it.effect("the vendor refusing while the upload arrives is answered at once, as its refusals are", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      // Music.test.ts: a vendor's 401 or 503 is the caller's 502 upstream_error
      for (const status of [401, 503]) {
        fake.reset()
        fake.behave({ kind: "refuse", status, body: { message: "no" } })
        // the client would pause 10 s: the answer comes before it goes on
        const answer = yield* Effect.promise(() => pacedUpload(service.baseUrl, token, mp4(60, 4 * MiB), { pauseMillis: 10_000 }))
        errorCode(answer, 502, "upstream_error")
        expect(answer.resumedAt).toBe(0)
      }
      fake.behave({ kind: "stream", lines: ['{"type":"complete"}'] })
    }), 60_000)
})
