/**
 * Bearer authentication through real HTTP: every refused credential is `401 unauthorized` as
 * ErrorResponse, a valid one records its user, and site admins come from ADMIN_SUBJECTS or the
 * admin claim. Three deployments: the HS256 secret (the harness default), HS256 with admin
 * settings changed, and a JWKS URL with a pinned issuer and audience (a loopback provider).
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import * as fc from "fast-check"
import * as jose from "jose"
import { queryOne } from "./support/Db.ts"
import { type Answer, expectError, expectErrorBody, get, parseJson } from "./support/Http.ts"
import { JwksServer } from "./support/Jwks.ts"
import { forAll } from "./support/Property.ts"
import { rawGet } from "./support/RawHttp.ts"
import { type Running, Service, serviceOnFreshDatabase, testJwtSecret } from "./support/Service.ts"

const endpoint = "/publishers/unclaimed/nodes"
const adminOnly = `${endpoint}?include_banned=true`

/** `GET path` with the Authorization header given, or none. */
const call = (service: Running, authorization: string | undefined, path = endpoint) =>
  get(service, path, { headers: authorization === undefined ? {} : { authorization } })

const expectUnauthorized = (response: Answer) => expectError(response, 401, "unauthorized")

const bearer = (service: Running, token: string, path = endpoint) => get(service, path, { token })

const now = () => Math.floor(Date.now() / 1000)
const b64 = (value: unknown) => Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url")
const secretBytes = (secret: string) => new TextEncoder().encode(secret)

/** An HS256 token signed with `secret`; `exp` is set unless `expiresIn` is null, `iat` is now unless `issuedAt` is given. */
const signHs = (
  claims: jose.JWTPayload,
  secret: Uint8Array = secretBytes(testJwtSecret),
  options: { readonly expiresIn?: string | number | null; readonly issuedAt?: number; readonly alg?: string; readonly kid?: string } = {}
) => {
  let jwt = new jose.SignJWT(claims).setProtectedHeader({
    alg: options.alg ?? "HS256",
    typ: "JWT",
    ...(options.kid ? { kid: options.kid } : {})
  }).setIssuedAt(options.issuedAt)
  if (options.expiresIn !== null) jwt = jwt.setExpirationTime(options.expiresIn ?? "10m")
  return Effect.promise(() => jwt.sign(secret))
}

/** An unsigned token (`alg: none`, or any header) assembled by hand. */
const unsigned = (payload: jose.JWTPayload, header: Record<string, unknown> = { alg: "none", typ: "JWT" }, signature = "") =>
  `${b64(header)}.${b64(payload)}.${signature}`

const readUser = (service: Running, id: string) =>
  queryOne<{ id: string; email: string | null; name: string | null }>(service, "SELECT id, email, name FROM users WHERE id = $1", [id])

layer(Service.layer(), { excludeTestServices: true })("HS256 secret", (it) => {
  it.effect("no Authorization header is 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectUnauthorized(yield* call(service, undefined))
      expectUnauthorized(yield* call(service, undefined, `${endpoint}/v2`))
    }))

  it.effect("malformed Authorization headers are 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const valid = yield* Effect.promise(() => service.token({ sub: "malformed-header-user" }))
      for (
        const header of [
          "Basic x",
          `Basic ${Buffer.from("user:pass").toString("base64")}`,
          "Bearer",
          "Bearer ",
          `Bearer ${valid} ${valid}`,
          `Bearer ${valid} extra`,
          `Bearer  ${valid}`,
          `Token ${valid}`,
          valid,
          `Bearer${valid}`,
          `Bearer ${valid},Bearer ${valid}`
        ]
      ) {
        const response = yield* call(service, header)
        expect(response.status, `Authorization: ${header.slice(0, 40)}...`).toBe(401)
        expectErrorBody(response.body, "unauthorized")
      }
    }))

  it.effect("two Authorization headers are refused", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const valid = yield* Effect.promise(() => service.token({ sub: "two-headers-user" }))
      // node keeps the first Authorization header and drops repeats: a valid second credential
      // must never turn the refusal of the first into an acceptance
      const response = yield* rawGet(service.baseUrl, endpoint, [`Authorization: Bearer garbage`, `Authorization: Bearer ${valid}`])
      expect(response.status).toBe(401)
      expectErrorBody(parseJson(response.body, "two headers"), "unauthorized")
    }))

  it.effect("garbage tokens are 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const token of ["garbage", "a.b.c", "...", "eyJ.eyJ.sig", `${b64("{")}.${b64("{")}.x`, "x".repeat(5000)]) {
        expectUnauthorized(yield* bearer(service, token))
      }
    }))

  it.effect("a valid token is 200", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* Effect.promise(() => service.token({ sub: "valid-user" }))
      const response = yield* bearer(service, token)
      expect(response.status).toBe(200)
      expect(response.body).toEqual([])
      const v2 = yield* bearer(service, token, `${endpoint}/v2`)
      expect(v2.status).toBe(200)
      expect(v2.body).toMatchObject({ nodes: [], page: 1, total: 0 })
      // minted by hand with jose and the same secret, not only by the service's own helper
      const handMade = yield* signHs({ sub: "hand-made-user" })
      expect((yield* bearer(service, handMade)).status).toBe(200)
    }))

  it.effect("an expired token is 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectUnauthorized(yield* bearer(service, yield* signHs({ sub: "expired-user" }, undefined, { expiresIn: now() - 3600 })))
      expectUnauthorized(yield* bearer(service, yield* signHs({ sub: "expired-user" }, undefined, { expiresIn: now() - 60 })))
    }))

  it.effect("a token without exp is 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectUnauthorized(yield* bearer(service, yield* signHs({ sub: "no-exp-user" }, undefined, { expiresIn: null })))
    }))

  it.effect("a token without sub is 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectUnauthorized(yield* bearer(service, yield* signHs({ email: "nobody@example.com" })))
    }))

  it.effect("a token whose sub is empty or blank is 401, and records no user (issue 12, finding 10)", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const sub of ["", " ", "   ", "\t", "\n", " \r\n\t "]) {
        expectUnauthorized(yield* bearer(service, yield* signHs({ sub })))
        expect(yield* readUser(service, sub)).toBeUndefined()
      }
    }))

  it.effect(
    "a token whose sub is only whitespace is 401",
    () =>
      forAll(
        [fc.string({ unit: fc.constantFrom(" ", "\t", "\n", "\r", "\u00a0", "\u2003", "\ufeff"), maxLength: 20 })],
        ([sub]) =>
          Effect.gen(function*() {
            const service = yield* Service
            expectUnauthorized(yield* bearer(service, yield* signHs({ sub })))
          }),
        { numRuns: 50 }
      )
  )

  it.effect("a token not yet valid (nbf in the future) is 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectUnauthorized(yield* bearer(service, yield* signHs({ sub: "nbf-user", nbf: now() + 3600 })))
    }))

  it.effect("a token from the far future is 401 naming the claim: exp in the year 275760, iat an hour ahead (issue 22)", () =>
    Effect.gen(function*() {
      const service = yield* Service
      // the latest instant a Date can hold
      const farExp = yield* bearer(service, yield* signHs({ sub: "far-exp-user" }, undefined, { expiresIn: 8_640_000_000_000 }))
      expect(expectError(farExp, 401, "unauthorized").message).toMatch(/\bexp\b/)
      const aheadIat = yield* bearer(service, yield* signHs({ sub: "ahead-iat-user" }, undefined, { issuedAt: now() + 3600, expiresIn: now() + 7200 }))
      expect(expectError(aheadIat, 401, "unauthorized").message).toMatch(/\biat\b/)
      // the longest lifetime npm run token mints, 30 days, is accepted
      const issuedAt = now()
      const thirtyDays = yield* signHs({ sub: "thirty-days-user" }, undefined, { issuedAt, expiresIn: issuedAt + 30 * 86_400 })
      expect((yield* bearer(service, thirtyDays)).status).toBe(200)
    }))

  it.effect("a token signed with another secret is 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const other = yield* signHs({ sub: "wrong-signature" }, secretBytes("another-secret-of-enough-length-0123456789"))
      expectUnauthorized(yield* bearer(service, other))
    }))

  it.effect("a tampered payload (valid signature of other claims) is 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* signHs({ sub: "honest-user" })
      const [header, , signature] = token.split(".")
      const forged = `${header}.${b64({ sub: "honest-user", admin: true, exp: now() + 600 })}.${signature}`
      expectUnauthorized(yield* bearer(service, forged))
      expectUnauthorized(yield* bearer(service, forged, adminOnly))
    }))

  it.effect("alg none (unsigned tokens) is 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const claims = { sub: "alg-none-user", admin: true, exp: now() + 600, iat: now() }
      const valid = yield* signHs({ sub: "alg-none-user" })
      for (
        const token of [
          unsigned(claims),
          unsigned(claims, { alg: "None" }),
          unsigned(claims, { alg: "NONE", typ: "JWT" }),
          unsigned(claims, { alg: "none" }, valid.split(".")[2]),
          unsigned(claims, { alg: "HS256", typ: "JWT" }),
          unsigned(claims, { typ: "JWT" })
        ]
      ) {
        expectUnauthorized(yield* bearer(service, token))
      }
    }))

  it.effect("algorithms are pinned: HS384/HS512 with the right secret are 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectUnauthorized(yield* bearer(service, yield* signHs({ sub: "hs512-user" }, undefined, { alg: "HS512" })))
      expectUnauthorized(yield* bearer(service, yield* signHs({ sub: "hs384-user" }, undefined, { alg: "HS384" })))
    }))

  it.effect("an RS256 token is 401 where only the HS256 secret is configured", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const { privateKey } = yield* Effect.promise(() => jose.generateKeyPair("RS256"))
      const token = yield* Effect.promise(() =>
        new jose.SignJWT({ sub: "rs-user" }).setProtectedHeader({ alg: "RS256" }).setExpirationTime("10m").sign(privateKey)
      )
      expectUnauthorized(yield* bearer(service, token))
    }))

  it.effect("the user is recorded on first sight with the claims' email and name", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expect(yield* readUser(service, "first-sight")).toBeUndefined()
      const token = yield* Effect.promise(() => service.token({ sub: "first-sight", email: "first@example.com", name: "First Sight" }))
      expect((yield* bearer(service, token)).status).toBe(200)
      expect(yield* readUser(service, "first-sight")).toEqual({ id: "first-sight", email: "first@example.com", name: "First Sight" })
      // a second request changes nothing
      expect((yield* bearer(service, token)).status).toBe(200)
      expect(yield* readUser(service, "first-sight")).toEqual({ id: "first-sight", email: "first@example.com", name: "First Sight" })
      // claims without email or name record the id alone
      const bare = yield* Effect.promise(() => service.token({ sub: "bare-user" }))
      expect((yield* bearer(service, bare)).status).toBe(200)
      expect(yield* readUser(service, "bare-user")).toEqual({ id: "bare-user", email: null, name: null })
    }))

  it.effect("a refused token records no user", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectUnauthorized(yield* bearer(service, yield* signHs({ sub: "ghost-expired" }, undefined, { expiresIn: now() - 3600 })))
      expectUnauthorized(yield* bearer(service, unsigned({ sub: "ghost-none", exp: now() + 600 })))
      expectUnauthorized(
        yield* bearer(service, yield* signHs({ sub: "ghost-forged" }, secretBytes("not-the-secret-not-the-secret-not-the")))
      )
      expect(yield* readUser(service, "ghost-expired")).toBeUndefined()
      expect(yield* readUser(service, "ghost-none")).toBeUndefined()
      expect(yield* readUser(service, "ghost-forged")).toBeUndefined()
    }))

  it.effect("validly signed claims PostgreSQL cannot store (NUL in sub, email, name) are never a 5xx", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const failures: Array<string> = []
      for (
        const claims of [
          { sub: "nul\u0000sub" },
          { sub: "nul-email", email: "a\u0000@example.com" },
          { sub: "nul-name", name: "Bad\u0000Name" }
        ]
      ) {
        const response = yield* bearer(service, yield* signHs(claims))
        if (response.status >= 500) failures.push(`${JSON.stringify(claims)} -> ${response.status} ${JSON.stringify(response.body)}`)
        else if (response.status !== 200) expectErrorBody(response.body)
      }
      expect(failures).toEqual([])
    }))

  it.effect("include_banned: 403 for a plain user, 200 for the admin claim", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const plain = yield* Effect.promise(() => service.token({ sub: "plain-user" }))
      expectError(yield* bearer(service, plain, adminOnly), 403, "forbidden")
      expect((yield* bearer(service, plain, `${endpoint}/v2?include_banned=true`)).status).toBe(403)
      expect((yield* bearer(service, plain, `${endpoint}?include_banned=false`)).status).toBe(200)

      const admin = yield* Effect.promise(() => service.token({ sub: "claim-admin", admin: true }))
      const allowed = yield* bearer(service, admin, adminOnly)
      expect(allowed.status).toBe(200)
      expect(allowed.body).toEqual([])
      expect((yield* bearer(service, admin, `${endpoint}/v2?include_banned=true`)).status).toBe(200)
    }))

  it.effect("the admin claim must be the boolean true", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const value of ["true", 1, "yes", [true], { admin: true }]) {
        const token = yield* signHs({ sub: `not-quite-admin-${JSON.stringify(value)}`, admin: value })
        const response = yield* bearer(service, token, adminOnly)
        expect(response.status, `admin: ${JSON.stringify(value)}`).toBe(403)
        expectErrorBody(response.body, "forbidden")
      }
    }))

  it.effect("a 401 answer wins over a 403: refused tokens never reach the authorisation check", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectUnauthorized(yield* call(service, undefined, adminOnly))
      expectUnauthorized(yield* bearer(service, unsigned({ sub: "x", admin: true, exp: now() + 600 }), adminOnly))
    }))

  it.effect(
    "random printable strings as bearer tokens are always 401",
    () =>
      forAll(
        [fc.string({ maxLength: 300 })],
        ([token]) =>
          Effect.gen(function*() {
            const service = yield* Service
            expectUnauthorized(yield* call(service, `Bearer ${token}`))
          }),
        { numRuns: 100 }
      )
  )

  it.effect(
    "random JWT-shaped tokens (random header, claims and signature) are always 401",
    () =>
      forAll(
        [
          fc.record({
            alg: fc.oneof(fc.constantFrom("none", "HS256", "HS384", "HS512", "RS256", "ES256", "PS256", "EdDSA"), fc.string()),
            typ: fc.option(fc.constantFrom("JWT", "at+jwt"), { nil: undefined }),
            kid: fc.option(fc.string(), { nil: undefined })
          }),
          fc.record({
            sub: fc.oneof(fc.string({ minLength: 1 }), fc.integer()),
            exp: fc.oneof(fc.integer({ min: now() + 60, max: now() + 10_000_000 }), fc.constant(now() + 600)),
            admin: fc.boolean()
          }),
          fc.oneof(fc.uint8Array({ maxLength: 600 }).map((b) => Buffer.from(b).toString("base64url")), fc.constant(""))
        ],
        ([header, payload, signature]) =>
          Effect.gen(function*() {
            const service = yield* Service
            const token = `${b64(JSON.parse(JSON.stringify(header)))}.${b64(payload)}.${signature}`
            expectUnauthorized(yield* bearer(service, token))
            expectUnauthorized(yield* bearer(service, token, adminOnly))
          }),
        { numRuns: 100 }
      )
  )

  it.effect(
    "random bytes as the Authorization header (raw socket) are always 401",
    () =>
      forAll(
        [
          fc.boolean(),
          // what an HTTP header value may hold: HTAB, visible ASCII, space and obs-text (0x80-0xFF)
          fc.array(fc.oneof(fc.constant(0x09), fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0x80, max: 0xff })), {
            maxLength: 400
          })
        ],
        ([withScheme, bytes]) =>
          Effect.gen(function*() {
            const service = yield* Service
            const value = Buffer.concat([Buffer.from(withScheme ? "Bearer " : ""), Buffer.from(bytes)])
            const response = yield* rawGet(service.baseUrl, endpoint, [Buffer.concat([Buffer.from("Authorization: "), value])])
            expect(response.status).toBe(401)
            expectErrorBody(parseJson(response.body, "raw Authorization"), "unauthorized")
          }),
        { numRuns: 100 }
      )
  )
})

/** Site admins by subject, and a configured claim name instead of `admin`. */
const adminSettings = Service.layer((c) => ({
  ...c,
  auth: { ...c.auth, adminSubjects: new Set(["boss", "chief"]), adminClaim: "staff" }
}))

layer(adminSettings, { excludeTestServices: true })("admin settings", (it) => {
  it.effect("subjects listed in ADMIN_SUBJECTS are site admins", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const sub of ["boss", "chief"]) {
        const token = yield* signHs({ sub })
        const response = yield* bearer(service, token, adminOnly)
        expect(response.status, sub).toBe(200)
        expect(response.body).toEqual([])
      }
      expectError(yield* bearer(service, yield* signHs({ sub: "bosses" }), adminOnly), 403, "forbidden")
    }))

  it.effect("the configured claim makes its bearer an admin; the default `admin` claim then does not", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expect((yield* bearer(service, yield* signHs({ sub: "staffer", staff: true }), adminOnly)).status).toBe(200)
      // the harness's minting helper sets the configured claim
      expect((yield* bearer(service, yield* Effect.promise(() => service.token({ sub: "minted", admin: true })), adminOnly)).status)
        .toBe(200)
      expectError(yield* bearer(service, yield* signHs({ sub: "pretender", admin: true }), adminOnly), 403, "forbidden")
    }))

  it.effect("being an admin does not excuse an invalid token", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectUnauthorized(yield* bearer(service, yield* signHs({ sub: "boss" }, undefined, { expiresIn: now() - 3600 }), adminOnly))
      expectUnauthorized(yield* bearer(service, unsigned({ sub: "boss", exp: now() + 600 }), adminOnly))
    }))
})

const issuer = "https://id.example.test/"
const audience = "registry-api"

/** The service verifying against the loopback JWKS (the HS256 test secret stays configured too). */
const jwksDeployment = Layer.effect(
  Service,
  Effect.flatMap(JwksServer, (jwks) =>
    serviceOnFreshDatabase((c) => ({
      ...c,
      auth: { ...c.auth, jwksUrl: Option.some(jwks.url), issuer: Option.some(issuer), audience: Option.some(audience) }
    })))
).pipe(Layer.provideMerge(JwksServer.layer))

layer(jwksDeployment, { excludeTestServices: true })("JWKS with issuer and audience", (it) => {
  it.effect("an RS256 token from the provider with the right issuer and audience is 200, and its user recorded", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwks = yield* JwksServer
      const token = yield* Effect.promise(() =>
        jwks.sign({ sub: "oidc|123", email: "oidc@example.com", name: "Oidc User", iss: issuer, aud: audience })
      )
      const response = yield* bearer(service, token)
      expect(response.status).toBe(200)
      expect(response.body).toEqual([])
      expect(jwks.hits()).toBeGreaterThan(0)
      expect(yield* readUser(service, "oidc|123")).toEqual({ id: "oidc|123", email: "oidc@example.com", name: "Oidc User" })
      // an audience list containing ours is accepted too
      const multi = yield* Effect.promise(() => jwks.sign({ sub: "oidc|456", iss: issuer, aud: ["other-api", audience] }))
      expect((yield* bearer(service, multi)).status).toBe(200)
    }))

  it.effect("an RS256 token whose sub is empty or blank is 401, as under HS256 (issue 12, finding 10)", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwks = yield* JwksServer
      for (const sub of ["", " ", "\t\n"]) {
        const token = yield* Effect.promise(() => jwks.sign({ sub, iss: issuer, aud: audience }))
        expectUnauthorized(yield* bearer(service, token))
      }
    }))

  it.effect("a wrong or missing issuer is 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwks = yield* JwksServer
      for (const iss of ["https://evil.example.test/", "https://id.example.test", undefined]) {
        const token = yield* Effect.promise(() => jwks.sign({ sub: "wrong-iss", aud: audience, ...(iss ? { iss } : {}) }))
        expectUnauthorized(yield* bearer(service, token))
      }
    }))

  it.effect("a wrong or missing audience is 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwks = yield* JwksServer
      for (const aud of ["other-api", ["other-api", "another"], undefined]) {
        const token = yield* Effect.promise(() => jwks.sign({ sub: "wrong-aud", iss: issuer, ...(aud ? { aud } : {}) }))
        expectUnauthorized(yield* bearer(service, token))
      }
    }))

  it.effect("an expired RS256 token, or one without exp, is 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwks = yield* JwksServer
      const expired = yield* Effect.promise(() => jwks.sign({ sub: "rs-expired", iss: issuer, aud: audience }, { expiresIn: now() - 3600 }))
      expectUnauthorized(yield* bearer(service, expired))
      const noExp = yield* Effect.promise(() =>
        new jose.SignJWT({ sub: "rs-no-exp", iss: issuer, aud: audience })
          .setProtectedHeader({ alg: "RS256", kid: jwks.kid })
          .sign(jwks.privateKey)
      )
      expectUnauthorized(yield* bearer(service, noExp))
    }))

  it.effect("a token signed by another key under the provider's kid, or an unknown kid, is 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwks = yield* JwksServer
      const { privateKey } = yield* Effect.promise(() => jose.generateKeyPair("RS256"))
      const impostor = yield* Effect.promise(() =>
        new jose.SignJWT({ sub: "impostor", iss: issuer, aud: audience })
          .setProtectedHeader({ alg: "RS256", kid: jwks.kid })
          .setExpirationTime("10m")
          .sign(privateKey)
      )
      expectUnauthorized(yield* bearer(service, impostor))
      const unknownKid = yield* Effect.promise(() => jwks.sign({ sub: "unknown-kid", iss: issuer, aud: audience }, { kid: "no-such-key" }))
      expectUnauthorized(yield* bearer(service, unknownKid))
    }))

  it.effect("algorithm confusion: HS256 signed with the provider's public key is 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwks = yield* JwksServer
      const claims = { sub: "confused", iss: issuer, aud: audience, admin: true }
      // the PEM text, the PEM without trailing newline, and the raw modulus-bearing DER: each an HMAC "secret"
      const der = Buffer.from(jwks.publicKeyPem.replace(/-----[^-]+-----|\s/g, ""), "base64")
      for (const secret of [secretBytes(jwks.publicKeyPem), secretBytes(jwks.publicKeyPem.trim()), new Uint8Array(der)]) {
        const token = yield* signHs(claims, secret, { kid: jwks.kid })
        expectUnauthorized(yield* bearer(service, token))
        expectUnauthorized(yield* bearer(service, token, adminOnly))
      }
    }))

  it.effect("HS256 with the (still configured) shared secret is 401 once a JWKS is set", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectUnauthorized(yield* bearer(service, yield* signHs({ sub: "hs-user", iss: issuer, aud: audience })))
      expectUnauthorized(yield* bearer(service, yield* Effect.promise(() => service.token({ sub: "minted-hs" }))))
    }))

  it.effect("alg none with the right issuer and audience is 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwks = yield* JwksServer
      const claims = { sub: "none-user", iss: issuer, aud: audience, exp: now() + 600 }
      expectUnauthorized(yield* bearer(service, unsigned(claims)))
      expectUnauthorized(yield* bearer(service, unsigned(claims, { alg: "none", kid: jwks.kid })))
      expectUnauthorized(yield* bearer(service, unsigned(claims, { alg: "RS256", kid: jwks.kid })))
    }))

  it.effect("the admin claim of a provider's token makes a site admin; a plain provider token does not", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwks = yield* JwksServer
      const admin = yield* Effect.promise(() => jwks.sign({ sub: "oidc-admin", iss: issuer, aud: audience, admin: true }))
      expect((yield* bearer(service, admin, adminOnly)).status).toBe(200)
      const plain = yield* Effect.promise(() => jwks.sign({ sub: "oidc-plain", iss: issuer, aud: audience }))
      expectError(yield* bearer(service, plain, adminOnly), 403, "forbidden")
    }))

  it.effect(
    "random JWT-shaped tokens naming the provider's kid are always 401",
    () =>
      forAll(
        [
          fc.constantFrom("none", "HS256", "RS256", "RS512", "ES256", "PS256", "EdDSA"),
          fc.uint8Array({ maxLength: 300 })
        ],
        ([alg, signature]) =>
          Effect.gen(function*() {
            const service = yield* Service
            const jwks = yield* JwksServer
            const token = unsigned(
              { sub: "random", iss: issuer, aud: audience, exp: now() + 600 },
              { alg, kid: jwks.kid },
              Buffer.from(signature).toString("base64url")
            )
            expectUnauthorized(yield* bearer(service, token))
          }),
        { numRuns: 50 }
      )
  )
})
