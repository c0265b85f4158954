/**
 * Bearer JWT verification with `jose`. Algorithms are pinned to the key type (HS256 for a shared
 * secret, asymmetric ones for a JWKS), so `none` and algorithm confusion never verify; `exp` and
 * `sub` are required; issuer and audience are checked whenever configured. Time claims allow
 * `AUTH_CLOCK_SKEW_SECONDS` between the issuer's clock and this service's, and no token may live
 * longer than `AUTH_MAX_TOKEN_LIFETIME_SECONDS`: a leaked token dies within that, whatever its `exp`.
 */
import { FileSystem } from "effect"
import { Clock, Context, Data, Effect, Layer, Option, Redacted } from "effect"
import * as jose from "jose"
import { randomBytes } from "node:crypto"
import * as path from "node:path"
import { AppConfig, type AppConfigShape } from "../Config.ts"
import { traced } from "../Tracing.ts"

export interface Claims {
  readonly sub: string
  readonly email: string | undefined
  readonly name: string | undefined
  readonly admin: boolean
}

/** Claims are stored as text: NUL cannot be, and nothing that long is a name. */
const storable = (s: string) => !s.includes("\u0000") && s.length <= 1000

const asymmetric = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]

/** The HS256 secret: the configured one, else one generated into the data folder on first use. */
const hs256Secret = (config: AppConfigShape) =>
  Effect.gen(function*() {
    if (Option.isSome(config.auth.jwtSecret)) return new TextEncoder().encode(Redacted.value(config.auth.jwtSecret.value))
    const fs = yield* FileSystem.FileSystem
    const file = path.join(config.dataDir, "jwt-secret")
    if (!(yield* fs.exists(file))) {
      yield* fs.makeDirectory(config.dataDir, { recursive: true })
      // "wx": of two processes starting together, the first one's secret is the one both read
      yield* fs.writeFileString(file, randomBytes(32).toString("base64url"), { mode: 0o600, flag: "wx" }).pipe(
        Effect.catchIf((e) => e.reason._tag === "AlreadyExists", () => Effect.void)
      )
    }
    return Buffer.from((yield* fs.readFileString(file)).trim(), "base64url")
  })

/** The HS256 secret as a key that verifies. */
const hmacKey = (secret: Uint8Array) =>
  Effect.promise(() => crypto.subtle.importKey("raw", secret, { name: "HMAC", hash: "SHA-256" }, false, ["verify"]))

/** Tokens verified lately, by their whole text: at most this many. */
export const verifiedCapacity = 10_000
/** How long a verification is reused at most: a key dropped from the JWKS stops working within it. */
export const reuseMillis = 5 * 60_000

/**
 * The claims of tokens that verified, reused until the token's `exp` (or `reuseMillis`): a client
 * sends the same bearer token with every request, and a WebCrypto HMAC verification costs about
 * half a millisecond of CPU, more than the rest of a cached read. The key is the token's whole
 * text, signature included, so only the very token that verified finds its entry; refusals are
 * never kept. Past its time an entry is verified again, and an expired token is refused then.
 */
export const verifiedTokens = (now: () => number = Date.now) => {
  const entries = new Map<string, { readonly claims: Claims; readonly until: number }>()
  return {
    get: (token: string): Claims | undefined => {
      const entry = entries.get(token)
      if (entry === undefined) return undefined
      if (now() < entry.until) return entry.claims
      entries.delete(token)
      return undefined
    },
    set: (token: string, claims: Claims, expiresAt: number) => {
      // the oldest entry first (a Map keeps insertion order)
      if (entries.size >= verifiedCapacity) entries.delete(entries.keys().next().value!)
      entries.set(token, { claims, until: Math.min(expiresAt, now() + reuseMillis) })
    }
  }
}

/**
 * Why a token's `iat` or its lifetime is refused, or nothing. jose checks `exp` and `nbf` (with the
 * skew) but `iat` only for a maximum age, which would make it required; a token without `iat`
 * lives from now. Times are seconds since the epoch.
 */
export const timeRefusal = (
  claims: { readonly iat?: number | undefined; readonly exp: number },
  now: number,
  limits: { readonly maxTokenLifetimeSeconds: number; readonly clockSkewSeconds: number }
): string | undefined => {
  const { iat, exp } = claims
  if (iat !== undefined && iat > now + limits.clockSkewSeconds) {
    return `The token's iat claim is ${iat - now} s in the future: at most ${limits.clockSkewSeconds} s of clock skew is allowed`
  }
  const lifetime = exp - (iat ?? now)
  if (lifetime > limits.maxTokenLifetimeSeconds) {
    return `The token's exp claim is ${lifetime} s after ${iat === undefined ? "now" : "its iat"}: a token may live at most ${limits.maxTokenLifetimeSeconds} s`
  }
  return undefined
}

/** Why a token is refused, in a sentence. */
export class TokenRefused extends Data.TaggedError("TokenRefused")<{ readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

export class JwtVerifier extends Context.Service<JwtVerifier>()("JwtVerifier", {
  make: Effect.gen(function*() {
    const config = yield* AppConfig
    const { issuer, audience, adminClaim } = config.auth
    const options: jose.JWTVerifyOptions = {
      requiredClaims: ["exp", "sub"],
      ...(Option.isSome(issuer) ? { issuer: issuer.value } : {}),
      ...(Option.isSome(audience) ? { audience: audience.value } : {}),
      clockTolerance: config.auth.clockSkewSeconds
    }
    // `now` from Effect's Clock, as for the checks jose leaves to us
    const verifyJwt: (token: string, now: Date) => Promise<jose.JWTVerifyResult> = yield* Option.match(config.auth.jwksUrl, {
      onSome: (url) => {
        const jwks = jose.createRemoteJWKSet(new URL(url))
        return Effect.succeed((token: string, now: Date) =>
          jose.jwtVerify(token, jwks, { ...options, algorithms: asymmetric, currentDate: now })
        )
      },
      // imported once: given the secret's bytes, jose would import them again at every verification
      onNone: () =>
        Effect.map(
          Effect.flatMap(hs256Secret(config), hmacKey),
          (key) => (token: string, now: Date) => jose.jwtVerify(token, key, { ...options, algorithms: ["HS256"], currentDate: now })
        )
    })

    const verified = verifiedTokens()

    /** The token's claims, or why it is refused. */
    const verify = traced("JwtVerifier.verify")(function*(token: string) {
      const known = verified.get(token)
      if (known !== undefined) return known
      const now = yield* Clock.currentTimeMillis
      const { payload } = yield* Effect.tryPromise({
        try: () => verifyJwt(token, new Date(now)),
        catch: (e) =>
          new TokenRefused({
            reason: e instanceof jose.errors.JWTExpired
              ? "The token has expired"
              : e instanceof jose.errors.JWTClaimValidationFailed
              ? `The token's ${e.claim} claim is not accepted`
              : "The token is not valid"
          })
      })
      // jwtVerify requires exp and checks that exp and iat, when present, are numbers
      const refusal = timeRefusal({ iat: payload.iat, exp: payload.exp! }, Math.floor(now / 1000), config.auth)
      if (refusal !== undefined) return yield* new TokenRefused({ reason: refusal })
      // an empty or blank subject names nobody: it would be one shared user for every such token
      if (typeof payload.sub !== "string" || payload.sub.trim() === "" || !storable(payload.sub) || payload.sub.length > 255) {
        return yield* new TokenRefused({ reason: "The token's sub claim is not accepted" })
      }
      const claims: Claims = {
        sub: payload.sub,
        email: typeof payload.email === "string" && storable(payload.email) ? payload.email : undefined,
        name: typeof payload.name === "string" && storable(payload.name) ? payload.name : undefined,
        admin: payload[adminClaim] === true
      }
      verified.set(token, claims, payload.exp! * 1000)
      return claims
    })

    return { verify }
  })
}) {
  static readonly layer = Layer.effect(JwtVerifier, JwtVerifier.make)
}

/** Signs a development token with the HS256 secret (used by `npm run token`, the demo and the tests). */
export const mintToken = (
  config: AppConfigShape,
  claims: { sub: string; email?: string | undefined; name?: string | undefined; admin?: boolean | undefined },
  expiresIn: string | number = "30d"
) =>
  Effect.gen(function*() {
    const { sub, admin, ...rest } = claims
    let jwt = new jose.SignJWT({ ...rest, ...(admin ? { [config.auth.adminClaim]: true } : {}) })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(sub)
      // exp before iat: each reads the clock, and a second passing between them must shorten the
      // lifetime, not lengthen it past the longest the service accepts
      .setExpirationTime(expiresIn)
      .setIssuedAt()
    if (Option.isSome(config.auth.issuer)) jwt = jwt.setIssuer(config.auth.issuer.value)
    if (Option.isSome(config.auth.audience)) jwt = jwt.setAudience(config.auth.audience.value)
    const secret = yield* hs256Secret(config)
    return yield* Effect.promise(() => jwt.sign(secret))
  })
