/**
 * The key cache of the identity-token verifier (src/TrustedPublishing/Oidc.ts), against the
 * loopback OIDC issuer and TestClock: made-up key ids within the cooldown fetch nothing, one past
 * it fetches once, a rotated-in key is found on its first token after the cooldown, and keys older
 * than their maximum age are fetched again. No service, no database.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { AppConfig } from "../../src/Config.ts"
import { OidcVerifier } from "../../src/TrustedPublishing/Oidc.ts"
import { githubClaims, OidcIssuer } from "../support/OidcIssuer.ts"

const audience = "cache-test"
const cooldownMillis = 10_000
const maxAgeMillis = 60 * 60_000

const VerifierLive = Layer.unwrap(Effect.map(OidcIssuer, (issuer) =>
  OidcVerifier.layer.pipe(Layer.provide(AppConfig.layerWith((c) => ({
    ...c,
    trustedPublishing: {
      ...c.trustedPublishing,
      issuers: [issuer.url],
      audience,
      keysRefreshCooldownMillis: cooldownMillis,
      keysMaxAgeMillis: maxAgeMillis
    }
  })))))).pipe(Layer.provideMerge(OidcIssuer.layer))

/** The claim a verification was refused at, or "accepted". */
const outcome = (token: string) =>
  Effect.flatMap(OidcVerifier, (verifier) =>
    verifier.verify(token).pipe(
      Effect.as("accepted"),
      Effect.catchTag("IdentityRefused", (e) => Effect.succeed(e.claim))
    ))

describe("the issuer's key cache", () => {
  it.effect("fetches keys once per cooldown for unknown key ids, at once for a rotated key past it, and again when old", () =>
    Effect.gen(function*() {
      const issuer = yield* OidcIssuer
      // tokens are signed with the real time: the test clock starts there
      yield* TestClock.setTime(Date.now())
      const sign = (options?: Parameters<typeof issuer.sign>[1]) =>
        Effect.promise(() => issuer.sign(githubClaims(audience, { repository: "acme/lamp" }), options))

      expect(yield* outcome(yield* sign())).toBe("accepted")
      expect(issuer.keyFetches()).toBe(1)

      // a flood of made-up key ids within the cooldown: refused, nothing fetched
      for (let i = 0; i < 5; i++) expect(yield* outcome(yield* sign({ kid: `made-up-${i}` }))).toBe("kid")
      expect(issuer.keyFetches()).toBe(1)

      // a rotated key within the cooldown is not found yet; past it, its first token fetches once
      yield* Effect.promise(() => issuer.rotate())
      const rotated = yield* sign()
      expect(yield* outcome(rotated)).toBe("kid")
      expect(issuer.keyFetches()).toBe(1)
      yield* TestClock.adjust(cooldownMillis)
      expect(yield* outcome(yield* sign())).toBe("accepted")
      expect(issuer.keyFetches()).toBe(2)
      expect(yield* outcome(yield* sign())).toBe("accepted")
      expect(issuer.keyFetches()).toBe(2)

      // keys past their maximum age are fetched again, even for a known key id
      yield* TestClock.adjust(maxAgeMillis)
      // a token that is still valid an hour ahead
      expect(yield* outcome(yield* sign({ expiresIn: 2 * 60 * 60 }))).toBe("accepted")
      expect(issuer.keyFetches()).toBe(3)
    }).pipe(Effect.provide(VerifierLive)))
})
