/**
 * POST /proxy/musicvendor/t2m/generate over real HTTP, as the host's music node calls it
 * (comfy_api_nodes/nodes_sonilo.py, SoniloTextToMusic: an aiohttp FormData of text fields, so
 * URL-encoded: `prompt`, and `duration` only when above 0; the NDJSON answer read by its
 * streaming function, which takes each stream's name from a `title` event): against the loopback
 * fake vendor (what it receives, its refusals mapped as on video to music, the relay) and the
 * simulated one (audio that a real parser reads). Bad fields are 400 naming them (properties).
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Option, Stream } from "effect"
import * as fc from "fast-check"
import { parseBuffer } from "music-metadata"
import { maxPromptChars } from "../../src/Domain/Media.ts"
import { clientFor } from "../support/Client.ts"
import { FakeMusicVendor } from "../support/FakeMusicVendor.ts"
import { decodeError, expectErrorBody, parseJson } from "../support/Http.ts"
import { asHostMusicNode, eventsOf, expectNdjson, postForm, serviceWithFakeVendor, type StreamAnswer, textToMusicPath } from "../support/Music.ts"
import { forAll } from "../support/Property.ts"
import { Service } from "../support/Service.ts"

const post = (token: string, body: FormData | URLSearchParams | string, headers: Record<string, string> = {}) =>
  Effect.flatMap(Service, (service) => postForm(service, token, body, headers, textToMusicPath))

const tokenOf = (sub: string) => Effect.flatMap(Service, (service) => Effect.promise(() => service.token({ sub })))

const expectFailure = (answer: StreamAnswer, status: number, code?: string) => {
  if (answer.status !== status) expect.fail(`expected ${status}, got ${answer.status}: ${answer.text.slice(0, 300)}`)
  const body = decodeError(parseJson(answer.text, `answer ${status}`))
  expectErrorBody(body, code)
  return body
}

/** A mono 16-bit PCM WAV file of `seconds` of a 441 Hz tone at 8 kHz. */
const wav = (seconds: number) => {
  const rate = 8000
  const samples = seconds * rate
  const file = Buffer.alloc(44 + 2 * samples)
  file.write("RIFF", 0, "ascii")
  file.writeUInt32LE(36 + 2 * samples, 4)
  file.write("WAVEfmt ", 8, "ascii")
  file.writeUInt32LE(16, 16)
  file.writeUInt16LE(1, 20)
  file.writeUInt16LE(1, 22)
  file.writeUInt32LE(rate, 24)
  file.writeUInt32LE(rate * 2, 28)
  file.writeUInt16LE(2, 32)
  file.writeUInt16LE(16, 34)
  file.write("data", 36, "ascii")
  file.writeUInt32LE(2 * samples, 40)
  for (let i = 0; i < samples; i++) file.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 441 * i) / rate)), 44 + 2 * i)
  return file
}

/** What the vendor streams for text to music: a `title` per stream (no `titles`), the audio in chunks, `complete`. */
const vendorLines = (audio: Buffer) => {
  const third = Math.ceil(audio.length / 3)
  const chunks = [0, 1, 2].map((i) => audio.subarray(i * third, (i + 1) * third))
  return [
    JSON.stringify({ type: "title", title: "Rain on a tin roof", display_tags: ["ambient"], copy_index: 0, prompt_index: 0, stream_index: 0 }),
    ...chunks.map((chunk, i) => JSON.stringify({ type: "audio_chunk", data: chunk.toString("base64"), stream_index: 0, chunk_index: i })),
    JSON.stringify({ type: "cost", cost: 0.1, currency: "USD" }),
    JSON.stringify({ type: "complete" })
  ]
}

/** The audio as music-metadata reads it. */
const parsed = (audio: Buffer) => Effect.promise(() => parseBuffer(audio, { mimeType: "audio/wav" }, { duration: true }))

layer(serviceWithFakeVendor(), { excludeTestServices: true })("text to music against a vendor", (it) => {
  it.effect("the node's form reaches the vendor's t2m with the key; the stream is relayed and its audio parses", () =>
    Effect.gen(function*() {
      const fake = yield* FakeMusicVendor
      fake.reset()
      const token = yield* tokenOf("tess")
      const audio = wav(2)
      fake.behave({ kind: "stream", lines: vendorLines(audio) })
      // nodes_sonilo.py: form.add_field("prompt", prompt); form.add_field("duration", str(duration)) when > 0
      const answer = yield* post(token, new URLSearchParams({ prompt: "rain on a tin roof, lofi", duration: "45" }))
      expectNdjson(answer)
      expect(fake.received().map((r) => [r.path, r.fields])).toEqual([["/t2m/generate", { prompt: "rain on a tin roof, lofi", duration: "45" }]])
      expect(fake.received()[0]!.headers.authorization).toBe(`Bearer ${fake.apiKey}`)
      expect(fake.received()[0]!.headers["content-type"]).toMatch(/^application\/x-www-form-urlencoded/)
      const node = asHostMusicNode(answer.lines)
      expect(node.progress[0]).toBe("Status: Generating\nTitle: Rain on a tin roof")
      expect(node.audio.equals(audio)).toBe(true)
      const meta = yield* parsed(node.audio)
      expect(meta.format.container).toBe("WAVE")
      expect(meta.format.duration).toBeCloseTo(2, 3)
    }))

  it.effect("duration 0 or absent is left to the model (not sent); JSON works too; other fields are ignored", () =>
    Effect.gen(function*() {
      const fake = yield* FakeMusicVendor
      fake.reset()
      fake.behave({ kind: "stream", lines: ['{"type":"complete"}'] })
      const token = yield* tokenOf("tess")
      expectNdjson(yield* post(token, new URLSearchParams({ prompt: "a march", duration: "0", seed: "42" })))
      expectNdjson(yield* post(token, JSON.stringify({ prompt: "a waltz", duration: 360 }), { "content-type": "application/json" }))
      expectNdjson(yield* post(token, new URLSearchParams({ prompt: "  a polka  " })))
      expect(fake.received().map((r) => r.fields)).toEqual([{ prompt: "a march" }, { prompt: "a waltz", duration: "360" }, { prompt: "  a polka  " }])
    }))

  it.effect("vendor refusals before the stream map as on video to music; a stream cut short ends with our error event", () =>
    Effect.gen(function*() {
      const fake = yield* FakeMusicVendor
      fake.reset()
      const token = yield* tokenOf("tess")
      const form = new URLSearchParams({ prompt: "drums" })
      const cases: Array<[string, Parameters<typeof fake.behave>[0], number, string, string?]> = [
        ["400", { kind: "status", status: 400, body: { message: "prompt rejected" } }, 400, "bad_request", "prompt rejected"],
        ["422", { kind: "status", status: 422, body: { detail: "duration too long" } }, 400, "bad_request", "duration too long"],
        ["401", { kind: "status", status: 401, body: { message: "bad key" } }, 502, "upstream_error"],
        ["403", { kind: "status", status: 403 }, 502, "upstream_error"],
        ["404", { kind: "status", status: 404, body: { message: "no such model" } }, 404, "not_found"],
        ["500", { kind: "status", status: 500 }, 502, "upstream_error"],
        ["reset", { kind: "reset" }, 502, "upstream_error"],
        ["hang", { kind: "hang" }, 504, "upstream_timeout"]
      ]
      for (const [what, behaviour, status, code, message] of cases) {
        fake.behave(behaviour)
        const e = expectFailure(yield* post(token, form), status, code)
        if (message !== undefined) expect(e.message, what).toBe(message)
        expect(e.message, what).not.toContain(fake.apiKey)
      }
      fake.behave({ kind: "status", status: 429, body: { message: "slow down" }, headers: { "retry-after": "17" } })
      const limited = yield* post(token, form)
      expectFailure(limited, 429, "rate_limited")
      expect(limited.headers.get("retry-after")).toBe("17")

      fake.behave({ kind: "stream", lines: ['{"type":"title","title":"Drums"}'] })
      const cut = yield* post(token, form)
      expectNdjson(cut)
      expect(eventsOf(cut)).toEqual([{ type: "title", title: "Drums" }, { type: "error", code: "stream_incomplete", message: expect.any(String) }])
      expect(() => asHostMusicNode(cut.lines)).toThrow("music vendor generation error (stream_incomplete): ")
    }))

  it.effect("a client that goes away mid-stream aborts the vendor request", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.reset()
      const token = yield* tokenOf("tess")
      fake.behave({ kind: "stream", lines: ['{"type":"title","title":"Held"}'], end: "hold" })
      yield* Effect.promise(async () => {
        const controller = new AbortController()
        const response = await service.fetch(textToMusicPath, {
          method: "POST",
          headers: { authorization: `Bearer ${token}` },
          body: new URLSearchParams({ prompt: "a long drone" }),
          signal: controller.signal
        })
        expect(response.status).toBe(200)
        const first = await response.body!.getReader().read()
        expect(new TextDecoder().decode(first.value)).toContain('"title"')
        controller.abort()
      })
      // the abort travels: client -> service -> vendor
      for (let i = 0; i < 100 && fake.aborted() === 0; i++) yield* Effect.sleep("50 millis")
      expect(fake.aborted()).toBe(1)
    }))

  it.effect("other content types are 415, no token 401; the vendor gets nothing", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeMusicVendor
      fake.reset()
      const token = yield* tokenOf("tess")
      const multipart = new FormData()
      multipart.append("prompt", "jazz")
      expectFailure(yield* post(token, multipart), 415, "unsupported_media_type")
      expectFailure(yield* post(token, "jazz", { "content-type": "application/octet-stream" }), 415, "unsupported_media_type")
      expectFailure(yield* postForm(service, undefined, new URLSearchParams({ prompt: "jazz" }), {}, textToMusicPath), 401, "unauthorized")
      expect(fake.arrived()).toBe(0)
    }))

  it.effect("a form with one field broken is 400 naming it; the vendor gets nothing", () =>
    forAll({
      prompt: fc.string({ minLength: 1, maxLength: 80 }).filter((s) => s.trim() !== ""),
      duration: fc.option(fc.integer({ min: 0, max: 360 }).map(String), { nil: undefined }),
      breakage: fc.oneof(
        fc.record({ field: fc.constant("prompt"), value: fc.constantFrom<unknown>(undefined, "", "   ", "\n\t", "x".repeat(maxPromptChars + 1)) }),
        fc.record({ field: fc.constant("duration"), value: fc.constantFrom<unknown>("-1", "361", "1.5", "abc", "0x10", "", " 30", "1e2", "9999999") })
      ),
      json: fc.boolean(),
      jsonOnly: fc.oneof(
        fc.constant(undefined),
        fc.record({ field: fc.constant("prompt"), value: fc.constantFrom<unknown>(5, null, ["a"], true) }),
        fc.record({ field: fc.constant("duration"), value: fc.constantFrom<unknown>(-1, 361, 1.5, true, null, [30]) })
      )
    }, ({ breakage: formBreakage, duration, json, jsonOnly, prompt }) =>
      Effect.gen(function*() {
        const fake = yield* FakeMusicVendor
        fake.reset()
        const token = yield* tokenOf("tess")
        // JSON can break a field in more ways than a form of strings can
        const breakage = json && jsonOnly !== undefined ? jsonOnly : formBreakage
        const fields: Record<string, unknown> = { prompt, duration: json && duration !== undefined ? Number(duration) : duration, [breakage.field]: breakage.value }
        const defined = Object.entries(fields).filter((entry) => entry[1] !== undefined)
        const body = json ? JSON.stringify(Object.fromEntries(defined)) : new URLSearchParams(defined.map(([k, v]): [string, string] => [k, String(v)]))
        const e = expectFailure(yield* post(token, body, json ? { "content-type": "application/json" } : {}), 400, "bad_request")
        expect(e.message).toContain(breakage.field)
        expect(fake.arrived()).toBe(0)
      }), { numRuns: 40 }))
})

layer(
  Service.layer((c) => ({ ...c, vendorMode: "live", musicVendor: { baseUrl: Option.none(), apiKey: Option.none() } })),
  { excludeTestServices: true }
)("text to music without a vendor", (it) => {
  it.effect("503 vendor_not_configured naming both settings", () =>
    Effect.gen(function*() {
      const token = yield* tokenOf("nina")
      const e = expectFailure(yield* post(token, new URLSearchParams({ prompt: "jazz" })), 503, "vendor_not_configured")
      expect(e.message).toContain("MUSICVENDOR_BASE_URL")
      expect(e.message).toContain("MUSICVENDOR_API_KEY")
    }))
})

layer(Service.layer((c) => ({ ...c, vendorMode: "simulated" })), { excludeTestServices: true })("text to music, simulated", (it) => {
  it.effect("read as the host's node reads it: a title per stream, and stream 0's chunks join into a WAV of the duration asked", () =>
    Effect.gen(function*() {
      const token = yield* tokenOf("sam")
      const answer = yield* post(token, new URLSearchParams({ prompt: "lofi beats", duration: "5" }))
      expectNdjson(answer)
      expect(answer.headers.get("x-vendor-mode")).toBe("simulated")
      const events = eventsOf(answer)
      expect(events.map((e) => e.type)).not.toContain("titles")
      expect(events.filter((e) => e.type === "title").map((e) => [e.title, e.stream_index])).toEqual([["lofi beats (take 1)", 0], ["lofi beats (take 2)", 1]])
      expect(events.at(-1)).toEqual({ type: "complete" })
      const node = asHostMusicNode(answer.lines)
      expect(node.progress).toContain("Status: Generating\nTitle: lofi beats (take 1)")
      const meta = yield* parsed(node.audio)
      expect(meta.format.container).toBe("WAVE")
      expect(meta.format.sampleRate).toBe(22_050)
      expect(meta.format.duration).toBeCloseTo(5, 3)

      // the model decides: the simulation makes 30 s
      const free = asHostMusicNode((yield* post(token, new URLSearchParams({ prompt: "rain" }))).lines)
      expect((yield* parsed(free.audio)).format.duration).toBeCloseTo(30, 3)
      // refusals are marked simulated too
      const refused = yield* post(token, new URLSearchParams({ prompt: " " }))
      expectFailure(refused, 400, "bad_request")
      expect(refused.headers.get("x-vendor-mode")).toBe("simulated")
    }))

  it.effect("through the typed client: the events typed, the bad prompt refused before anything is sent", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const client = yield* clientFor(service, { bearer: yield* tokenOf("sam") })
      const events = yield* Stream.runCollect(client.generateTextToMusic({ prompt: "sea shanty", duration: 3 }))
      expect(events[0]).toEqual({ type: "duration", duration_sec: 3 })
      expect(events.filter((e) => e.type === "title").map((e) => e.title)).toEqual(["sea shanty (take 1)", "sea shanty (take 2)"])
      const chunks = events.flatMap((e) => e.type === "audio_chunk" && e.stream_index === 0 ? [Buffer.from(e.data!, "base64")] : [])
      expect((yield* parsed(Buffer.concat(chunks))).format.duration).toBeCloseTo(3, 3)
      expect(events.at(-1)).toEqual({ type: "complete" })
      const refused = yield* Effect.result(Stream.runCollect(client.generateTextToMusic({ prompt: "  " })))
      expect(refused._tag).toBe("Failure")
    }))
})
