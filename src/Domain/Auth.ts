/**
 * Who calls (CONTRACT.md, "Identity and roles"): the bearer security of the contract and what it
 * provides to handlers. The implementations (JWT verification, recording users) are in src/Auth.
 */
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Context, type Option, Schema } from "effect"
import { RateLimited, Unauthorized } from "./ApiErrors.ts"

/** A credential that does not verify, or too many of them from the caller's address. */
const AuthenticationFailure = Schema.Union(Unauthorized, RateLimited)

/** The authenticated caller of a request. */
export interface User {
  /** The token's `sub`. */
  readonly id: string
  readonly email: string | undefined
  readonly name: string | undefined
  readonly isSiteAdmin: boolean
}

export class CurrentUser extends Context.Tag("CurrentUser")<CurrentUser, User>() {}

/**
 * For public endpoints that show more to some callers: no Authorization header is an anonymous
 * caller (`Option.none()`), a header that does not verify is still 401.
 */
export class Viewer extends Context.Tag("Viewer")<Viewer, Option.Option<User>>() {}

const bearer = HttpApiSecurity.bearer.pipe(HttpApiSecurity.annotate(OpenApi.Format, "JWT"))

/** Bearer JWT authentication: endpoints that declare it run with the caller as `CurrentUser`. */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Authentication", {
  failure: AuthenticationFailure,
  provides: CurrentUser,
  security: { bearer }
}) {}

/** The header of a user API key (the host's API nodes send it when the user has no login token). */
export const apiKeyHeader = "X-API-KEY"

const apiKey = HttpApiSecurity.apiKey({ in: "header", key: apiKeyHeader }).pipe(
  HttpApiSecurity.annotate(OpenApi.Description, "A user API key (POST /users/api-keys)")
)

/**
 * A bearer JWT or a user API key: endpoints that declare it run with the caller as `CurrentUser`,
 * whichever of the two the request carries. `Authorization` is read first, as the host's API
 * nodes send only one of them.
 */
export class KeyOrBearerAuthentication extends HttpApiMiddleware.Tag<KeyOrBearerAuthentication>()("KeyOrBearerAuthentication", {
  failure: AuthenticationFailure,
  provides: CurrentUser,
  security: { bearer, apiKey }
}) {}

/** Bearer JWT authentication that lets anonymous callers through, as `Viewer`. */
export class OptionalAuthentication extends HttpApiMiddleware.Tag<OptionalAuthentication>()("OptionalAuthentication", {
  failure: AuthenticationFailure,
  provides: Viewer,
  security: { bearer }
}) {}
