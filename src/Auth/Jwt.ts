/**
 * Bearer JWT verification with `jose`. Algorithms are pinned to the key type (HS256 for a shared
 * secret, asymmetric ones for a JWKS), so `none` and algorithm confusion never verify; `exp` and
 * `sub` are required; issuer and audience are checked whenever configured.
 */
import { Context, Effect, Layer, Option, Redacted } from "effect"
import * as jose from "jose"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { AppConfig, type AppConfigShape } from "../Config.ts"

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
export const hs256Secret = (config: AppConfigShape): Promise<Uint8Array> => {
  if (Option.isSome(config.auth.jwtSecret)) {
    return Promise.resolve(new TextEncoder().encode(Redacted.value(config.auth.jwtSecret.value)))
  }
  const file = path.join(config.dataDir, "jwt-secret")
  return fs.readFile(file, "utf8").then(
    (s) => Buffer.from(s.trim(), "base64url"),
    async () => {
      await fs.mkdir(config.dataDir, { recursive: true })
      const secret = randomBytes(32)
      // "wx": two processes starting together must not overwrite each other's secret
      await fs.writeFile(file, secret.toString("base64url"), { mode: 0o600, flag: "wx" }).catch(() => undefined)
      return Buffer.from((await fs.readFile(file, "utf8")).trim(), "base64url")
    }
  )
}

export class JwtVerifier extends Context.Tag("JwtVerifier")<JwtVerifier, {
  /** The token's claims, or a sentence saying why it is refused. */
  readonly verify: (token: string) => Effect.Effect<Claims, string>
}>() {
  static readonly layer = Layer.effect(
    JwtVerifier,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const { issuer, audience, adminClaim } = config.auth
      const options: jose.JWTVerifyOptions = {
        requiredClaims: ["exp", "sub"],
        ...(Option.isSome(issuer) ? { issuer: issuer.value } : {}),
        ...(Option.isSome(audience) ? { audience: audience.value } : {}),
        clockTolerance: 5
      }
      const verifyJwt: (token: string) => Promise<jose.JWTVerifyResult> = Option.match(config.auth.jwksUrl, {
        onSome: (url) => {
          const jwks = jose.createRemoteJWKSet(new URL(url))
          return (token) => jose.jwtVerify(token, jwks, { ...options, algorithms: asymmetric })
        },
        onNone: () => {
          const secret = hs256Secret(config)
          return async (token) => jose.jwtVerify(token, await secret, { ...options, algorithms: ["HS256"] })
        }
      })
      return {
        verify: (token) =>
          Effect.tryPromise({
            try: () => verifyJwt(token),
            catch: (e) =>
              e instanceof jose.errors.JWTExpired
                ? "The token has expired"
                : e instanceof jose.errors.JWTClaimValidationFailed
                ? `The token's ${e.claim} claim is not accepted`
                : "The token is not valid"
          }).pipe(
            Effect.filterOrFail(
              ({ payload }) => typeof payload.sub === "string" && storable(payload.sub) && payload.sub.length <= 255,
              () => "The token's sub claim is not accepted"
            ),
            Effect.map(({ payload }) => ({
              sub: payload.sub!,
              email: typeof payload.email === "string" && storable(payload.email) ? payload.email : undefined,
              name: typeof payload.name === "string" && storable(payload.name) ? payload.name : undefined,
              admin: payload[adminClaim] === true
            }))
          )
      }
    })
  )
}

/** Signs a development token with the HS256 secret (used by `npm run token` and the tests). */
export const mintToken = async (
  config: AppConfigShape,
  claims: { sub: string; email?: string | undefined; name?: string | undefined; admin?: boolean | undefined },
  expiresIn: string | number = "30d"
) => {
  const { sub, admin, ...rest } = claims
  let jwt = new jose.SignJWT({ ...rest, ...(admin ? { [config.auth.adminClaim]: true } : {}) })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime(expiresIn)
  if (Option.isSome(config.auth.issuer)) jwt = jwt.setIssuer(config.auth.issuer.value)
  if (Option.isSome(config.auth.audience)) jwt = jwt.setAudience(config.auth.audience.value)
  return jwt.sign(await hs256Secret(config))
}
