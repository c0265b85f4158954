/**
 * The bearer security of the contract (Domain/Auth.ts), implemented: verify the JWT, record its
 * user on first sight, and provide the caller to the handlers.
 */
import { HttpServerRequest } from "effect/http"
import { Effect, Layer, Option, Redacted } from "effect"
import { AppConfig } from "../Config.ts"
import { RateLimited, Unauthorized } from "../Domain/ApiErrors.ts"
import { failAnswered } from "../Domain/Answers.ts"
import { ApiKeyRepo } from "../ApiKeys/Repo.ts"
import { apiKeyHeader, Authentication, CurrentUser, KeyOrBearerAuthentication, OptionalAuthentication, type User, Viewer } from "../Domain/Auth.ts"
import { noteUser } from "../Http/Exchange.ts"
import { AuthFailures, type TooManyFailures } from "./Failures.ts"
import { JwtVerifier } from "./Jwt.ts"
import { UserRepo } from "./UserRepo.ts"

const rateLimited = (e: TooManyFailures) => new RateLimited({ message: e.message, retryAfter: e.retryAfterSeconds })

/**
 * Runs a credential's check, always: one that verifies proceeds whatever its address did before.
 * Each 401 counts against the address, and past the limit a 401 is answered 429.
 */
const makeGuard = Effect.map(AuthFailures, (failures) =>
  <A, R>(check: Effect.Effect<A, Unauthorized, R>) =>
    failures.guard(check, (e) => e instanceof Unauthorized).pipe(
      Effect.catchTag("TooManyFailures", (e) => failAnswered(rateLimited(e)))
    ))

/** Verifies the request's bearer token and records its user; `None` when there is no header. */
const makeAuthenticate = Effect.gen(function*() {
  const verifier = yield* JwtVerifier
  const users = yield* UserRepo
  const guard = yield* makeGuard
  const { adminSubjects } = (yield* AppConfig).auth
  return (token: Redacted.Redacted) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const header = request.headers.authorization
      if (header === undefined) return Option.none<User>()
      const claims = yield* guard(Effect.suspend(() =>
        /^Bearer [^\s]+$/.test(header)
          ? verifier.verify(Redacted.value(token)).pipe(
            Effect.mapError((refused) => new Unauthorized({ message: refused.message }))
          )
          : Effect.fail(new Unauthorized({ message: "The Authorization header must be 'Bearer <token>'" }))
      ))
      yield* users.recordSeen(claims)
      yield* noteUser(claims.sub)
      return Option.some<User>({
        id: claims.sub,
        email: claims.email,
        name: claims.name,
        isSiteAdmin: claims.admin || adminSubjects.has(claims.sub)
      })
    })
})

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.map(makeAuthenticate, (authenticate) =>
    Authentication.of({
      bearer: (httpEffect, { credential }) =>
        Effect.gen(function*() {
          const user = yield* authenticate(credential)
          if (Option.isNone(user)) {
            return yield* new Unauthorized({ message: "This endpoint needs an Authorization: Bearer <token> header" })
          }
          return yield* Effect.provideService(httpEffect, CurrentUser, user.value)
        })
    }))
)

export const OptionalAuthenticationLive = Layer.effect(
  OptionalAuthentication,
  Effect.map(makeAuthenticate, (authenticate) =>
    OptionalAuthentication.of({
      bearer: (httpEffect, { credential }) =>
        Effect.flatMap(authenticate(credential), (viewer) => Effect.provideService(httpEffect, Viewer, viewer))
    }))
)

/** The user of an unrevoked API key; any other value is 401, the same answer as a wrong bearer token. */
const makeAuthenticateKey = Effect.gen(function*() {
  const keys = yield* ApiKeyRepo
  const guard = yield* makeGuard
  const { adminSubjects } = (yield* AppConfig).auth
  return (key: Redacted.Redacted) =>
    guard(Effect.flatMap(keys.verify(key), Option.match({
      onNone: () => Effect.fail(new Unauthorized({ message: `The ${apiKeyHeader} header is not a valid API key` })),
      // a key carries no claims: only the admin setting can make its user a site admin
      onSome: (owner) => Effect.as(noteUser(owner.id), { ...owner, isSiteAdmin: adminSubjects.has(owner.id) })
    })))
})

/**
 * HttpApiBuilder tries the schemes in their order and answers with the last one's outcome. Which
 * credential counts depends on both headers (Authorization first, as the host's API nodes send
 * only one), so the choice is made once, in the last scheme; the first only hands over.
 */
export const KeyOrBearerAuthenticationLive = Layer.effect(
  KeyOrBearerAuthentication,
  Effect.gen(function*() {
    const authenticateBearer = yield* makeAuthenticate
    const authenticateKey = yield* makeAuthenticateKey
    const missing = new Unauthorized({
      message: `This endpoint needs an Authorization: Bearer <token> header or an ${apiKeyHeader} header`
    })
    const user = (key: Redacted.Redacted) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        const authorization = request.headers.authorization
        if (authorization !== undefined) {
          return Effect.flatMap(
            authenticateBearer(Redacted.make(authorization.slice("Bearer ".length))),
            Option.match({ onNone: () => Effect.fail(missing), onSome: Effect.succeed })
          )
        }
        return Redacted.value(key) === "" ? Effect.fail(missing) : authenticateKey(key)
      })
    return KeyOrBearerAuthentication.of({
      bearer: () => Effect.fail(missing),
      apiKey: (httpEffect, { credential }) =>
        Effect.flatMap(user(credential), (caller) => Effect.provideService(httpEffect, CurrentUser, caller))
    })
  })
)
