/**
 * Property of the relay, end to end through the service: random vendor streams of known events
 * (valid for our schemas, or of the same types with fields of any other shape, both with extra
 * fields), unknown types, `complete` and the vendor's `error` anywhere or nowhere, come out equal
 * line for line in meaning and order; a line our schemas do not describe comes out byte for byte;
 * and one final `error` of ours follows exactly when the vendor sent neither `complete` nor `error`.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as fc from "fast-check"
import { MusicEvent } from "../../src/Domain/MusicEvents.ts"
import { FakeMusicVendor } from "../support/FakeMusicVendor.ts"
import { expectNdjson, knownEventTypes, postForm, serviceWithFakeVendor } from "../support/Music.ts"
import { Service } from "../support/Service.ts"
import { forAll } from "../support/Property.ts"

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

/** Events our schemas describe, in the vendor's shapes (`titles` as strings) and ours. */
const valid = fc.oneof(
  fc.record({ type: fc.constant("duration"), duration_sec: number }, { requiredKeys: ["type"] }),
  fc.record({ type: fc.constant("title"), ...titleFields }, { requiredKeys: ["type"] }),
  fc.record({
    type: fc.constant("titles"),
    titles: fc.array(fc.oneof(text, fc.record(titleFields, { requiredKeys: [] })), { maxLength: 3 })
  }, { requiredKeys: ["type"] }),
  fc.record({
    type: fc.constant("audio_chunk"),
    data: fc.base64String({ maxLength: 64 }),
    copy_index: int,
    prompt_index: int,
    stream_index: int,
    chunk_index: int
  }, { requiredKeys: ["type"] }),
  fc.record({ type: fc.constant("cost"), cost: number, currency: text }, { requiredKeys: ["type"] }),
  fc.record({ type: fc.constant("error"), code: text, message: text }, { requiredKeys: ["type"] })
)

/** Known types whose typed fields hold anything at all: mostly not what our schemas say. */
const typedNames = ["duration_sec", "title", "titles", "display_tags", "data", "stream_index", "cost", "code", "message"]
const otherwise = fc.record({
  type: fc.constantFrom(...knownEventTypes),
  fields: fc.dictionary(fc.constantFrom(...typedNames), fc.jsonValue({ maxDepth: 2 }), { minKeys: 1, maxKeys: 3 })
}).map(({ fields, type }) => ({ ...fields, type }))

const unknown = fc.record({
  type: fc.string({ minLength: 1, maxLength: 12 }).filter((t) => !knownEventTypes.has(t)),
  payload: fc.jsonValue({ maxDepth: 3 })
})

const complete = extras.map((more) => ({ ...more, type: "complete" }))

const event: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  { weight: 5, arbitrary: fc.oneof(valid, otherwise).chain((e) => extras.map((more) => ({ ...more, ...e }))) },
  { weight: 3, arbitrary: unknown },
  { weight: 1, arbitrary: complete }
)

/** A vendor line: compact JSON, or with a space the relay's re-encoding would not keep. */
const line = fc.tuple(event, fc.boolean()).map(([e, spaced]) => spaced ? JSON.stringify(e).replace(/^\{/, "{ ") : JSON.stringify(e))

const described = Schema.is(MusicEvent)
const endsGeneration = (e: Record<string, unknown>) => e.type === "complete" || e.type === "error"

let token = ""

layer(serviceWithFakeVendor(), { excludeTestServices: true })("music relay, by property", (it) => {
  it.effect("mints a caller", () =>
    Effect.gen(function*() {
      const service = yield* Service
      token = yield* Effect.promise(() => service.token({ sub: "paul" }))
    }))

  it.effect(
    "each vendor line comes out equal in meaning, in order; one error of ours iff the vendor sent no complete or error",
    () =>
      forAll(
        { lines: fc.array(line, { maxLength: 25 }) },
        ({ lines }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const fake = yield* FakeMusicVendor
            fake.behave({ kind: "stream", lines })
            const answer = yield* postForm(service, token, new URLSearchParams({ video: "https://videos.example/v.mp4" }))
            expectNdjson(answer)
            const out = answer.lines.filter((l) => l.trim() !== "")
            const sent = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
            expect(out.slice(0, sent.length).map((l) => JSON.parse(l))).toEqual(sent)
            // what our schemas do not describe is the vendor's own line, byte for byte
            sent.forEach((e, i) => {
              if (!described(e)) expect(out[i]).toBe(lines[i])
            })
            if (sent.some(endsGeneration)) {
              expect(out).toHaveLength(sent.length)
            } else {
              expect(out.slice(sent.length).map((l) => JSON.parse(l))).toEqual([
                { type: "error", code: "stream_incomplete", message: expect.any(String) }
              ])
            }
          }),
        { numRuns: 40 }
      ),
    { timeout: 120_000 }
  )
})
