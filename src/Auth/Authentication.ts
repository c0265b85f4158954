import { HttpApiMiddleware, HttpApiSecurity, HttpServerRequest, OpenApi } from "@effect/platform"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { AppConfig } from "../Config.ts"
import { Unauthorized } from "../Errors.ts"
import { CurrentUser, type User } from "./CurrentUser.ts"
import { JwtVerifier } from "./Jwt.ts"
import { UserRepo } from "./UserRepo.ts"

const bearerSecurity = HttpApiSecurity.bearer.pipe(HttpApiSecurity.annotate(OpenApi.Format, "JWT"))

/** Bearer JWT authentication: endpoints that declare it run with the caller as `CurrentUser`. */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Authentication", {
  failure: Unauthorized,
  provides: CurrentUser,
  security: { bearer: bearerSecurity }
}) {}

/**
 * For public endpoints that show more to some callers: no Authorization header is an anonymous
 * caller (`Option.none()`), a header that does not verify is still 401.
 */
export class Viewer extends Context.Tag("Viewer")<Viewer, Option.Option<User>>() {}

export class OptionalAuthentication extends HttpApiMiddleware.Tag<OptionalAuthentication>()("OptionalAuthentication", {
  failure: Unauthorized,
  provides: Viewer,
  security: { bearer: bearerSecurity }
}) {}

const unauthorized = (message: string) => new Unauthorized({ message })

/** Verifies the request's bearer token and records its user; `None` when there is no header. */
const makeAuthenticate = Effect.gen(function*() {
  const verifier = yield* JwtVerifier
  const users = yield* UserRepo
  const { adminSubjects } = (yield* AppConfig).auth
  return (token: Redacted.Redacted) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const header = request.headers.authorization
      if (header === undefined) return Option.none<User>()
      if (!/^Bearer [^\s]+$/.test(header)) {
        return yield* unauthorized("The Authorization header must be 'Bearer <token>'")
      }
      const claims = yield* verifier.verify(Redacted.value(token)).pipe(Effect.mapError(unauthorized))
      yield* users.recordSeen(claims)
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
  Effect.map(makeAuthenticate, (authenticate) => ({
    bearer: (token: Redacted.Redacted) =>
      Effect.flatMap(authenticate(token), Option.match({
        onNone: () => unauthorized("This endpoint needs an Authorization: Bearer <token> header"),
        onSome: Effect.succeed
      }))
  }))
)

export const OptionalAuthenticationLive = Layer.effect(
  OptionalAuthentication,
  Effect.map(makeAuthenticate, (authenticate) => ({ bearer: authenticate }))
)
