/**
 * The media proxy under the vendors' own words (IMAGEVENDOR_PATH_ALIAS, MUSICVENDOR_PATH_ALIAS):
 * each request under `/proxy/<word>/...` answers byte for byte what `/proxy/imagevendor/...` or
 * `/proxy/musicvendor/...` answers, refusals included, as the very same route (one vendor call for
 * one Idempotency-Key across both paths, metrics under the neutral pattern). The words are the
 * host application's: comfy_api_nodes/nodes_magnific.py calls `/proxy/freepik/v1/ai/...`,
 * comfy_api_nodes/nodes_sonilo.py `/proxy/sonilo/v2m/generate`. Empty (the default), those paths
 * are unknown.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Option, Redacted } from "effect"
import { expectError, expectStatus, getText, type Reply, sendText } from "../support/Http.ts"
import { FakeImageVendor } from "../support/FakeImageVendor.ts"
import { FakeMusicVendor } from "../support/FakeMusicVendor.ts"
import { atFake, paths, styleBody, tokenOf } from "../support/ImageProxy.ts"
import { atFakeVendor, generatePath } from "../support/Music.ts"
import { type Running, Service } from "../support/Service.ts"

const metricsToken = "vendor-paths-scrape-3b9d"

/** The service at both fake vendors, `words` for the vendors' paths, /metrics behind a token. */
const withBothFakes = (words: { readonly image: string; readonly music: string }) =>
  Layer.unwrap(Effect.gen(function*() {
    const image = yield* FakeImageVendor
    const music = yield* FakeMusicVendor
    return Service.layer(atFake(image, atFakeVendor(music, (c) => ({
      ...c,
      aliases: { ...c.aliases, imageVendorPath: words.image, musicVendorPath: words.music },
      metrics: { ...c.metrics, port: Option.none(), token: Option.some(Redacted.make(metricsToken)) }
    }))))
  })).pipe(Layer.provideMerge(FakeImageVendor.layer), Layer.provideMerge(FakeMusicVendor.layer))

/** What a client or a cache reads of an answer: everything but the per-request headers. */
const seen = (reply: Reply) => ({
  status: reply.status,
  text: reply.text,
  headers: ["content-type", "content-length", "retry-after", "x-vendor-mode", "allow", "cache-control"].map(
    (name) => [name, reply.headers.get(name)]
  )
})

const freepik = (neutral: string) => neutral.replace("/proxy/imagevendor/", "/proxy/freepik/")
const sonilo = (neutral: string) => neutral.replace("/proxy/musicvendor/", "/proxy/sonilo/")

interface Sent {
  readonly token?: string
  readonly body?: unknown
  readonly raw?: string
  readonly headers?: Record<string, string>
}

/** The request under the neutral path, then under the vendor's word: the same answer, returned. */
const sameAnswer = (service: Running, method: string, neutral: string, alias: string, options: Sent = {}) =>
  Effect.gen(function*() {
    const viaNeutral = yield* sendText(service, method, neutral, options)
    const viaAlias = yield* sendText(service, method, alias, options)
    expect(seen(viaAlias), `${method} ${alias} as ${neutral}`).toEqual(seen(viaNeutral))
    return asAnswer(viaAlias)
  })

/** A reply with its JSON body (none when empty). */
const asAnswer = (reply: Reply) => ({ ...reply, body: reply.text === "" ? undefined : JSON.parse(reply.text) as unknown })

/** A multipart form as nodes_sonilo.py builds it for video to music (`video_url`, `prompt`). */
const musicForm = () => {
  const form = new FormData()
  form.append("video_url", "https://media.example/clip.mp4")
  form.append("prompt", "calm piano")
  return form
}

/** Posts the form to `path` and reads the whole answer. */
const postForm = (service: Running, path: string, token: string, form: FormData) =>
  Effect.promise(async (): Promise<Reply> => {
    const response = await service.fetch(path, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form })
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

layer(withBothFakes({ image: "freepik", music: "sonilo" }), { excludeTestServices: true })(
  "the media proxy under the vendors' words",
  (it) => {
    it.effect("a start, its repeat and its polls answer the same under both paths, with one vendor call", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const fake = yield* FakeImageVendor
        fake.reset()
        const token = yield* tokenOf(service, "ann")
        const options = { token, body: styleBody, headers: { "idempotency-key": "alias-start-1" } }
        // the same key and body under the other path is the same request: the first task, answered again
        const started = yield* sameAnswer(service, "POST", paths.style, freepik(paths.style), options)
        expectStatus(started, 200, "start")
        expect(fake.requests().filter((r) => r.method === "POST")).toHaveLength(1)
        const taskId = (JSON.parse(started.text) as { task_id: string }).task_id
        fake.script(taskId, ["IN_PROGRESS"])
        expectStatus(yield* sameAnswer(service, "GET", paths.stylePoll(taskId), freepik(paths.stylePoll(taskId)), { token }), 200, "poll")
        // the vendor finishes: the poll under the vendor's word sees it, the neutral one answers the same
        fake.script(taskId, ["COMPLETED"])
        const done = yield* sendText(service, "GET", freepik(paths.stylePoll(taskId)), { token })
        expect(JSON.parse(done.text)).toMatchObject({ data: { task_id: taskId, status: "COMPLETED" } })
        expect(seen(yield* sendText(service, "GET", paths.stylePoll(taskId), { token }))).toEqual(seen(done))
      }))

    it.effect("refusals are the same: bad input, no token, unknown task, the vendor's rate limit", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const fake = yield* FakeImageVendor
        fake.reset()
        const token = yield* tokenOf(service, "ann")
        const bad = { ...styleBody, style_strength: 101 }
        expectError(yield* sameAnswer(service, "POST", paths.style, freepik(paths.style), { token, body: bad }), 400)
        expectError(yield* sameAnswer(service, "POST", paths.skin, freepik(paths.skin), { token, raw: "{not json" }), 400)
        expectError(yield* sameAnswer(service, "POST", paths.skin, freepik(paths.skin), { body: { image: "https://a.example/x.png" } }), 401)
        const nobody = "0b6f5a2e-3c1d-4e7f-8a9b-0c1d2e3f4a5b"
        expectError(yield* sameAnswer(service, "GET", paths.skinPoll(nobody), freepik(paths.skinPoll(nobody)), { token }), 404)
        fake.behave({ kind: "status", status: 429, body: { message: "slow down" }, headers: { "retry-after": "7" } })
        const limited = yield* sameAnswer(service, "POST", paths.skin, freepik(paths.skin), { token, body: { image: "https://a.example/x.png" } })
        expectError(limited, 429, "rate_limited")
        expect(limited.headers.get("retry-after")).toBe("7")
        // a 405 names the path as sent: all else is the same
        const viaAlias = yield* sendText(service, "DELETE", freepik(paths.style), { token })
        const viaNeutral = yield* sendText(service, "DELETE", paths.style, { token })
        expect(viaAlias.status).toBe(405)
        expect(viaAlias.headers.get("allow")).toBe(viaNeutral.headers.get("allow"))
        expect(viaAlias.text).toBe(viaNeutral.text.replaceAll(paths.style, freepik(paths.style)))
      }))

    it.effect("video to music streams the same under /proxy/sonilo, and refuses the same", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const fake = yield* FakeMusicVendor
        fake.reset()
        fake.behave({
          kind: "stream",
          lines: [
            JSON.stringify({ type: "duration", duration_sec: 4.5 }),
            JSON.stringify({ type: "title", title: "Calm", stream_index: 0 }),
            JSON.stringify({ type: "audio_chunk", stream_index: 0, data: Buffer.from("ID3 audio").toString("base64") }),
            JSON.stringify({ type: "complete" })
          ]
        })
        const token = yield* tokenOf(service, "ann")
        const viaNeutral = yield* postForm(service, generatePath, token, musicForm())
        const viaAlias = yield* postForm(service, sonilo(generatePath), token, musicForm())
        expectStatus(viaNeutral, 200, "v2m")
        expect(seen(viaAlias)).toEqual(seen(viaNeutral))
        expect(fake.received().map((r) => r.fields.video)).toEqual(["https://media.example/clip.mp4", "https://media.example/clip.mp4"])
        const empty = new FormData()
        empty.append("prompt", "no video")
        const refusedNeutral = yield* postForm(service, generatePath, token, empty)
        const refusedAlias = yield* postForm(service, sonilo(generatePath), token, empty)
        expect(refusedNeutral.status).toBe(400)
        expect(seen(refusedAlias)).toEqual(seen(refusedNeutral))
      }))

    it.effect("metrics name the neutral route, never the path as sent", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const token = yield* tokenOf(service, "ann")
        const nobody = "5d2e8f10-7a3b-4c9d-8e1f-2a3b4c5d6e7f"
        yield* sendText(service, "GET", freepik(paths.stylePoll(nobody)), { token })
        const exposition = expectStatus(yield* getText(service, "/metrics", { token: metricsToken }), 200, "scrape").text
        expect(exposition).toContain(`route="/proxy/imagevendor/v1/ai/image-style-transfer/:task_id"`)
        expect(exposition).not.toContain("/proxy/freepik")
        expect(exposition).not.toContain("/proxy/sonilo")
      }))
  }
)

layer(
  Service.layer((c) => ({ ...c, vendorMode: "simulated", aliases: { ...c.aliases, imageVendorPath: "freepik", musicVendorPath: "sonilo" } })),
  { excludeTestServices: true }
)("the vendors' words with the simulated vendors", (it) => {
  it.effect("answers are the same, x-vendor-mode included: a start, its poll, a refusal", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* tokenOf(service, "ann")
      const options = { token, body: { image: "https://images.example/face.png" }, headers: { "idempotency-key": "simulated-alias-1" } }
      const started = yield* sameAnswer(service, "POST", paths.skin, freepik(paths.skin), options)
      expectStatus(started, 200, "simulated start")
      expect(started.headers.get("x-vendor-mode")).toBe("simulated")
      const taskId = (started.body as { data: { task_id: string } }).data.task_id
      // the simulated vendor finishes at the second poll: once it has, both paths answer the finished task
      yield* sendText(service, "GET", paths.skinPoll(taskId), { token })
      yield* sendText(service, "GET", freepik(paths.skinPoll(taskId)), { token })
      const polled = yield* sameAnswer(service, "GET", paths.skinPoll(taskId), freepik(paths.skinPoll(taskId)), { token })
      expect(polled.body).toMatchObject({ data: { task_id: taskId, status: "COMPLETED" } })
      const refused = yield* sameAnswer(service, "POST", paths.skin, freepik(paths.skin), { token, body: {} })
      expectError(refused, 400)
      expect(refused.headers.get("x-vendor-mode")).toBe("simulated")
    }))
})

layer(withBothFakes({ image: "", music: "" }), { excludeTestServices: true })("the vendors' words off (the default)", (it) => {
  it.effect("the vendors' paths are unknown; the neutral ones answer", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* tokenOf(service, "ann")
      expectError(yield* sendText(service, "POST", freepik(paths.style), { token, body: styleBody }).pipe(Effect.map(asAnswer)), 404, "not_found")
      expectError(yield* sendText(service, "GET", freepik(paths.skinPoll("x")), { token }).pipe(Effect.map(asAnswer)), 404, "not_found")
      expectError(yield* postForm(service, sonilo(generatePath), token, musicForm()).pipe(Effect.map(asAnswer)), 404, "not_found")
      expectStatus(yield* sendText(service, "POST", paths.style, { token, body: styleBody }), 200, "the neutral path")
    }))
})

