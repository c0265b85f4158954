import { HttpApiMiddleware, HttpApiSecurity, HttpServerRequest, OpenApi } from "@effect/platform"
import { Effect, Layer, Redacted } from "effect"
import { AppConfig } from "../Config.ts"
import { Unauthorized } from "../Errors.ts"
import { CurrentUser } from "./CurrentUser.ts"
import { JwtVerifier } from "./Jwt.ts"
import { UserRepo } from "./UserRepo.ts"

/** Bearer JWT authentication: endpoints that declare it run with the caller as `CurrentUser`. */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Authentication", {
  failure: Unauthorized,
  provides: CurrentUser,
  security: { bearer: HttpApiSecurity.bearer.pipe(HttpApiSecurity.annotate(OpenApi.Format, "JWT")) }
}) {}

const unauthorized = (message: string) => new Unauthorized({ message })

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const verifier = yield* JwtVerifier
    const users = yield* UserRepo
    const { adminSubjects } = (yield* AppConfig).auth
    return {
      bearer: (token) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const header = request.headers.authorization
          if (header === undefined) return yield* unauthorized("This endpoint needs an Authorization: Bearer <token> header")
          if (!/^Bearer [^\s]+$/.test(header)) {
            return yield* unauthorized("The Authorization header must be 'Bearer <token>'")
          }
          const claims = yield* verifier.verify(Redacted.value(token)).pipe(Effect.mapError(unauthorized))
          yield* users.recordSeen(claims)
          return {
            id: claims.sub,
            email: claims.email,
            name: claims.name,
            isSiteAdmin: claims.admin || adminSubjects.has(claims.sub)
          }
        })
    }
  })
)
