/**
 * Content coding over real HTTP: br and gzip chosen by Accept-Encoding (its weights, `identity`,
 * `*`, q=0), the decoded body equal to the identity one, Vary on every JSON answer, small bodies
 * and the music proxy's NDJSON stream never compressed, and cached list pages served from their
 * stored compressed forms without compressing anything.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import * as zlib from "node:zlib"
import { negotiate } from "../../src/Http/Coding.ts"
import { compressionsSoFar } from "../support/Compressions.ts"
import { expectNdjson, fileForm, postForm } from "../support/Music.ts"
import { forAll } from "../support/Property.ts"
import { type AnswerAsSent, requestAsSent } from "../support/RawHttp.ts"
import { Service } from "../support/Service.ts"
import { mp4 } from "../support/Video.ts"

const raw = requestAsSent

const decoded = (answer: AnswerAsSent) => {
  switch (answer.headers["content-encoding"]) {
    case undefined:
      return answer.bytes
    case "br":
      return zlib.brotliDecompressSync(answer.bytes)
    case "gzip":
      return zlib.gunzipSync(answer.bytes)
    default:
      return expect.fail(`unexpected Content-Encoding ${answer.headers["content-encoding"]}`)
  }
}


/** What `header` gives each coding (RFC 9110, 12.5.3), written apart from the service's parser. */
const weightIn = (entries: ReadonlyArray<{ readonly coding: string; readonly q: number | undefined }>, coding: string) => {
  const named = entries.filter((e) => e.coding.toLowerCase() === coding || (coding === "gzip" && e.coding.toLowerCase() === "x-gzip"))
  const star = entries.filter((e) => e.coding === "*")
  const last = named.at(-1) ?? star.at(-1)
  if (last === undefined) return coding === "identity" ? 1 : 0
  return last.q ?? 1
}

const entry = fc.record({
  coding: fc.constantFrom("br", "gzip", "identity", "*", "deflate", "x-gzip", "BR", "compress"),
  q: fc.option(fc.constantFrom(0, 0.001, 0.3, 0.5, 0.999, 1), { nil: undefined })
})
const acceptEncoding = fc.array(entry, { maxLength: 5 }).map((entries) => ({
  entries,
  header: entries.map((e) => (e.q === undefined ? e.coding : `${e.coding};q=${e.q}`)).join(", ")
}))

const listPath = "/nodes?limit=60&sort=id"
const searchPath = "/nodes/search?limit=60"

layer(Service.layer((c) => ({ ...c, vendorMode: "simulated" })), { excludeTestServices: true })("compression", (it) => {
  it.effect("setup: a catalogue whose pages are several KiB", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.upsertPublishers([{ id: "acme", name: "Acme" }])
      yield* service.writes.insertNodes(Array.from({ length: 60 }, (_, i) => ({
        id: `node-${String(i).padStart(2, "0")}`,
        publisher_id: "acme",
        name: `Node ${i}`,
        description: `Node ${i} grades film, denoises frames and writes metadata for the host's image pipeline.`
      })))
    }))

  it.effect(
    "the chosen coding is the most acceptable one, and decodes to the identity body",
    () =>
      forAll(
        [acceptEncoding, fc.constantFrom(listPath, searchPath)],
        ([{ entries, header }, path]) =>
          Effect.gen(function*() {
            const service = yield* Service
            const identity = yield* raw(service, path)
            expect(identity.headers["content-encoding"]).toBeUndefined()
            const answer = yield* raw(service, path, { "accept-encoding": header })
            expect(answer.status).toBe(200)
            expect(decoded(answer).equals(identity.bytes)).toBe(true)
            expect(Number(answer.headers["content-length"])).toBe(answer.bytes.length)
            expect(answer.headers["vary"]).toMatch(/accept-encoding/i)
            const chosen = answer.headers["content-encoding"] ?? "identity"
            const weights = { br: weightIn(entries, "br"), gzip: weightIn(entries, "gzip"), identity: weightIn(entries, "identity") }
            const best = Math.max(weights.br, weights.gzip, weights.identity)
            if (best === 0) expect(chosen).toBe("identity")
            else expect(weights[chosen as keyof typeof weights]).toBe(best)
            if (weights.br === best && best > 0) expect(chosen).toBe("br")
            if (chosen !== "identity") expect(answer.headers["etag"] ?? "W/").toMatch(/^W\//)
          }),
        { numRuns: 60 }
      )
  )

  it("the parser ignores malformed entries and reads weights case-insensitively", () => {
    expect(negotiate(undefined)).toBe("identity")
    expect(negotiate("")).toBe("identity")
    expect(negotiate("gzip, br")).toBe("br")
    expect(negotiate("br;q=0.5, gzip")).toBe("gzip")
    expect(negotiate("br;q=2, gzip;q=0.1, identity;q=0")).toBe("gzip")
    expect(negotiate("br;q=abc")).toBe("identity")
    expect(negotiate("*;q=0")).toBe("identity")
    expect(negotiate("GZIP;Q=0.8, identity;q=0.5")).toBe("gzip")
    expect(negotiate("gzip;q=0.5, identity")).toBe("identity")
  })

  it.effect("small answers are sent as they are, with Vary", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const path of ["/nodes?limit=1&sort=id", "/nodes/search?limit=1", "/nodes/node-01"]) {
        const answer = yield* raw(service, path, { "accept-encoding": "br, gzip" })
        expect(answer.status, path).toBe(200)
        expect(answer.bytes.length, path).toBeLessThan(1024)
        expect(answer.headers["content-encoding"], path).toBeUndefined()
        expect(answer.headers["vary"], path).toMatch(/accept-encoding/i)
      }
    }))

  it.effect("a cached page is compressed once per coding, when first asked for: later hits compress nothing", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const path = "/nodes?limit=50&sort=name"
      const before = yield* compressionsSoFar
      const miss = yield* raw(service, path, { "accept-encoding": "gzip" })
      expect(miss.headers["x-cache"]).toBe("miss")
      expect(miss.headers["content-encoding"]).toBe("gzip")
      // the page was compressed in the one coding this answer asked for
      expect((yield* compressionsSoFar) - before).toBe(1)
      const brFirst = yield* raw(service, path, { "accept-encoding": "br" })
      expect(brFirst.headers["x-cache"]).toBe("hit")
      expect((yield* compressionsSoFar) - before).toBe(2)
      const filled = yield* compressionsSoFar
      for (const coding of ["br", "gzip", "br;q=0.1, gzip;q=0.9", "identity"]) {
        const hit = yield* raw(service, path, { "accept-encoding": coding })
        expect(hit.headers["x-cache"]).toBe("hit")
        expect(decoded(hit).equals(decoded(miss))).toBe(true)
        expect(hit.headers["vary"]).toMatch(/accept-encoding/i)
      }
      const br = yield* raw(service, path, { "accept-encoding": "br" })
      expect(br.headers["content-encoding"]).toBe("br")
      expect(Number(br.headers["content-length"])).toBe(br.bytes.length)
      expect((yield* compressionsSoFar) - filled).toBe(0)
      // the client's copy validates against the weak ETag of the compressed form
      const revalidated = yield* raw(service, path, { "accept-encoding": "br", "if-none-match": String(br.headers["etag"]) })
      expect(revalidated.status).toBe(304)
      expect(revalidated.headers["vary"]).toMatch(/accept-encoding/i)
    }))

  it.effect("/openapi.json is compressed once and then served from its kept form", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const identity = yield* raw(service, "/openapi.json")
      const first = yield* raw(service, "/openapi.json", { "accept-encoding": "br" })
      const after = yield* compressionsSoFar
      const second = yield* raw(service, "/openapi.json", { "accept-encoding": "br" })
      expect(second.headers["content-encoding"]).toBe("br")
      expect(second.bytes.equals(first.bytes)).toBe(true)
      expect(decoded(second).equals(identity.bytes)).toBe(true)
      expect((yield* compressionsSoFar) - after).toBe(0)
    }))

  it.effect("HEAD gets the identity answer's headers and no body", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const identity = yield* raw(service, searchPath)
      const head = yield* raw(service, searchPath, { "accept-encoding": "br" }, "HEAD")
      expect(head.status).toBe(200)
      expect(head.bytes.length).toBe(0)
      expect(head.headers["content-encoding"]).toBeUndefined()
      expect(Number(head.headers["content-length"])).toBe(identity.bytes.length)
      expect(head.headers["vary"]).toMatch(/accept-encoding/i)
    }))

  it.effect("HEAD on the GET routes answers as GET would, without a body", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const path of ["/nodes?limit=5", "/nodes/node-01", "/nodes/no-such-node", "/nodes/node-01/versions", "/publishers", "/openapi.json", "/docs", "/ready"]) {
        const [get, head] = [yield* raw(service, path), yield* raw(service, path, {}, "HEAD")]
        expect(head.status, path).toBe(get.status)
        expect(head.bytes.length, path).toBe(0)
        expect(head.headers["content-type"], path).toBe(get.headers["content-type"])
      }
    }))

  it.effect("the music proxy's NDJSON stream is never compressed (it leaves event by event)", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* Effect.promise(() => service.token({ sub: "sam" }))
      const answer = yield* postForm(service, token, fileForm(mp4(5), { prompt: "lofi beats" }), { "accept-encoding": "br, gzip" })
      expectNdjson(answer)
      expect(answer.text.length).toBeGreaterThan(1024)
      expect(answer.headers.get("content-encoding")).toBeNull()
    }))
})
