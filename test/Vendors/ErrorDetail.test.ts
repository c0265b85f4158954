/**
 * `detail` on the media proxy's errors (src/Http/ErrorDetail.ts). The host application's music
 * node reads an error's `detail` (comfy_api_nodes/nodes_sonilo.py, `_extract_error_message`:
 * `detail` as a string, or an object's `message`) and showed `Sonilo API error (401): {}`: every
 * error answered under `/proxy/` carries `detail`, the message again, after `error` and `message`,
 * the vendors' words included (`/proxy/sonilo/...`); everywhere else the body stays exactly
 * `{error, message}`.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { FakeMusicVendor } from "../support/FakeMusicVendor.ts"
import { sendText, type Reply } from "../support/Http.ts"
import { paths, tokenOf } from "../support/ImageProxy.ts"
import { atFakeVendor, generatePath } from "../support/Music.ts"
import { type Running, Service } from "../support/Service.ts"

const withMusicVendor = Layer.unwrap(Effect.map(FakeMusicVendor, (fake) =>
  Service.layer(atFakeVendor(fake, (c) => ({ ...c, aliases: { ...c.aliases, musicVendorPath: "sonilo" } }))))).pipe(
    Layer.provideMerge(FakeMusicVendor.layer)
  )

/** `_extract_error_message` of nodes_sonilo.py, on the answer's text. */
const soniloMessage = (text: string): string => {
  try {
    const body = JSON.parse(text) as Record<string, unknown>
    const detail = body.detail ?? {}
    if (typeof detail === "object" && detail !== null) {
      const message = (detail as Record<string, unknown>).message
      return message === undefined ? JSON.stringify(detail) : String(message)
    }
    return String(detail)
  } catch {
    return text
  }
}

/** A form post as the music node makes it (aiohttp FormData: `video_url`, `prompt`). */
const postForm = (service: Running, path: string, token: string | undefined) =>
  Effect.promise(async (): Promise<Reply> => {
    const form = new FormData()
    form.append("video_url", "https://media.example/clip.mp4")
    const response = await service.fetch(path, {
      method: "POST",
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
      body: form
    })
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

/** The keys in order and the message echoed: `{error, message, detail}`. */
const expectDetailed = (reply: Reply, status: number, code: string) => {
  expect(reply.status, reply.text).toBe(status)
  const body = JSON.parse(reply.text) as Record<string, string>
  expect(Object.keys(body)).toEqual(["error", "message", "detail"])
  expect(body.error).toBe(code)
  expect(body.message?.length).toBeGreaterThan(0)
  expect(body.detail).toBe(body.message)
  expect(reply.headers.get("content-length")).toBe(String(Buffer.byteLength(reply.text)))
  return body
}

const expectPlain = (reply: Reply, status: number) => {
  expect(reply.status, reply.text).toBe(status)
  expect(Object.keys(JSON.parse(reply.text) as object)).toEqual(["error", "message"])
}

layer(withMusicVendor, { excludeTestServices: true })("detail on the media proxy's errors", (it) => {
  it.effect("the music node reads the message where it showed {} before: no login, the vendor failing, bad input", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.reset()
      for (const path of [generatePath, "/proxy/sonilo/v2m/generate"]) {
        const anonymous = expectDetailed(yield* postForm(service, path, undefined), 401, "unauthorized")
        expect(soniloMessage(JSON.stringify(anonymous))).toBe(anonymous.message)
      }
      const token = yield* tokenOf(service, "ann")
      fake.behave({ kind: "status", status: 500, body: { error: "boom" } })
      const failed = expectDetailed(yield* postForm(service, "/proxy/sonilo/v2m/generate", token), 502, "upstream_error")
      expect(soniloMessage(JSON.stringify(failed))).toBe(failed.message)
      const empty = yield* Effect.promise(async () => {
        const response = await service.fetch(generatePath, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: new FormData() })
        return { status: response.status, headers: response.headers, text: await response.text() }
      })
      expectDetailed(empty, 400, "bad_request")
    }))

  it.effect("every error under /proxy/ carries it: the image proxy's, a wrong method, a path with no route", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* tokenOf(service, "ann")
      expectDetailed(yield* sendText(service, "POST", paths.skin, { token, body: { image: "not an image" } }), 400, "bad_request")
      expectDetailed(yield* sendText(service, "POST", paths.skin, { token, raw: "{" }), 400, "bad_request")
      expectDetailed(yield* sendText(service, "GET", paths.skinPoll("0b6f5a2e-3c1d-4e7f-8a9b-0c1d2e3f4a5b"), { token }), 404, "not_found")
      expectDetailed(yield* sendText(service, "DELETE", paths.style, { token }), 405, "method_not_allowed")
      expectDetailed(yield* sendText(service, "GET", "/proxy/nowhere/v1/x", { token }), 404, "not_found")
      // no vendor configured for images in this service
      expectDetailed(yield* sendText(service, "POST", paths.skin, { token, body: { image: "https://a.example/x.png" } }), 503, "vendor_not_configured")
    }))

  it.effect("elsewhere the body stays exactly {error, message}", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectPlain(yield* sendText(service, "GET", "/nodes/nobody-has-this"), 404)
      expectPlain(yield* sendText(service, "GET", "/customers/api-keys"), 401)
      expectPlain(yield* sendText(service, "POST", "/customers/storage", { body: {} }), 401)
      expectPlain(yield* sendText(service, "GET", "/no/such/route"), 404)
      expectPlain(yield* sendText(service, "GET", "/proxyx/imagevendor"), 404)
    }))
})
