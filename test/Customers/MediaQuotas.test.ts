/**
 * The quotas of video-to-music, text-to-music and media uploads over real HTTP: a generation refused before its
 * upload is read and before the vendor is asked, one that streams holding a task in flight until
 * its stream ends; uploads counted in bytes against the day's quota, refused with the RateLimit
 * fields; each leaving its usage event.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { onInstance } from "../support/Client.ts"
import { FakeMusicVendor } from "../support/FakeMusicVendor.ts"
import { expectStatus, get, send } from "../support/Http.ts"
import { expectNdjson, postForm, serviceWithFakeVendor } from "../support/Music.ts"
import { type Running, Service } from "../support/Service.ts"

const signedIn = (service: Running, sub: string) =>
  Effect.gen(function*() {
    const token = yield* Effect.promise(() => service.token({ sub }))
    expect((yield* send(service, "POST", "/customers", { token })).status).toBe(201)
    return token
  })

const setQuotas = (service: Running, customer: string, overrides: unknown) =>
  Effect.gen(function*() {
    const admin = yield* Effect.promise(() => service.token({ sub: "site-admin", admin: true }))
    expectStatus(yield* send(service, "PUT", `/admin/customers/${customer}/quotas`, { token: admin, body: overrides }), 200, "quotas")
  })

const usageOf = (service: Running, token: string, operation: string) =>
  Effect.map(get(service, `/customers/usage?operation=${operation}`, { token }), (answer) =>
    (expectStatus(answer, 200, "usage").body as { events: Array<{ outcome: string; units: number; unit: string; bytes_in: number; bytes_out: number }> }).events)

const balanceOf = (service: Running, token: string) =>
  Effect.map(get(service, "/customers/balance", { token }), (answer) =>
    expectStatus(answer, 200, "balance").body as {
      operations_per_day: Array<{ operation: string; used: number; remaining: number | null }>
      tasks_in_flight: { used: number }
    })

/** A PUT of `bytes` to a signed upload URL, with its Content-Length (as fetch sends a buffer). */
const put = (service: Running, url: string, bytes: Uint8Array) =>
  Effect.promise(async () => {
    const response = await fetch(onInstance(service, url), { method: "PUT", body: bytes, headers: { "content-type": "application/octet-stream" } })
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

const newFile = (service: Running, token: string, name: string) =>
  Effect.map(
    send<{ upload_url: string }>(service, "POST", "/customers/storage", { token, body: { file_name: name, content_type: "application/octet-stream" } }),
    (answer) => expectStatus(answer, 200, "storage").body.upload_url
  )

layer(serviceWithFakeVendor(), { excludeTestServices: true })("quotas of music and uploads", (it) => {
  it.effect("video-to-music: refused before the vendor over the day's quota; a stream holds a task until it ends", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.reset()
      fake.behave({ kind: "stream", lines: ['{"type":"duration","duration_sec":30}', '{"type":"complete"}'] })
      const token = yield* signedIn(service, "mia")
      yield* setQuotas(service, "mia", { operations_per_day: { "video-to-music": 1 } })
      const form = () => new URLSearchParams({ video: "https://videos.example/v.mp4" })

      const streamed = yield* postForm(service, token, form())
      expect(streamed.status).toBe(200)
      expectNdjson(streamed)
      expect((yield* balanceOf(service, token)).tasks_in_flight.used).toBe(0)

      const refused = yield* postForm(service, token, form())
      expect(refused.status).toBe(429)
      expect(JSON.parse(refused.text).error).toBe("quota_exceeded")
      expect(refused.headers.get("ratelimit-policy")).toBe(`"operations-day";q=1;qu="requests";w=86400`)
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)
      expect(fake.received()).toHaveLength(1)

      const events = yield* usageOf(service, token, "video-to-music")
      expect(events.map((e) => [e.outcome, e.units, e.unit])).toEqual([["refused", 0, "task"], ["succeeded", 1, "task"]])
      expect(events[1]!.bytes_out).toBe(Buffer.byteLength(streamed.text))
    }))

  it.effect("text-to-music: metered as video-to-music, its own day's count, refused before the vendor", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.reset()
      fake.behave({ kind: "stream", lines: ['{"type":"title","title":"Rain","stream_index":0}', '{"type":"complete"}'] })
      const token = yield* signedIn(service, "tia")
      yield* setQuotas(service, "tia", { operations_per_day: { "text-to-music": 1 } })
      // as comfy_api_nodes/nodes_sonilo.py posts it: a URL-encoded form
      const form = () => new URLSearchParams({ prompt: "rain on a tin roof", duration: "30" })

      const streamed = yield* postForm(service, token, form(), {}, "/proxy/musicvendor/t2m/generate")
      expect(streamed.status).toBe(200)
      expectNdjson(streamed)
      expect((yield* balanceOf(service, token)).tasks_in_flight.used).toBe(0)

      const refused = yield* postForm(service, token, form(), {}, "/proxy/musicvendor/t2m/generate")
      expect(refused.status).toBe(429)
      expect(JSON.parse(refused.text).error).toBe("quota_exceeded")
      expect(refused.headers.get("ratelimit-policy")).toBe(`"operations-day";q=1;qu="requests";w=86400`)
      expect(fake.received().map((r) => r.path)).toEqual(["/t2m/generate"])

      const events = yield* usageOf(service, token, "text-to-music")
      expect(events.map((e) => [e.outcome, e.units, e.unit])).toEqual([["refused", 0, "task"], ["succeeded", 1, "task"]])
      expect(events[1]!.bytes_out).toBe(Buffer.byteLength(streamed.text))
      // its own operation: video-to-music's count is untouched
      expect(yield* usageOf(service, token, "video-to-music")).toEqual([])
    }))

  it.effect("uploads: bytes of the day counted when recorded, refused past the quota before or after the body", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* signedIn(service, "uma")
      yield* setQuotas(service, "uma", { upload_bytes_per_day: 10 })

      const tooMuch = yield* put(service, yield* newFile(service, token, "a.bin"), new Uint8Array(11))
      expect(tooMuch.status).toBe(429)
      expect(JSON.parse(tooMuch.text).error).toBe("quota_exceeded")
      expect(tooMuch.headers.get("ratelimit-policy")).toBe(`"upload-bytes-day";q=10;qu="content-bytes";w=86400`)
      expect(tooMuch.headers.get("ratelimit")).toMatch(/^"upload-bytes-day";r=10;t=\d+$/)

      expect((yield* put(service, yield* newFile(service, token, "b.bin"), new Uint8Array(6))).status).toBe(204)
      const second = yield* put(service, yield* newFile(service, token, "c.bin"), new Uint8Array(5))
      expect(second.status).toBe(429)
      expect(second.headers.get("ratelimit")).toMatch(/^"upload-bytes-day";r=4;t=\d+$/)
      expect((yield* put(service, yield* newFile(service, token, "d.bin"), new Uint8Array(4))).status).toBe(204)

      const upload = (yield* balanceOf(service, token)).operations_per_day.find((q) => q.operation === "media-upload")!
      expect(upload).toMatchObject({ used: 10, remaining: 0 })
      const events = yield* usageOf(service, token, "media-upload")
      expect(events.map((e) => [e.outcome, e.units, e.unit])).toEqual([
        ["succeeded", 4, "byte"],
        ["refused", 0, "byte"],
        ["succeeded", 6, "byte"],
        ["refused", 0, "byte"]
      ])
    }))
})
