/**
 * The failure windows of src/Auth/Failures.ts against random sequences of failures from a few
 * addresses: no failure is answered 429 unless its address failed `limit` times in the last
 * window, at most `limit` per window keep their refusal, a 429's Retry-After ends within the
 * window and holds until then, and the table stays bounded. Then the guard on stub requests and
 * the TestClock: a credential that verifies always proceeds, however the address failed before,
 * and of concurrent wrong guesses all in verification at once, only the limit's worth get their
 * refusal.
 */
import { HttpServerRequest } from "effect/http"
import { describe, expect, it } from "@effect/vitest"
import { Data, Deferred, Effect, Fiber, Layer, Result } from "effect"
import * as TestClock from "effect/testing/TestClock"
import * as fc from "fast-check"
import { AuthFailures, makeFailureWindows, TooManyFailures } from "../src/Auth/Failures.ts"
import { forAll, forAllSync } from "./support/Property.ts"
import { testConfig } from "./support/Stub.ts"

const limit = 3
const windowMillis = 1_000

interface Step {
  readonly address: string
  /** Milliseconds since the previous step. */
  readonly advance: number
}

const step: fc.Arbitrary<Step> = fc.record({
  address: fc.constantFrom("a", "b", "c"),
  advance: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1_500 }))
})

describe("failure windows", () => {
  it(
    "answer 429 only past `limit` failures in the last window, and hold it exactly until its Retry-After",
    () =>
      forAllSync([fc.array(step, { maxLength: 80 })], ([steps]) => {
        const windows = makeFailureWindows({ limit, windowMillis, maxAddresses: 100 })
        const failures = new Map<string, Array<{ readonly at: number; readonly refused: boolean }>>()
        const refusedUntil = new Map<string, number>()
        let now = 0
        for (const s of steps) {
          now += s.advance
          const earlier = failures.get(s.address) ?? []
          const recent = earlier.filter((f) => now - f.at < windowMillis)
          const answer = windows.fail(s.address, now)
          failures.set(s.address, [...earlier, { at: now, refused: answer !== undefined }])
          const until = refusedUntil.get(s.address)
          if (answer instanceof TooManyFailures) {
            // once a 429's Retry-After has passed, a failure keeps its own refusal again
            if (until !== undefined && now >= until) expect.fail(`429 at ${now}, after the Retry-After of ${until}`)
            expect(recent.length).toBeGreaterThanOrEqual(limit)
            expect(answer.retryAfterSeconds).toBeGreaterThan(0)
            expect(answer.retryAfterSeconds).toBeLessThanOrEqual(windowMillis / 1000)
            refusedUntil.set(s.address, now + answer.retryAfterSeconds * 1000)
          } else if (until !== undefined && now < until) {
            expect.fail(`a failure kept its refusal at ${now}, 429 until ${until}`)
          }
        }
        for (const times of failures.values()) {
          // an address's first `limit` failures always keep their refusal
          expect(times.slice(0, limit).some((f) => f.refused)).toBe(false)
          // at most `limit` per fixed window keep it, so at most twice that in a span straddling two
          for (const { at } of times) {
            expect(times.filter((f) => !f.refused && f.at >= at && f.at - at < windowMillis).length).toBeLessThanOrEqual(2 * limit)
          }
        }
      }))

  it(
    "a burst at one instant keeps exactly the limit's worth of refusals",
    () =>
      forAllSync([fc.integer({ min: 0, max: 20 })], ([n]) => {
        const windows = makeFailureWindows({ limit, windowMillis, maxAddresses: 100 })
        const answers = Array.from({ length: n }, () => windows.fail("a", 0))
        expect(answers.filter((a) => a === undefined).length).toBe(Math.min(n, limit))
        expect(answers.slice(limit).every((a) => a instanceof TooManyFailures && a.retryAfterSeconds === windowMillis / 1000)).toBe(true)
      }))

  it(
    "remembers at most `maxAddresses`, forgetting the oldest window first",
    () =>
      forAllSync([fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 200 })], ([addresses]) => {
        const windows = makeFailureWindows({ limit, windowMillis, maxAddresses: 10 })
        for (const a of addresses) windows.fail(`10.0.0.${a}`, 0)
        expect(windows.size()).toBeLessThanOrEqual(10)
        // the last one to fail is still counted
        const last = addresses.at(-1)
        if (last !== undefined) {
          for (let i = 0; i < limit; i++) windows.fail(`10.0.0.${last}`, 0)
          expect(windows.fail(`10.0.0.${last}`, 0)).toBeInstanceOf(TooManyFailures)
        }
      }))

  it("counts an IPv6 address by its /64: guesses from one subscriber's many addresses share a count", () => {
    const windows = makeFailureWindows({ limit, windowMillis, maxAddresses: 100 })
    const answers = Array.from({ length: limit + 1 }, (_, i) => windows.fail(`2001:db8:1:2::${i + 1}`, 0))
    expect(answers.slice(0, limit).every((a) => a === undefined)).toBe(true)
    expect(answers[limit]).toBeInstanceOf(TooManyFailures)
    // another /64 has a count of its own
    expect(windows.fail("2001:db8:1:3::1", 0)).toBeUndefined()
  })
})

/** What a credential check refuses with (a 401 in the service). */
class Refused extends Data.TaggedError("Refused") {}
/** Any other failure of an authenticated request (the database down, a conflict). */
class Broken extends Data.TaggedError("Broken") {}

const guardLimit = 20
const guardWindowMillis = 60_000

/** The guard as the service builds it, with the address taken from X-Forwarded-For. */
const guardLayer = AuthFailures.layer.pipe(
  Layer.provide(testConfig((c) => ({
    ...c,
    trustProxy: true,
    auth: { ...c.auth, failureLimit: guardLimit, failureWindowMillis: guardWindowMillis }
  })))
)

const from = (address: string) =>
  Effect.provideService(
    HttpServerRequest.HttpServerRequest,
    HttpServerRequest.fromWeb(new Request("http://registry.test/", { headers: { "x-forwarded-for": address } }))
  )

const attempt = <A, E>(address: string, check: Effect.Effect<A, E>) =>
  Effect.flatMap(AuthFailures, (failures) => failures.guard(check, (e) => e instanceof Refused)).pipe(from(address), Effect.result)

describe("the guard", () => {
  it.effect("past the limit a credential that verifies proceeds, a failed one is 429 with the rest of the window", () =>
    Effect.gen(function*() {
      for (let i = 0; i < guardLimit; i++) {
        expect(yield* attempt("10.1.0.1", new Refused())).toEqual(Result.fail(new Refused()))
      }
      yield* TestClock.adjust("20 seconds")
      const flooded = yield* attempt("10.1.0.1", new Refused())
      expect(flooded).toEqual(Result.fail(new TooManyFailures({ retryAfterSeconds: 40 })))
      // the valid credential from the same address, again and again: never refused, never counted
      for (let i = 0; i < 3; i++) expect(yield* attempt("10.1.0.1", Effect.succeed("alice"))).toEqual(Result.succeed("alice"))
      // a failure that is not a refusal is the request's own, passed on and not counted
      expect(yield* attempt("10.1.0.1", new Broken())).toEqual(Result.fail(new Broken()))
      // another address is not held back
      expect(yield* attempt("10.1.0.2", new Refused())).toEqual(Result.fail(new Refused()))
      // once the window ends, a failure keeps its own refusal again
      yield* TestClock.adjust("40 seconds")
      expect(yield* attempt("10.1.0.1", new Refused())).toEqual(Result.fail(new Refused()))
    }).pipe(Effect.provide(guardLayer)))

  it.effect("successes neither count nor reset the count", () =>
    Effect.gen(function*() {
      for (let i = 0; i < guardLimit - 1; i++) yield* attempt("10.2.0.1", new Refused())
      for (let i = 0; i < 3 * guardLimit; i++) yield* attempt("10.2.0.1", Effect.succeed(i))
      expect(yield* attempt("10.2.0.1", new Refused())).toEqual(Result.fail(new Refused()))
      expect(yield* attempt("10.2.0.1", new Refused())).toEqual(Result.fail(new TooManyFailures({ retryAfterSeconds: 60 })))
    }).pipe(Effect.provide(guardLayer)))

  it.effect(
    "of concurrent attempts all in verification at once, every success proceeds and only the limit's worth of failures keep their refusal",
    () =>
      forAll(
        [fc.array(fc.boolean(), { minLength: 0, maxLength: 1_000 })],
        ([verifies]) =>
          Effect.gen(function*() {
            // every check waits for the gate: none has failed when the last one starts
            const gate = yield* Deferred.make<void>()
            const fibers = yield* Effect.forEach(verifies, (ok, i) =>
              Effect.forkChild(attempt("10.3.0.1", Effect.andThen(Deferred.await(gate), ok ? Effect.succeed(i) : Effect.fail(new Refused())))))
            yield* Deferred.succeed(gate, undefined)
            const answers = yield* Effect.forEach(fibers, Fiber.join)
            const failed = verifies.filter((ok) => !ok).length
            answers.forEach((answer, i) => {
              if (verifies[i]) expect(answer).toEqual(Result.succeed(i))
            })
            expect(answers.filter((a) => Result.isFailure(a) && a.failure instanceof Refused).length).toBe(Math.min(failed, guardLimit))
            expect(answers.filter((a) => Result.isFailure(a) && a.failure instanceof TooManyFailures).length).toBe(Math.max(0, failed - guardLimit))
          }).pipe(Effect.provide(guardLayer)),
        { numRuns: 30 }
      )
  )
})
