/**
 * Failed authentications per client address (issue 12, finding 9; issue 22, item 2), over real
 * HTTP with concurrent clients from distinct loopback addresses: every credential is verified, one
 * that verifies (a personal access token, a bearer JWT, an admin's JWT, an API key) always
 * proceeds, and past AUTH_FAILURE_LIMIT in a window a wrong one is answered 429 with Retry-After
 * instead of 401; a wrong personal access token writes nothing.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import pg from "pg"
import { query } from "./support/Db.ts"
import { type AddressedAnswer, asAnswer, fromAddress, publishFrom, tally } from "./support/FromAddress.ts"
import { expectError } from "./support/Http.ts"
import { Service } from "./support/Service.ts"
import { makePublisher, type Publisher } from "./Publishing/Flow.ts"

const wrongPat = (i: number) => `rgpat_${String(i).padStart(43, "x")}`

/** Every 429 is `rate_limited` with a Retry-After of whole seconds within the window. */
const expectRateLimited = (answers: ReadonlyArray<AddressedAnswer>, windowSeconds: number) => {
  for (const a of answers.filter((a) => a.status === 429)) {
    expectError(asAnswer(a), 429, "rate_limited")
    const retryAfter = Number(a.headers["retry-after"])
    expect(Number.isInteger(retryAfter)).toBe(true)
    expect(retryAfter).toBeGreaterThanOrEqual(0)
    expect(retryAfter).toBeLessThanOrEqual(windowSeconds)
  }
}

const limit = 5
const windowSeconds = 60

layer(Service.layer((c) => ({ ...c, auth: { ...c.auth, failureLimit: limit, failureWindowMillis: windowSeconds * 1000 } })), {
  excludeTestServices: true
})("failed authentications per client address", (it) => {
  let acme: Publisher

  it.effect("setup: a publisher with a token", () =>
    Effect.gen(function*() {
      acme = yield* makePublisher(yield* Service, "acme")
    }))

  it.effect("20 concurrent wrong tokens in a publish: the limit's worth are 401, the rest 429; from that address the right PAT, the owner's JWT and an admin's JWT still succeed", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const answers = yield* Effect.all(
        Array.from({ length: 20 }, (_, i) => publishFrom(service, "127.0.0.2", "acme", "guessed", "1.0.0", wrongPat(i))),
        { concurrency: "unbounded" }
      )
      expect(tally(answers)).toEqual({ 401: limit, 429: 20 - limit })
      for (const a of answers.filter((a) => a.status === 401)) expectError(asAnswer(a), 401, "invalid_token")
      expectRateLimited(answers, windowSeconds)
      // a stranger's flood locks nobody out: the right token from the same address publishes
      expect((yield* publishFrom(service, "127.0.0.2", "acme", "guessed", "1.0.0", acme.pat)).status).toBe(201)
      const owner = yield* fromAddress(service, "127.0.0.2", "GET", "/publishers/acme/tokens", {
        headers: { authorization: `Bearer ${acme.ownerJwt}` }
      })
      expect(owner.status).toBe(200)
      const adminJwt = yield* Effect.promise(() => service.token({ sub: "site-admin-behind-the-nat", admin: true }))
      const admin = yield* fromAddress(service, "127.0.0.2", "GET", "/publishers/unclaimed/nodes?include_banned=true", {
        headers: { authorization: `Bearer ${adminJwt}` }
      })
      expect(admin.status).toBe(200)
      // and the successes unlocked nothing: wrong credentials of either kind are still 429
      const again = [
        yield* publishFrom(service, "127.0.0.2", "acme", "guessed", "1.0.1", wrongPat(99)),
        yield* fromAddress(service, "127.0.0.2", "GET", "/publishers/acme/tokens", { headers: { authorization: "Bearer not.a.jwt" } })
      ]
      expect(tally(again)).toEqual({ 429: 2 })
      expectRateLimited(again, windowSeconds)
      // X-Forwarded-For is the client's to write: without TRUST_PROXY it does not move the address
      const forged = yield* fromAddress(service, "127.0.0.2", "POST", "/publishers/acme/nodes/guessed/versions", {
        headers: { "x-forwarded-for": "10.9.9.9" },
        body: { personal_access_token: wrongPat(98), node: { name: "guessed" }, node_version: { version: "1.0.1" } }
      })
      expectError(asAnswer(forged), 429, "rate_limited")
      // another address keeps its own count
      expectError(asAnswer(yield* publishFrom(service, "127.0.0.3", "acme", "guessed", "1.0.1", wrongPat(97))), 401, "invalid_token")
    }))

  it.effect("wrong bearer tokens and API keys count alike; a valid JWT and a valid API key from the flooded address proceed", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const bearer = yield* Effect.all(
        Array.from({ length: 12 }, () =>
          fromAddress(service, "127.0.0.4", "GET", "/publishers/acme/tokens", { headers: { authorization: "Bearer not.a.jwt" } })),
        { concurrency: "unbounded" }
      )
      expect(tally(bearer)).toEqual({ 401: limit, 429: 12 - limit })
      expectRateLimited(bearer, windowSeconds)
      const auth = { authorization: `Bearer ${acme.ownerJwt}` }
      expect((yield* fromAddress(service, "127.0.0.4", "GET", "/publishers/acme/tokens", { headers: auth })).status).toBe(200)

      // the host's API nodes send X-API-KEY (CONTRACT.md, user API keys)
      const storage = (key: string) =>
        fromAddress(service, "127.0.0.6", "POST", "/customers/storage", {
          headers: { "x-api-key": key },
          body: { file_name: "a.png", content_type: "image/png" }
        })
      const keys = yield* Effect.all(Array.from({ length: 8 }, (_, i) => storage(`rgak_${String(i).padStart(43, "y")}`)), {
        concurrency: "unbounded"
      })
      expect(tally(keys)).toEqual({ 401: limit, 429: 8 - limit })
      expectRateLimited(keys, windowSeconds)
      const created = yield* fromAddress(service, "127.0.0.5", "POST", "/users/api-keys", { headers: auth, body: { name: "host" } })
      expect(created.status).toBe(201)
      const key = (created.body as { api_key: { plaintext_key: string } }).api_key.plaintext_key
      expect((yield* storage(key)).status).toBe(200)
      expectError(asAnswer(yield* storage(`rgak_${"z".repeat(43)}`)), 429, "rate_limited")
    }))

  it.effect("successful authentications are not counted", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const auth = { authorization: `Bearer ${acme.ownerJwt}` }
      const good = yield* Effect.all(
        Array.from({ length: 3 * limit }, () => fromAddress(service, "127.0.0.7", "GET", "/publishers/acme/tokens", { headers: auth })),
        { concurrency: 4 }
      )
      expect(tally(good)).toEqual({ 200: 3 * limit })
      const wrong = yield* Effect.all(
        Array.from({ length: limit + 1 }, () =>
          fromAddress(service, "127.0.0.7", "GET", "/publishers/acme/tokens", { headers: { authorization: "Bearer not.a.jwt" } })),
        { concurrency: 1 }
      )
      expect(wrong.map((a) => a.status)).toEqual([...Array(limit).fill(401), 429])
    }))

  it.effect("a wrong personal access token writes nothing: it is refused while the table is locked against writers", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const before = yield* query<{ last_used_at: Date | null; xmin: string }>(service, "SELECT last_used_at, xmin::text FROM personal_access_tokens")
      const locker = new pg.Client({ connectionString: service.databaseUrl })
      yield* Effect.promise(async () => {
        await locker.connect()
        await locker.query("BEGIN")
        // SHARE conflicts with the ROW EXCLUSIVE lock of any UPDATE, not with a SELECT's
        await locker.query("LOCK TABLE personal_access_tokens IN SHARE MODE")
      })
      const wrong = yield* Effect.all(
        Array.from({ length: 3 }, (_, i) => publishFrom(service, "127.0.0.8", "acme", "locked", "1.0.0", wrongPat(100 + i))),
        { concurrency: "unbounded" }
      ).pipe(Effect.timeout("10 seconds"), Effect.ensuring(Effect.promise(() => locker.query("COMMIT").then(() => locker.end()))))
      for (const a of wrong) expectError(asAnswer(a), 401, "invalid_token")
      const after = yield* query<{ last_used_at: Date | null; xmin: string }>(service, "SELECT last_used_at, xmin::text FROM personal_access_tokens")
      expect(after).toEqual(before)
    }))
})

layer(Service.layer((c) => ({ ...c, auth: { ...c.auth, failureLimit: 20, failureWindowMillis: 60_000 } })), {
  excludeTestServices: true
})("the default limit, 20 a minute", (it) => {
  it.effect("1,000 wrong personal access tokens from one address: all but the first 20 are 429; the right one still publishes", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const acme = yield* makePublisher(service, "acme")
      const answers = yield* Effect.all(
        Array.from({ length: 1_000 }, (_, i) => publishFrom(service, "127.0.0.10", "acme", "guessed", "1.0.0", wrongPat(1_000 + i))),
        { concurrency: 100 }
      )
      expect(tally(answers)).toEqual({ 401: 20, 429: 980 })
      expectRateLimited(answers, 60)
      expect((yield* publishFrom(service, "127.0.0.10", "acme", "guessed", "1.0.0", acme.pat)).status).toBe(201)
    }))
})

layer(Service.layer((c) => ({ ...c, auth: { ...c.auth, failureLimit: 3, failureWindowMillis: 1_000 } })), {
  excludeTestServices: true
})("the failure window", (it) => {
  it.effect("once the window has passed, a wrong credential from a flooded address is 401 again", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const wrong = () => fromAddress(service, "127.0.0.9", "GET", "/publishers/acme/tokens", { headers: { authorization: "Bearer not.a.jwt" } })
      let answer = yield* wrong()
      for (let i = 0; i < 10 && answer.status !== 429; i++) answer = yield* wrong()
      expectError(asAnswer(answer), 429, "rate_limited")
      const retryAfter = Number(answer.headers["retry-after"])
      expect(retryAfter).toBeLessThanOrEqual(1)
      yield* Effect.sleep(`${retryAfter * 1000 + 200} millis`)
      expectError(asAnswer(yield* wrong()), 401, "unauthorized")
    }))
})

layer(Service.layer((c) => ({ ...c, trustProxy: true, auth: { ...c.auth, failureLimit: 2, failureWindowMillis: 60_000 } })), {
  excludeTestServices: true
})("behind a trusted proxy (TRUST_PROXY=true)", (it) => {
  it.effect("the client is the last X-Forwarded-For entry, the one the proxy appended", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const wrong = (forwardedFor: string) =>
        fromAddress(service, "127.0.0.1", "GET", "/publishers/acme/tokens", {
          headers: { authorization: "Bearer not.a.jwt", "x-forwarded-for": forwardedFor }
        })
      const first = [yield* wrong("1.1.1.1, 10.0.0.1"), yield* wrong("2.2.2.2, 10.0.0.1"), yield* wrong("3.3.3.3, 10.0.0.1")]
      expect(first.map((a) => a.status)).toEqual([401, 401, 429])
      // another client behind the same proxy is not held back
      expectError(asAnswer(yield* wrong("10.0.0.1, 10.0.0.2")), 401, "unauthorized")
    }))
})
