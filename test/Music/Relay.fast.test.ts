/**
 * The relay's byte path (src/Music/Events.ts), without a service: the compact-line scanner
 * accepts only lines that JSON would print unchanged, and the relay gives the same lines however
 * the vendor's body is cut into pieces. The service-level properties are MusicRelay.prop.test.ts.
 */
import { expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as fc from "fast-check"
import { relayBytes, relayLine, scanCompact } from "../../src/Music/Events.ts"
import { forAll, forAllSync } from "../support/Property.ts"

const bytes = (line: string) => new TextEncoder().encode(line)
const scan = (line: string) => {
  const b = bytes(line)
  return scanCompact(b, 0, b.length)
}

const key = fc.string({ minLength: 0, maxLength: 8 })
const flatValue = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.jsonValue({ maxDepth: 1 })
)
const typeName = fc.oneof(fc.constantFrom("audio_chunk", "complete", "error", "duration", "errors", "Complete"), fc.string({ maxLength: 10 }))

/** Objects with a `type`, flat or not, keys of any kind: what a vendor might send. */
const eventObject = fc.tuple(fc.dictionary(key, flatValue, { maxKeys: 6 }), fc.oneof(typeName, flatValue), fc.nat(7))
  .map(([fields, type, at]) => {
    const entries = Object.entries(fields)
    entries.splice(at % (entries.length + 1), 0, ["type", type])
    return Object.fromEntries(entries)
  })

/**
 * A line written by hand around a long string of mostly base64 bytes with, now and then, a raw
 * byte the scan must stop at (a quote, a backslash, a control, DEL, non-ASCII), at any offset:
 * the scan passes plain bytes four at a time.
 */
const rawStringLine = fc.tuple(
  fc.string({ unit: fc.oneof({ weight: 30, arbitrary: fc.constantFrom("A", "z", "0", "+", "/", "=") }, { weight: 1, arbitrary: fc.constantFrom('"', "\\", "\u0001", "\t", "\u007f", "\u0080", "é", " ") }), maxLength: 90 }),
  fc.constantFrom("", ',"chunk_index":3', '"', ',"x":"y"')
).map(([raw, rest]) => `{"type":"audio_chunk","data":"${raw}"${rest}}`)

/** A line as a vendor might write it: compact, spaced, escaped, or not JSON at all. */
const vendorLine = fc.oneof(
  rawStringLine,
  eventObject.map((e) => JSON.stringify(e)),
  eventObject.map((e) => JSON.stringify(e, null, 1).replace(/\n/g, "")),
  fc.json({ maxDepth: 2 }),
  fc.string({ maxLength: 30 }).filter((s) => !s.includes("\n")),
  fc.constantFrom("", "  ", '{"type":"x","n":1.0}', '{"type":"x","n":-0}', '{"type":"x","n":01}', '{"type":"x","a":1,"a":2}',
    '{"type":"x","1":2,"b":3}', '{"__proto__":1,"type":"x"}', '{"type":"x","s":"\\u0041"}', '{"type":"x","s":"é"}', '{"type":5}',
    '{"type":"complete"} ', '{"type":"complete","x":{}}', '{"type":"x","n":1234567890123456}')
)

it("a line the scanner calls compact is what JSON prints it as, an event with a string type, ending iff complete or error", () =>
  forAllSync([vendorLine], ([line]) => {
    const kind = scan(line)
    if (kind === 0) return
    const parsed = JSON.parse(line) as { type: unknown }
    expect(JSON.stringify(parsed)).toBe(line)
    expect(typeof parsed.type).toBe("string")
    expect(kind === 2).toBe(parsed.type === "complete" || parsed.type === "error")
  }, { numRuns: 3000 }))

it("the vendor's compact flat events, audio chunks above all, take the fast path", () => {
  const audio = fc.record({
    type: fc.constant("audio_chunk"),
    data: fc.base64String({ maxLength: 200 }),
    copy_index: fc.nat(),
    prompt_index: fc.nat(),
    stream_index: fc.nat(),
    chunk_index: fc.nat()
  }, { requiredKeys: ["type"] })
  forAllSync([audio], ([event]) => expect(scan(JSON.stringify(event))).toBe(1))
  expect(scan('{"type":"complete"}')).toBe(2)
  expect(scan('{"type":"error","code":"GENERATION_FAILED","message":"The model gave up"}')).toBe(2)
  expect(scan('{"type":"title","title":"Rain","display_tags":["a"]}')).toBe(0)
  expect(scan('{ "type": "duration",  "duration_sec": 12.5 }')).toBe(0)
})

/** What the relay makes of one line: a compact one as it came, any other as `relayLine` says. */
const expected = (line: string) => {
  const content = line.endsWith("\r") ? line.slice(0, -1) : line
  return content !== "" && scan(content) !== 0 ? content : relayLine(content).line
}

it.effect("the relay's lines do not depend on how the vendor's body is cut into pieces", () =>
  forAll(
    { lines: fc.array(fc.tuple(vendorLine, fc.boolean()), { maxLength: 20 }), cuts: fc.array(fc.nat(), { maxLength: 12 }), newlineAtEnd: fc.boolean() },
    ({ cuts, lines, newlineAtEnd }) =>
      Effect.gen(function*() {
        const text = lines.map(([l, cr]) => `${l}${cr ? "\r" : ""}`).join("\n") + (newlineAtEnd && lines.length > 0 ? "\n" : "")
        const body = bytes(text)
        const at = [...new Set(cuts.map((c) => c % (body.length + 1)))].sort((a, b) => a - b)
        const pieces = [0, ...at].map((from, i) => body.subarray(from, [...at, body.length][i]))
        const out = yield* Stream.runCollect(relayBytes(Stream.fromIterable(pieces), () => Effect.succeed({ code: "c", message: "m" })))
        const relayed = new TextDecoder().decode(Buffer.concat(out)).split("\n")
        expect(relayed.pop()).toBe("")
        const sent = lines.map(([l]) => expected(l)).filter((l): l is string => l !== undefined)
        expect(relayed.slice(0, sent.length)).toEqual(sent)
        const ended = lines.some(([l]) => relayLine(l).ended)
        expect(relayed.length - sent.length).toBe(ended ? 0 : 1)
      }),
    { numRuns: 500 }
  ))
