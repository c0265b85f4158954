/**
 * Without a configured vendor the endpoint says which settings are missing (503), before reading
 * an upload; with VENDOR_MODE=simulated it answers a built-in stream marked as simulated.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { decodeError, expectErrorBody, parseJson } from "../support/Http.ts"
import { eventsOf, expectNdjson, fileForm, leftoverTempFiles, postForm } from "../support/Music.ts"
import { Service } from "../support/Service.ts"
import { mp4 } from "../support/Video.ts"

layer(
  Service.layer((c) => ({ ...c, vendorMode: "live", musicVendor: { baseUrl: Option.none(), apiKey: Option.none() } })),
  { excludeTestServices: true }
)("no music vendor configured", (it) => {
  it.effect("503 vendor_not_configured naming both settings, for a URL and for an upload", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* Effect.promise(() => service.token({ sub: "nina" }))
      for (const body of [new URLSearchParams({ video: "https://a.example/v" }), fileForm(mp4(10))]) {
        const answer = yield* postForm(service, token, body)
        expect(answer.status, answer.text).toBe(503)
        const e = decodeError(parseJson(answer.text, "503"))
        expectErrorBody(e, "vendor_not_configured")
        expect(e.message).toContain("MUSICVENDOR_BASE_URL")
        expect(e.message).toContain("MUSICVENDOR_API_KEY")
        expect(answer.headers.get("x-vendor-mode")).toBeNull()
      }
      expect(yield* leftoverTempFiles(service)).toEqual([])
    }))
})

layer(Service.layer((c) => ({ ...c, vendorMode: "simulated" })), { excludeTestServices: true })("simulated music vendor", (it) => {
  it.effect("answers duration_sec, titles, audio chunks and complete, marked x-vendor-mode: simulated", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* Effect.promise(() => service.token({ sub: "sam" }))
      const answer = yield* postForm(service, token, fileForm(mp4(5), { prompt: "lofi beats" }))
      expectNdjson(answer)
      expect(answer.headers.get("x-vendor-mode")).toBe("simulated")
      const events = eventsOf(answer)
      const types = events.map((e) => e.type)
      expect(events[0]).toEqual({ type: "duration", duration_sec: 5 })
      expect(events[1]).toEqual({ type: "titles", titles: ["lofi beats (take 1)", "lofi beats (take 2)"] })
      expect(types.filter((t) => t === "title")).toHaveLength(2)
      expect(types.filter((t) => t === "audio_chunk").length).toBeGreaterThanOrEqual(3)
      expect(types.at(-1)).toBe("complete")
      expect(events.find((e) => e.type === "title")).toMatchObject({
        title: expect.stringContaining("lofi beats"),
        display_tags: expect.any(Array),
        copy_index: 0,
        prompt_index: 0,
        stream_index: 0
      })
      for (const chunk of events.filter((e) => e.type === "audio_chunk")) {
        expect(Buffer.from(chunk.data as string, "base64").length).toBeGreaterThan(0)
      }
      const refused = yield* postForm(service, token, new URLSearchParams({ prompt: "no video" }))
      expect(refused.status).toBe(400)
      expect(refused.headers.get("x-vendor-mode")).toBe("simulated")
    }))
})
