/**
 * The verifier's time claims (src/Auth/Jwt.ts) on the TestClock, with tokens signed by the
 * configured secret: `iat` at most AUTH_CLOCK_SKEW_SECONDS in the future, a lifetime (`exp` −
 * `iat`, or `exp` − now without `iat`) of at most AUTH_MAX_TOKEN_LIFETIME_SECONDS, and the skew
 * allowed on `exp` and `nbf`; each refusal names its claim.
 */
import { FileSystem } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Redacted, Result } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"
import * as jose from "jose"
import { JwtVerifier } from "../../src/Auth/Jwt.ts"
import { forAll } from "../support/Property.ts"
import { stub, testConfig } from "../support/Stub.ts"

const secret = "a-secret-for-the-claims-tests-0123456789abcdef"
/** This test's present, in seconds since the epoch (a fixed one: the TestClock is set to it). */
const now = 1_800_000_000
const defaultSkew = 60
const defaultMax = 30 * 24 * 60 * 60
/** The latest instant a Date can hold, in the year 275760. */
const year275760 = 8_640_000_000_000

const verifierWith = (settings: { readonly maxTokenLifetimeSeconds?: number; readonly clockSkewSeconds?: number } = {}) =>
  JwtVerifier.layer.pipe(
    Layer.provide(testConfig((c) => ({ ...c, auth: { ...c.auth, jwtSecret: Option.some(Redacted.make(secret)), ...settings } }))),
    // the secret is configured: nothing is read from the data folder
    Layer.provide(stub(FileSystem.FileSystem, {}))
  )

/** A token with exactly these time claims (each left out when undefined). */
const sign = (claims: { readonly iat?: number | undefined; readonly exp: number; readonly nbf?: number | undefined }) =>
  Effect.promise(() =>
    new jose.SignJWT({
      sub: "clock-user",
      exp: claims.exp,
      ...(claims.iat === undefined ? {} : { iat: claims.iat }),
      ...(claims.nbf === undefined ? {} : { nbf: claims.nbf })
    }).setProtectedHeader({ alg: "HS256", typ: "JWT" }).sign(new TextEncoder().encode(secret))
  )

/** The verifier's answer at `now`: the subject, or the refusal's message. */
const verifyAt = (claims: { readonly iat?: number | undefined; readonly exp: number; readonly nbf?: number | undefined }) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(now * 1000)
    const token = yield* sign(claims)
    const verifier = yield* JwtVerifier
    return yield* verifier.verify(token).pipe(Effect.map((c) => c.sub), Effect.mapError((e) => e.message), Effect.result)
  })

const accepted = Result.succeed("clock-user")

const refusedNaming = (answer: Result.Result<string, string>, claim: string) => {
  expect(Result.isFailure(answer), `accepted, expected a refusal naming ${claim}`).toBe(true)
  expect(Result.getFailure(answer).pipe(Option.getOrThrow)).toMatch(new RegExp(`\\b${claim}\\b`))
}

describe("iat", () => {
  it.effect("up to the skew in the future is accepted, a second more is refused naming iat", () =>
    Effect.gen(function*() {
      expect(yield* verifyAt({ iat: now + defaultSkew, exp: now + 3600 })).toEqual(accepted)
      refusedNaming(yield* verifyAt({ iat: now + defaultSkew + 1, exp: now + 3600 }), "iat")
      // the case: an hour ahead
      refusedNaming(yield* verifyAt({ iat: now + 3600, exp: now + 7200 }), "iat")
    }).pipe(Effect.provide(verifierWith())))

  it.effect("AUTH_CLOCK_SKEW_SECONDS=0: no second ahead", () =>
    Effect.gen(function*() {
      expect(yield* verifyAt({ iat: now, exp: now + 3600 })).toEqual(accepted)
      refusedNaming(yield* verifyAt({ iat: now + 1, exp: now + 3600 }), "iat")
    }).pipe(Effect.provide(verifierWith({ clockSkewSeconds: 0 }))))
})

describe("lifetime", () => {
  it.effect("exp − iat up to the maximum is accepted, a second more is refused naming exp", () =>
    Effect.gen(function*() {
      expect(yield* verifyAt({ iat: now, exp: now + defaultMax })).toEqual(accepted)
      refusedNaming(yield* verifyAt({ iat: now, exp: now + defaultMax + 1 }), "exp")
      // measured from iat, not from now: a token issued a day ago for 30 days and a day
      refusedNaming(yield* verifyAt({ iat: now - 86_400, exp: now + defaultMax }), "exp")
      expect(yield* verifyAt({ iat: now - 86_400, exp: now - 86_400 + defaultMax })).toEqual(accepted)
    }).pipe(Effect.provide(verifierWith())))

  it.effect("without iat, exp − now is the lifetime", () =>
    Effect.gen(function*() {
      expect(yield* verifyAt({ exp: now + defaultMax })).toEqual(accepted)
      refusedNaming(yield* verifyAt({ exp: now + defaultMax + 1 }), "exp")
    }).pipe(Effect.provide(verifierWith())))

  it.effect("exp in the year 275760 is refused naming exp, with or without iat", () =>
    Effect.gen(function*() {
      refusedNaming(yield* verifyAt({ iat: now, exp: year275760 }), "exp")
      refusedNaming(yield* verifyAt({ exp: year275760 }), "exp")
    }).pipe(Effect.provide(verifierWith())))

  it.effect("AUTH_MAX_TOKEN_LIFETIME_SECONDS sets the maximum", () =>
    Effect.gen(function*() {
      expect(yield* verifyAt({ iat: now, exp: now + 3600 })).toEqual(accepted)
      refusedNaming(yield* verifyAt({ iat: now, exp: now + 3601 }), "exp")
    }).pipe(Effect.provide(verifierWith({ maxTokenLifetimeSeconds: 3600 }))))
})

describe("exp and nbf", () => {
  it.effect("are allowed the same skew", () =>
    Effect.gen(function*() {
      expect(yield* verifyAt({ iat: now - 3600, exp: now - defaultSkew + 1 })).toEqual(accepted)
      expect(yield* verifyAt({ iat: now - 3600, exp: now - defaultSkew })).toEqual(Result.fail("The token has expired"))
      expect(yield* verifyAt({ iat: now, exp: now + 3600, nbf: now + defaultSkew })).toEqual(accepted)
      refusedNaming(yield* verifyAt({ iat: now, exp: now + 3600, nbf: now + defaultSkew + 1 }), "nbf")
    }).pipe(Effect.provide(verifierWith())))
})

it.effect(
  "a token is accepted exactly when it has not expired, iat is within the skew and its lifetime within the maximum",
  () => forAll([
    fc.integer({ min: 0, max: 300 }),
    fc.integer({ min: 1, max: 10 * 86_400 }),
    fc.option(fc.integer({ min: -20 * 86_400, max: 600 }), { nil: undefined }),
    fc.integer({ min: -600, max: 20 * 86_400 })
  ], ([skew, max, iatOffset, expOffset]) =>
    Effect.gen(function*() {
      const iat = iatOffset === undefined ? undefined : now + iatOffset
      const exp = now + expOffset
      const answer = yield* verifyAt({ iat, exp })
      if (exp <= now - skew) expect(answer).toEqual(Result.fail("The token has expired"))
      else if (iat !== undefined && iat > now + skew) refusedNaming(answer, "iat")
      else if (exp - (iat ?? now) > max) refusedNaming(answer, "exp")
      else expect(answer).toEqual(accepted)
    }).pipe(Effect.provide(verifierWith({ clockSkewSeconds: skew, maxTokenLifetimeSeconds: max }))), { numRuns: 100 })
)
