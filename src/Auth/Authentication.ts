/**
 * The bearer security of the contract (Domain/Auth.ts), implemented: verify the JWT, record its
 * user on first sight, and provide the caller to the handlers.
 */
import { HttpServerRequest } from "@effect/platform"
import { Effect, Layer, Option, Redacted } from "effect"
import { AppConfig } from "../Config.ts"
import { Unauthorized } from "../Domain/ApiErrors.ts"
import { Authentication, OptionalAuthentication, type User } from "../Domain/Auth.ts"
import { JwtVerifier } from "./Jwt.ts"
import { UserRepo } from "./UserRepo.ts"

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
        return yield* new Unauthorized({ message: "The Authorization header must be 'Bearer <token>'" })
      }
      const claims = yield* verifier.verify(Redacted.value(token)).pipe(
        Effect.mapError((refused) => new Unauthorized({ message: refused.message }))
      )
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
        onNone: () => new Unauthorized({ message: "This endpoint needs an Authorization: Bearer <token> header" }),
        onSome: Effect.succeed
      }))
  }))
)

export const OptionalAuthenticationLive = Layer.effect(
  OptionalAuthentication,
  Effect.map(makeAuthenticate, (authenticate) => ({ bearer: authenticate }))
)
