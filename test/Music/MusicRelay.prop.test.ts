/**
 * Property of the relay, end to end through the service: random event sequences from the fake
 * vendor (known types with random valid fields and extra fields, unknown types, `complete`
 * anywhere or nowhere) come out identical in meaning and order, unknown ones byte for byte,
 * followed by a final `error` event exactly when the vendor sent no `complete`.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "effect/FastCheck"
import { FakeMusicVendor } from "../support/FakeMusicVendor.ts"
import { eventsOf, expectNdjson, knownEventTypes, postForm, serviceWithFakeVendor } from "../support/Music.ts"
import { Service } from "../support/Service.ts"

const int = fc.integer({ min: 0, max: 1000 })
const number = fc.double({ noNaN: true, noDefaultInfinity: true })
const text = fc.string({ maxLength: 40 })

/** Extra fields the vendor may add to any event; kept by the relay. */
const extras = fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }).map((k) => `x_${k}`), fc.jsonValue({ maxDepth: 2 }), {
  maxKeys: 3
})

const titleFields = {
  title: text,
  display_tags: fc.array(text, { maxLength: 4 }),
  copy_index: int,
  prompt_index: int,
  stream_index: int
}

const known = fc.oneof(
  fc.record({ type: fc.constant("duration"), duration: number }, { requiredKeys: ["type"] }),
  fc.record({ type: fc.constant("title"), ...titleFields }, { requiredKeys: ["type"] }),
  fc.record({ type: fc.constant("titles"), titles: fc.array(fc.record(titleFields, { requiredKeys: [] }), { maxLength: 3 }) }, {
    requiredKeys: ["type"]
  }),
  fc.record({
    type: fc.constant("audio_chunk"),
    data: fc.base64String({ maxLength: 64 }),
    copy_index: int,
    prompt_index: int,
    stream_index: int,
    chunk_index: int
  }, { requiredKeys: ["type"] }),
  fc.record({ type: fc.constant("cost"), cost: number, currency: text }, { requiredKeys: ["type"] }),
  fc.record({ type: fc.constant("error"), error: text, message: text }, { requiredKeys: ["type"] })
).chain((event) => extras.map((more) => ({ ...more, ...event })))

const unknown = fc.record({
  type: fc.string({ minLength: 1, maxLength: 12 }).filter((t) => !knownEventTypes.has(t)),
  payload: fc.jsonValue({ maxDepth: 3 })
})

const complete = extras.map((more) => ({ ...more, type: "complete" }))

const event: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  { weight: 6, arbitrary: known },
  { weight: 3, arbitrary: unknown },
  { weight: 1, arbitrary: complete }
)

let token = ""

layer(serviceWithFakeVendor(), { excludeTestServices: true })("music relay, by property", (it) => {
  it.effect("mints a caller", () =>
    Effect.gen(function*() {
      const service = yield* Service
      token = yield* Effect.promise(() => service.token({ sub: "paul" }))
    }))

  it.effect.prop(
    "events come out as they went in, in order; a final error event iff there was no complete",
    { events: fc.array(event, { maxLength: 25 }) },
    ({ events }) =>
      Effect.gen(function*() {
        const service = yield* Service
        const fake = yield* FakeMusicVendor
        const lines = events.map((e) => JSON.stringify(e))
        fake.behave({ kind: "stream", lines })
        const answer = yield* postForm(service, token, new URLSearchParams({ video: "https://videos.example/v.mp4" }))
        expectNdjson(answer)
        const out = eventsOf(answer)
        const sent = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
        const completed = sent.some((e) => e.type === "complete")
        expect(out.slice(0, sent.length)).toEqual(sent)
        if (completed) {
          expect(out).toHaveLength(sent.length)
        } else {
          expect(out.slice(sent.length)).toEqual([{ type: "error", error: "stream_incomplete", message: expect.any(String) }])
        }
        // unknown types pass byte for byte
        const unknownLines = lines.filter((l) => !knownEventTypes.has((JSON.parse(l) as { type: string }).type))
        expect(answer.lines.filter((l) => unknownLines.includes(l))).toEqual(unknownLines)
      }),
    { timeout: 120_000, fastCheck: { numRuns: 40 } }
  )
})
