/**
 * Verifies CI identity tokens: OIDC JWTs of the issuers TRUSTED_PUBLISHING_ISSUERS lists, signed
 * with a key the issuer publishes. An issuer's keys are found through its discovery document
 * (`<issuer>/.well-known/openid-configuration`, whose `jwks_uri` names them), kept for an hour,
 * and fetched again sooner when a token names a key id they lack (its key was rotated in), at
 * most once per cooldown, so that made-up key ids cannot make the service hammer the issuer.
 *
 * Every refusal names the claim that did not hold (or `token`, `kid`, `signature`) and never
 * holds the token.
 */
import { HttpClient, HttpClientRequest, HttpClientResponse } from "effect/http"
import { NodeHttpClient } from "@effect/platform-node"
import { Clock, Context, Data, Effect, Layer, Schema } from "effect"
import * as jose from "jose"
import { AppConfig } from "../Config.ts"
import { traced } from "../Tracing.ts"
import type { Refusal } from "./Claims.ts"

/** The token is refused: `claim` names what did not hold. */
export class IdentityRefused extends Data.TaggedError("IdentityRefused")<Refusal> {
  /** The reason, then the claim in a form tools can find: `… (claim: aud)`. */
  override get message() {
    return `${this.reason} (claim: ${this.claim})`
  }
}

/** The issuer's discovery document or keys could not be had. */
export class IssuerUnavailable extends Data.TaggedError("IssuerUnavailable")<{ readonly issuer: string; readonly reason: string }> {
  override get message() {
    return `The identity token's issuer ${this.issuer} could not be asked for its keys (${this.reason}): try again later`
  }
}

/** What the exchange reads of a verified token. */
export interface VerifiedIdentity {
  readonly issuer: string
  readonly jti: string
  /** Seconds since the epoch. */
  readonly exp: number
  readonly claims: jose.JWTPayload
}

const asymmetric = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]

const Discovery = Schema.Struct({ issuer: Schema.String, jwks_uri: Schema.String })
const KeySet = Schema.Struct({ keys: Schema.Array(Schema.Record(Schema.String, Schema.Unknown)) })

interface IssuerKeys {
  readonly verifyWith: ReturnType<typeof jose.createLocalJWKSet>
  readonly kids: ReadonlySet<string>
  readonly fetchedAt: number
}

const refused = (claim: string, reason: string) => new IdentityRefused({ claim, reason })

/** A jose failure as a refusal that names the claim. */
const refusalOf = (e: unknown, audience: string): IdentityRefused => {
  if (e instanceof jose.errors.JWTExpired) return refused("exp", "The identity token has expired")
  if (e instanceof jose.errors.JWTClaimValidationFailed) {
    if (e.reason === "missing") return refused(e.claim, `The identity token has no ${e.claim} claim`)
    switch (e.claim) {
      case "aud":
        return refused("aud", `The identity token's aud claim is not this registry's audience '${audience}'`)
      case "nbf":
        return refused("nbf", "The identity token is not valid yet (its nbf claim is in the future)")
      case "iat":
        return refused("iat", "The identity token's iat claim is not accepted")
      default:
        return refused(e.claim, `The identity token's ${e.claim} claim is not accepted`)
    }
  }
  if (e instanceof jose.errors.JWKSNoMatchingKey) return refused("kid", "The issuer publishes no key that verifies this identity token")
  if (e instanceof jose.errors.JOSEAlgNotAllowed) return refused("alg", "The identity token's alg is not an asymmetric signature")
  if (e instanceof jose.errors.JWSSignatureVerificationFailed) {
    return refused("signature", "The identity token's signature does not verify with the issuer's key")
  }
  return refused("token", "The identity token is not a valid signed JWT")
}

export class OidcVerifier extends Context.Service<OidcVerifier>()("OidcVerifier", {
  make: Effect.gen(function*() {
    const config = yield* AppConfig
    const { issuers, audience, keysMaxAgeMillis, keysRefreshCooldownMillis, timeoutMillis } = config.trustedPublishing
    const client = (yield* HttpClient.HttpClient).pipe(
      HttpClient.mapRequest(HttpClientRequest.acceptJson),
      HttpClient.filterStatusOk
    )
    const cache = new Map<string, IssuerKeys>()

    const getJson = <A, I>(issuer: string, url: string, schema: Schema.Codec<A, I>, what: string) =>
      client.get(url).pipe(
        Effect.flatMap(HttpClientResponse.schemaBodyJson(schema)),
        Effect.timeoutOrElse({
          duration: timeoutMillis,
          orElse: () => Effect.fail(new IssuerUnavailable({ issuer, reason: `no ${what} within ${timeoutMillis} ms` }))
        }),
        Effect.catchTags({
          HttpClientError: (e) =>
            Effect.fail(new IssuerUnavailable({ issuer, reason: `its ${what} could not be fetched (${e.reason._tag.replace(/Error$/, "")})` })),
          SchemaError: () => Effect.fail(new IssuerUnavailable({ issuer, reason: `its ${what} does not have the expected shape` }))
        })
      )

    const fetchKeys = (issuer: string) =>
      Effect.gen(function*() {
        const discovery = yield* getJson(issuer, `${issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`, Discovery, "discovery document")
        // OpenID Connect Discovery 1.0, 4.3: the document must name the issuer it was fetched for
        if (discovery.issuer !== issuer) {
          return yield* new IssuerUnavailable({ issuer, reason: `its discovery document names issuer '${discovery.issuer}'` })
        }
        const keySet = yield* getJson(issuer, discovery.jwks_uri, KeySet, "key set")
        const verifyWith = yield* Effect.try({
          try: () => jose.createLocalJWKSet(keySet as jose.JSONWebKeySet),
          catch: () => new IssuerUnavailable({ issuer, reason: "its key set is not a JWK set" })
        })
        const kids = new Set(keySet.keys.flatMap((key) => typeof key.kid === "string" ? [key.kid] : []))
        const keys: IssuerKeys = { verifyWith, kids, fetchedAt: yield* Clock.currentTimeMillis }
        cache.set(issuer, keys)
        yield* Effect.logDebug(`fetched the keys of issuer ${issuer}: ${kids.size} key ids`)
        return keys
      })

    /** The issuer's keys: cached, fetched again when old, or when `kid` is new to them and the cooldown has passed. */
    const keysFor = (issuer: string, kid: string | undefined) =>
      Effect.gen(function*() {
        const cached = cache.get(issuer)
        const now = yield* Clock.currentTimeMillis
        if (cached === undefined || now - cached.fetchedAt >= keysMaxAgeMillis) return yield* fetchKeys(issuer)
        if (kid !== undefined && !cached.kids.has(kid) && now - cached.fetchedAt >= keysRefreshCooldownMillis) {
          return yield* fetchKeys(issuer)
        }
        return cached
      })

    /** The token's issuer, from its unverified payload: which keys to verify it with. */
    const issuerOf = (token: string) =>
      Effect.gen(function*() {
        const decoded = yield* Effect.try({
          try: () => ({ header: jose.decodeProtectedHeader(token), payload: jose.decodeJwt(token) }),
          catch: () => refused("token", "The identity token is not a JWT")
        })
        const iss = decoded.payload.iss
        if (issuers.length === 0) {
          return yield* refused("iss", "This registry trusts no issuer: its operator has not set TRUSTED_PUBLISHING_ISSUERS")
        }
        if (typeof iss !== "string" || !issuers.includes(iss)) {
          return yield* refused("iss", `The identity token's iss claim is not an issuer this registry trusts (${issuers.join(", ")})`)
        }
        return { issuer: iss, kid: decoded.header.kid }
      })

    return {
      audience,
      issuers,
      /** The token's claims once its issuer, signature, audience and times hold; else the refusal. */
      verify: traced("OidcVerifier.verify")(function*(token: string) {
        const { issuer, kid } = yield* issuerOf(token)
        const keys = yield* keysFor(issuer, kid)
        const now = yield* Clock.currentTimeMillis
        const { payload } = yield* Effect.tryPromise({
          try: () =>
            jose.jwtVerify(token, keys.verifyWith, {
              issuer,
              audience,
              algorithms: asymmetric,
              requiredClaims: ["exp", "jti"],
              clockTolerance: config.auth.clockSkewSeconds,
              currentDate: new Date(now)
            }),
          catch: (e) => refusalOf(e, audience)
        })
        const jti = payload.jti
        if (typeof jti !== "string" || jti === "" || jti.length > 255) return yield* refused("jti", "The identity token's jti claim is not accepted")
        return { issuer, jti, exp: payload.exp!, claims: payload } satisfies VerifiedIdentity
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(OidcVerifier, OidcVerifier.make)
  static readonly layer = OidcVerifier.layerWithoutDependencies.pipe(Layer.provide(NodeHttpClient.layerUndici))
}
