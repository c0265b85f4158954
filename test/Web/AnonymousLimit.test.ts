/**
 * The anonymous reads' limit over real HTTP (issue 30, item 6), from distinct loopback addresses:
 * the RateLimit fields on anonymous answers, 429 `rate_limited` with `Retry-After` past the
 * limit, each address counted alone, verified credentials not counted while a made-up one is,
 * probes and writes left alone, and a window that ends letting the address read again.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { RateLimited } from "../../src/Domain/ApiErrors.ts"
import { clientFor } from "../support/Client.ts"
import { type AddressedAnswer, asAnswer, fromAddress, tally } from "../support/FromAddress.ts"
import { expectError } from "../support/Http.ts"
import { Service } from "../support/Service.ts"

const limit = 3
const policy = `"anonymous";q=${limit};qu="requests";w=60`

/** What `RateLimit` says is left (`r`) and how long until there is room (`t`). */
const left = (a: AddressedAnswer) => {
  const match = /^"anonymous";r=(\d+);t=(\d+)$/.exec(String(a.headers["ratelimit"]))
  expect(match, `RateLimit: ${a.headers["ratelimit"]}`).not.toBeNull()
  return { r: Number(match![1]), t: Number(match![2]) }
}

const read = (from: string, path = "/nodes", headers?: Record<string, string>) =>
  Effect.flatMap(Service, (service) => fromAddress(service, from, "GET", path, headers === undefined ? {} : { headers }))

const expectLimited = (a: AddressedAnswer, windowSeconds: number) => {
  expectError(asAnswer(a), 429, "rate_limited")
  const retryAfter = Number(a.headers["retry-after"])
  expect(Number.isInteger(retryAfter)).toBe(true)
  expect(retryAfter).toBeGreaterThanOrEqual(1)
  expect(retryAfter).toBeLessThanOrEqual(windowSeconds)
  expect(a.headers["ratelimit-policy"]).toBeDefined()
  expect(left(a).r).toBe(0)
}

layer(Service.layer((c) => ({ ...c, corsOrigins: "*", rateLimit: { anonymousPerWindow: limit, windowMillis: 60_000 } })), {
  excludeTestServices: true
})("anonymous reads per client address", (it) => {
  it.effect("anonymous answers carry RateLimit-Policy and RateLimit; past the limit GET and HEAD are 429 with Retry-After", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const answers = [yield* read("127.0.1.1"), yield* read("127.0.1.1", "/nodes/unknown-node"), yield* read("127.0.1.1")]
      expect(answers.map((a) => a.status)).toEqual([200, 404, 200])
      for (const a of answers) expect(a.headers["ratelimit-policy"]).toBe(policy)
      expect(answers.map((a) => left(a).r)).toEqual([2, 1, 0])
      for (const a of answers) expect(left(a).t).toBeLessThanOrEqual(60)
      expectLimited(yield* read("127.0.1.1"), 60)
      const head = yield* fromAddress(service, "127.0.1.1", "HEAD", "/nodes")
      expect(head.status).toBe(429)
      expect(head.headers["retry-after"]).toBeDefined()
    }))

  it.effect("another address has its own count; X-Forwarded-For does not move the address without TRUST_PROXY", () =>
    Effect.gen(function*() {
      for (let i = 0; i < limit; i++) expect((yield* read("127.0.1.2")).status).toBe(200)
      expectLimited(yield* read("127.0.1.2", "/nodes", { "x-forwarded-for": "10.1.2.3" }), 60)
      const other = yield* read("127.0.1.3")
      expect(other.status).toBe(200)
      expect(left(other).r).toBe(limit - 1)
    }))

  it.effect("a verified credential is not counted and gets no RateLimit fields; the address's anonymous count is untouched", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwt = yield* Effect.promise(() => service.token({ sub: "limited-reader" }))
      const answers = yield* Effect.forEach(
        Array.from({ length: limit * 3 }),
        () => read("127.0.1.4", "/users", { authorization: `Bearer ${jwt}` })
      )
      expect(tally(answers)).toEqual({ 200: limit * 3 })
      for (const a of answers) expect(a.headers["ratelimit"]).toBeUndefined()
      expect(left(yield* read("127.0.1.4")).r).toBe(limit - 1)
    }))

  it.effect("a credential nothing verified (a made-up bearer or API key on a public read) counts as anonymous", () =>
    Effect.gen(function*() {
      const answers = [
        yield* read("127.0.1.5", "/nodes", { authorization: "Bearer made-up" }),
        yield* read("127.0.1.5", "/nodes", { "x-api-key": "made-up" }),
        yield* read("127.0.1.5", "/nodes", { authorization: "Bearer made-up" })
      ]
      // the list verifies a bearer it is given (401 for this one); the API key it does not look at
      expect(answers.map((a) => [a.status, left(a).r])).toEqual([[401, 2], [200, 1], [401, 0]])
      expectLimited(yield* read("127.0.1.5", "/nodes", { authorization: "Bearer made-up" }), 60)
      expectLimited(yield* read("127.0.1.5"), 60)
    }))

  it.effect("probes and writes are not counted, even from an address past the limit", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (let i = 0; i <= limit; i++) yield* read("127.0.1.6")
      expect((yield* read("127.0.1.6")).status).toBe(429)
      for (const path of ["/health", "/ready"]) {
        const probe = yield* read("127.0.1.6", path)
        expect(probe.status).toBe(200)
        expect(probe.headers["ratelimit"]).toBeUndefined()
      }
      const write = yield* fromAddress(service, "127.0.1.6", "POST", "/publishers", { body: {} })
      expect(write.status).not.toBe(429)
      expect(write.headers["ratelimit"]).toBeUndefined()
    }))

  it.effect("the typed client fails past the limit with RateLimited and its wait, on an endpoint that declares no 429", () =>
    Effect.gen(function*() {
      const client = yield* clientFor(yield* Service)
      for (let i = 0; i < limit; i++) yield* client.api.catalog.listAllNodes({ query: {} })
      const failed = yield* Effect.flip(client.api.catalog.listAllNodes({ query: {} }))
      expect(failed).toBeInstanceOf(RateLimited)
      expect((failed as RateLimited).retryAfter).toBeGreaterThanOrEqual(1)
      expect((failed as RateLimited).retryAfter).toBeLessThanOrEqual(60)
    }))

  it.effect("browsers may read the fields: CORS exposes them", () =>
    Effect.gen(function*() {
      const a = yield* read("127.0.1.7", "/nodes", { origin: "https://example.org" })
      const exposed = String(a.headers["access-control-expose-headers"]).split(", ")
      expect(exposed).toEqual(expect.arrayContaining(["RateLimit-Policy", "RateLimit", "Retry-After"]))
    }))
})

layer(Service.layer((c) => ({ ...c, rateLimit: { anonymousPerWindow: 2, windowMillis: 1_000 } })), {
  excludeTestServices: true
})("the window ends", (it) => {
  it.effect("after the window the address reads again, with a fresh count", () =>
    Effect.gen(function*() {
      const answers = [yield* read("127.0.1.8"), yield* read("127.0.1.8"), yield* read("127.0.1.8")]
      expect(answers.map((a) => a.status)).toEqual([200, 200, 429])
      expect(Number(answers[2]!.headers["retry-after"])).toBe(1)
      yield* Effect.sleep("1100 millis")
      const again = yield* read("127.0.1.8")
      expect(again.status).toBe(200)
      expect(left(again).r).toBe(1)
    }))
})

layer(Service.layer((c) => ({ ...c, rateLimit: { anonymousPerWindow: 0, windowMillis: 60_000 } })), {
  excludeTestServices: true
})("RATE_LIMIT_ANONYMOUS_PER_MINUTE=0", (it) => {
  it.effect("turns the limit off: no fields, no 429", () =>
    Effect.gen(function*() {
      const answers = yield* Effect.forEach(Array.from({ length: 5 }), () => read("127.0.1.9"))
      expect(tally(answers)).toEqual({ 200: 5 })
      for (const a of answers) expect(a.headers["ratelimit-policy"]).toBeUndefined()
    }))
})
