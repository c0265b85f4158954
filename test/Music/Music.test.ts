/**
 * POST /proxy/musicvendor/v2m/generate over real HTTP against a loopback fake of the vendor: the
 * forms accepted and refused, what the vendor receives, its refusals mapped onto our answers, and
 * the NDJSON relay (unknown types, known types shaped otherwise, malformed lines, the vendor's
 * error, cut and reset streams, keep-alives, a client that goes away).
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { createHash } from "node:crypto"
import { clientFor, withFiles } from "../support/Client.ts"
import { type Fake, FakeMusicVendor } from "../support/FakeMusicVendor.ts"
import { decodeError, expectErrorBody, parseJson } from "../support/Http.ts"
import {
  asHostMusicNode,
  eventsOf,
  expectNdjson,
  fileForm,
  generatePath,
  leftoverTempFiles,
  postForm,
  type StreamAnswer,
  serviceWithFakeVendor
} from "../support/Music.ts"
import { Service } from "../support/Service.ts"
import { mp4 } from "../support/Video.ts"

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

const expectFailure = (answer: StreamAnswer, status: number, code?: string) => {
  if (answer.status !== status) expect.fail(`expected ${status}, got ${answer.status}: ${answer.text.slice(0, 300)}`)
  const body = decodeError(parseJson(answer.text, `answer ${status}`))
  expectErrorBody(body, code)
  return body
}

const completeStream = ['{"type":"duration","duration_sec":300}', '{"type":"complete"}']

let token = ""

/**
 * A refused upload's vendor request (started when the file part did) is broken off, never
 * completed: every request that arrived ends without its body's end, and none is recorded whole.
 */
const noWholeForm = (fake: Fake) =>
  Effect.gen(function*() {
    for (let i = 0; i < 100 && fake.broken() < fake.arrived(); i++) yield* Effect.sleep("50 millis")
    expect(fake.broken()).toBe(fake.arrived())
    expect(fake.received()).toEqual([])
  })

layer(serviceWithFakeVendor(), { excludeTestServices: true })("video to music", (it) => {
  it.effect("mints a caller", () =>
    Effect.gen(function*() {
      const service = yield* Service
      token = yield* Effect.promise(() => service.token({ sub: "vera" }))
    }))

  it.effect("an uploaded 5-minute video reaches the vendor byte for byte, with the prompt and the key", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.reset()
      const title = { type: "title", title: "Sunrise", display_tags: ["calm"], copy_index: 0, prompt_index: 0, stream_index: 1 }
      fake.behave({ kind: "stream", lines: ['{"type":"duration","duration_sec":300}', JSON.stringify(title), '{"type":"audio_chunk","data":"AAEC","stream_index":1}', '{"type":"complete"}'] })
      const video = mp4(300, 200_000)
      const answer = yield* postForm(service, token, fileForm(video, { prompt: "calm piano, sunrise" }))
      expectNdjson(answer)
      expect(eventsOf(answer)).toEqual([
        { type: "duration", duration_sec: 300 },
        title,
        { type: "audio_chunk", data: "AAEC", stream_index: 1 },
        { type: "complete" }
      ])
      const [got] = fake.received()
      expect(got?.headers.authorization).toBe(`Bearer ${fake.apiKey}`)
      expect(got?.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/)
      // sent as it arrives (chunked, or with its length when it was all there before the vendor
      // took any: undici's choice), and whole: the file's hash below
      expect(got?.bodyBytes).toBeGreaterThan(video.length)
      expect(got?.file).toEqual({ field: "0.video", filename: "clip.mp4", size: video.length, sha256: sha256(video) })
      expect(got?.fields).toEqual({ prompt: "calm piano, sunrise" })
      expect(answer.text).not.toContain(fake.apiKey)
      expect(yield* leftoverTempFiles(service)).toEqual([])
    }))

  it.effect("`video` with a file name is the upload too", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.reset()
      fake.behave({ kind: "stream", lines: completeStream })
      const video = mp4(10)
      expectNdjson(yield* postForm(service, token, fileForm(video, { field: "video", filename: "a \"quoted\" name.mp4" })))
      expect(fake.received()[0]?.file).toMatchObject({ field: "0.video", filename: 'a "quoted" name.mp4', sha256: sha256(video) })
    }))

  it.effect("a URL goes on as `video`, from a multipart or a URL-encoded form; unknown text fields are ignored", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.reset()
      fake.behave({ kind: "stream", lines: completeStream })
      const form = new FormData()
      form.append("video", "https://videos.example/a.mp4")
      form.append("prompt", "jazz")
      form.append("style", "ignored")
      expectNdjson(yield* postForm(service, token, form))
      expectNdjson(yield* postForm(service, token, new URLSearchParams({ video_url: "http://videos.example/b.mov" })))
      expect(fake.received().map((r) => [r.fields, r.file])).toEqual([
        [{ video: "https://videos.example/a.mp4", prompt: "jazz" }, undefined],
        [{ video: "http://videos.example/b.mov" }, undefined]
      ])
    }))

  it.effect("a 7-minute video is 400 video_too_long and a file that is no video 400 invalid_video; the vendor gets nothing", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.reset()
      const long = expectFailure(yield* postForm(service, token, fileForm(mp4(420))), 400, "video_too_long")
      expect(long.message).toContain("420")
      expectFailure(yield* postForm(service, token, fileForm(new TextEncoder().encode("just text"))), 400, "invalid_video")
      expectFailure(yield* postForm(service, token, fileForm(new Uint8Array(0))), 400, "invalid_video")
      // the first refused from its movie box's first bytes, the others checked whole: never forwarded
      expect(fake.arrived()).toBe(0)
      expect(yield* leftoverTempFiles(service)).toEqual([])
    }))

  it.effect("forms without exactly one valid source, or with an oversized prompt, are 400 naming the problem", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.reset()
      const cases: Array<[string, FormData | URLSearchParams, string]> = []
      const both = fileForm(mp4(5))
      both.append("video_url", "https://videos.example/a.mp4")
      cases.push(["file and URL", both, "not both"])
      cases.push(["neither", new URLSearchParams({ prompt: "x" }), "video is required"])
      cases.push(["two URL fields", new URLSearchParams({ video: "https://a.example/v", video_url: "https://b.example/v" }), "once"])
      cases.push(["a repeated field", new URLSearchParams([["video", "https://a.example/v"], ["video", "https://b.example/v"]]), "more than once"])
      cases.push(["not http", new URLSearchParams({ video: "ftp://videos.example/a.mp4" }), "'video'"])
      cases.push(["not a URL", new URLSearchParams({ video_url: "a video" }), "'video_url'"])
      cases.push(["long prompt", new URLSearchParams({ video: "https://a.example/v", prompt: "p".repeat(2001) }), "'prompt'"])
      const twoFiles = fileForm(mp4(5))
      twoFiles.append("video", new Blob([mp4(5)]), "b.mp4")
      cases.push(["two files", twoFiles, "more than one video file"])
      const strayFile = new FormData()
      strayFile.append("video", "https://a.example/v")
      strayFile.append("thumbnail", new Blob([new Uint8Array(10)]), "t.png")
      cases.push(["a file in another part", strayFile, "'thumbnail'"])
      const textVideo = new FormData()
      textVideo.append("0.video", "not a file")
      cases.push(["0.video as text", textVideo, "'0.video'"])
      for (const [what, body, mentions] of cases) {
        const e = expectFailure(yield* postForm(service, token, body), 400, "bad_request")
        expect(e.message, what).toContain(mentions)
      }
      yield* noWholeForm(fake)
      expect(yield* leftoverTempFiles(service)).toEqual([])
    }))

  it.effect("other content types are 415, broken multipart 400, an oversized form without a file 413, no token 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectFailure(
        yield* postForm(service, token, JSON.stringify({ video: "https://a.example/v" }), { "content-type": "application/json" }),
        415,
        "unsupported_media_type"
      )
      expectFailure(yield* postForm(service, token, "raw", { "content-type": "video/mp4" }), 415, "unsupported_media_type")
      expectFailure(yield* postForm(service, token, "--x\r\nbroken", { "content-type": "multipart/form-data; boundary=x" }), 400)
      expectFailure(yield* postForm(service, token, "garbage", { "content-type": "multipart/form-data" }), 400)
      const oversized = new URLSearchParams({ video: "https://a.example/v", prompt: "x".repeat(64 * 1024) })
      expectFailure(yield* postForm(service, token, oversized), 413, "payload_too_large")
      expectFailure(yield* postForm(service, undefined, new URLSearchParams({ video: "https://a.example/v" })), 401, "unauthorized")
    }))

  it.effect("a form cut inside a part's headers is 400 at once, not a request left hanging", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.reset()
      // the parser under the form (multipasta) never ends its stream for such a body: the
      // closing-delimiter watcher of src/Music/Form.ts answers instead (a hang fails on the timeout)
      const cut = `--cut\r\ncontent-disposition: form-data; name="video"\r\ncontent-ty`
      const e = expectFailure(yield* postForm(service, token, cut, { "content-type": "multipart/form-data; boundary=cut" }), 400, "bad_request")
      expect(e.message).toContain("closing boundary")
      expect(fake.arrived()).toBe(0)
    }), 15_000)

  it.effect("vendor refusals before the stream map onto our answers", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      const url = new URLSearchParams({ video: "https://videos.example/a.mp4" })
      const cases: Array<[string, Parameters<typeof fake.behave>[0], number, string, string?]> = [
        ["400", { kind: "status", status: 400, body: { message: "video URL unreachable" } }, 400, "bad_request", "video URL unreachable"],
        ["422", { kind: "status", status: 422, body: { detail: "unsupported codec" } }, 400, "bad_request", "unsupported codec"],
        ["401", { kind: "status", status: 401, body: { message: "bad key" } }, 502, "upstream_error"],
        ["403", { kind: "status", status: 403 }, 502, "upstream_error"],
        ["404", { kind: "status", status: 404, body: { message: "no such model" } }, 404, "not_found"],
        ["500", { kind: "status", status: 500 }, 502, "upstream_error"],
        ["503", { kind: "status", status: 503 }, 502, "upstream_error"],
        ["reset", { kind: "reset" }, 502, "upstream_error"],
        ["hang", { kind: "hang" }, 504, "upstream_timeout"]
      ]
      for (const [what, behaviour, status, code, message] of cases) {
        fake.behave(behaviour)
        const e = expectFailure(yield* postForm(service, token, url), status, code)
        if (message !== undefined) expect(e.message, what).toBe(message)
        expect(e.message, what).not.toContain(fake.apiKey)
      }
      fake.behave({ kind: "status", status: 429, body: { message: "slow down" }, headers: { "retry-after": "17" } })
      const limited = yield* postForm(service, token, url)
      expectFailure(limited, 429, "rate_limited")
      expect(limited.headers.get("retry-after")).toBe("17")
    }))

  it.effect("an upload the vendor refuses or never answers leaves no temporary file", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.behave({ kind: "hang" })
      expectFailure(yield* postForm(service, token, fileForm(mp4(30))), 504, "upstream_timeout")
      fake.behave({ kind: "status", status: 500 })
      expectFailure(yield* postForm(service, token, fileForm(mp4(30))), 502, "upstream_error")
      expect(yield* leftoverTempFiles(service)).toEqual([])
    }))

  it.effect("unknown event types pass unchanged, malformed lines are dropped, known events are re-encoded", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      const unknown = '{"type":"progress","percent":40,"nested":{"a":[1,2]}}'
      fake.behave({
        kind: "stream",
        lines: [
          '{ "type": "duration",  "duration_sec": 12.5 }',
          unknown,
          "not json",
          '["an","array"]',
          '{"no":"type"}',
          "",
          '{"type":"cost","cost":0.25,"currency":"USD","extra":"kept"}\r',
          '{"type":"complete"}'
        ]
      })
      const answer = yield* postForm(service, token, new URLSearchParams({ video: "https://a.example/v" }))
      expectNdjson(answer)
      expect(answer.lines).toEqual([
        '{"type":"duration","duration_sec":12.5}',
        unknown,
        '{"type":"cost","cost":0.25,"currency":"USD","extra":"kept"}',
        '{"type":"complete"}'
      ])
    }))

  it.effect("known events shaped otherwise than our schemas pass unchanged: the host's music node (comfy_api_nodes/nodes_sonilo.py) reads them", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      const differing = [
        '{ "type": "title", "title": 5 }',
        '{"type":"duration","duration_sec":"12.5"}',
        '{"type":"titles","titles":[1,"Rain"]}',
        '{"type":"cost","cost":{"amount":0.25}}'
      ]
      fake.behave({
        kind: "stream",
        lines: [
          '{"type":"duration","duration_sec":12.5}',
          '{"type":"titles","titles":["Rain at dusk","Rain at dawn"]}',
          ...differing,
          '{"type":"audio_chunk","data":"AAEC","stream_index":0}',
          '{"type":"complete"}'
        ]
      })
      const answer = yield* postForm(service, token, new URLSearchParams({ video_url: "https://a.example/v", prompt: "rain" }))
      expectNdjson(answer)
      expect(answer.lines).toEqual([
        '{"type":"duration","duration_sec":12.5}',
        '{"type":"titles","titles":["Rain at dusk","Rain at dawn"]}',
        ...differing.map((l) => l.trim()),
        '{"type":"audio_chunk","data":"AAEC","stream_index":0}',
        '{"type":"complete"}'
      ])
      const { audio, progress } = asHostMusicNode(answer.lines.filter((l) => !differing.includes(l.trim())))
      expect(progress).toEqual(["Status: Generating\nVideo duration: 12.5s", "Status: Generating\nTitle: Rain at dusk"])
      expect([...audio]).toEqual([0, 1, 2])
    }))

  it.effect("the typed client types the events its schemas describe and skips the others", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.behave({
        kind: "stream",
        lines: [
          '{"type":"titles","titles":["Rain at dusk",{"title":"Rain at dawn","stream_index":1}]}',
          '{"type":"title","title":5}',
          '{"type":"vendor_news","anything":1}',
          '{"type":"error","code":"GENERATION_FAILED","message":"The model gave up"}'
        ]
      })
      const client = yield* clientFor(service, { bearer: token })
      const events = yield* withFiles(Stream.runCollect(client.generateMusic({ url: "https://a.example/v" })))
      expect(events).toEqual([
        { type: "titles", titles: ["Rain at dusk", { title: "Rain at dawn", stream_index: 1 }] },
        { type: "error", code: "GENERATION_FAILED", message: "The model gave up" }
      ])
    }))

  it.effect("the vendor's error event ends the stream as it sent it: no second error of ours", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      const url = new URLSearchParams({ video: "https://a.example/v" })
      const vendorError = '{"type":"error","code":"GENERATION_FAILED","message":"The model gave up"}'
      for (const end of ["finish", "reset"] as const) {
        fake.behave({ kind: "stream", lines: ['{"type":"duration","duration_sec":3}', vendorError], delayMillis: 20, end })
        const answer = yield* postForm(service, token, url)
        expectNdjson(answer)
        expect(answer.lines, end).toEqual(['{"type":"duration","duration_sec":3}', vendorError])
        // the host's music node (comfy_api_nodes/nodes_sonilo.py) raises with the vendor's code
        expect(() => asHostMusicNode(answer.lines)).toThrow("music vendor generation error (GENERATION_FAILED): The model gave up")
      }
      // an error event of another shape is still the vendor's word on how the stream ended
      fake.behave({ kind: "stream", lines: ['{"type":"error","code":42}'] })
      expect((yield* postForm(service, token, url)).lines).toEqual(['{"type":"error","code":42}'])
    }))

  it.effect("a stream cut before `complete`, or reset, ends with an error event", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      const url = new URLSearchParams({ video: "https://a.example/v" })
      fake.behave({ kind: "stream", lines: ['{"type":"duration","duration_sec":3}'] })
      const cut = yield* postForm(service, token, url)
      expectNdjson(cut)
      expect(eventsOf(cut)).toEqual([{ type: "duration", duration_sec: 3 }, { type: "error", code: "stream_incomplete", message: expect.any(String) }])
      // our error is the vendor's shape: the host's music node (comfy_api_nodes/nodes_sonilo.py) reads its code
      expect(() => asHostMusicNode(cut.lines)).toThrow("music vendor generation error (stream_incomplete): ")

      fake.behave({ kind: "stream", lines: ['{"type":"duration","duration_sec":3}', '{"type":"audio_chunk","data":"AA=="}'], delayMillis: 50, end: "reset" })
      const reset = yield* postForm(service, token, url)
      expectNdjson(reset)
      const events = eventsOf(reset)
      expect(events.slice(0, 2)).toEqual([{ type: "duration", duration_sec: 3 }, { type: "audio_chunk", data: "AA==" }])
      expect(events.slice(2)).toEqual([{ type: "error", code: "upstream_error", message: expect.any(String) }])
    }))

  it.effect("a slow vendor: blank keep-alive lines while it is silent", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.behave({ kind: "stream", lines: ['{"type":"duration","duration_sec":3}', '{"type":"complete"}'], delayMillis: 700 })
      const answer = yield* postForm(service, token, new URLSearchParams({ video: "https://a.example/v" }))
      expectNdjson(answer)
      expect(eventsOf(answer)).toEqual([{ type: "duration", duration_sec: 3 }, { type: "complete" }])
      const blanks = answer.lines.filter((l) => l === "").length
      expect(blanks).toBeGreaterThanOrEqual(1)
      // keep-alives go on while the vendor holds the stream open after `complete`
      expect(answer.lines.filter((l) => l !== "").at(-1)).toBe('{"type":"complete"}')
    }))

  it.effect("a client that goes away mid-stream aborts the vendor request", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.reset()
      fake.behave({ kind: "stream", lines: ['{"type":"duration","duration_sec":3}'], end: "hold" })
      yield* Effect.promise(async () => {
        const controller = new AbortController()
        const response = await service.fetch(generatePath, {
          method: "POST",
          headers: { authorization: `Bearer ${token}` },
          body: fileForm(mp4(20)),
          signal: controller.signal
        })
        expect(response.status).toBe(200)
        const reader = response.body!.getReader()
        const first = await reader.read()
        expect(new TextDecoder().decode(first.value)).toContain('"duration"')
        controller.abort()
      })
      // the abort travels: client -> service -> vendor
      for (let i = 0; i < 100 && fake.aborted() === 0; i++) yield* Effect.sleep("50 millis")
      expect(fake.aborted()).toBe(1)
      for (let i = 0; i < 100 && (yield* leftoverTempFiles(service)).length > 0; i++) yield* Effect.sleep("50 millis")
      expect(yield* leftoverTempFiles(service)).toEqual([])
    }))

  it.effect("the endpoint is in the OpenAPI document with both form encodings and the NDJSON answer", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const spec = yield* Effect.promise(() => service.fetch("/openapi.json").then((r) => r.json() as Promise<any>))
      const operation = spec.paths[generatePath].post
      expect(Object.keys(operation.requestBody.content).sort()).toEqual(["application/x-www-form-urlencoded", "multipart/form-data"])
      expect(Object.keys(operation.responses["200"].content)).toEqual(["application/x-ndjson"])
      expect(operation.responses["413"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/PayloadTooLargeWithDetail" })
    }))
})
