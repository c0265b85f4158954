/**
 * Who calls (CONTRACT.md, "Identity and roles"): the bearer security of the contract and what it
 * provides to handlers. The implementations (JWT verification, recording users) are in src/Auth.
 */
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "effect/http-api"
import { Context, type Option } from "effect"
import { RateLimited, Unauthorized } from "./ApiErrors.ts"

/** A credential that does not verify, or too many of them from the caller's address. */
const AuthenticationFailure = [Unauthorized, RateLimited] as const

/** The authenticated caller of a request. */
export interface User {
  /** The token's `sub`. */
  readonly id: string
  readonly email: string | undefined
  readonly name: string | undefined
  readonly isSiteAdmin: boolean
  /** The API key that authenticated the request (X-API-KEY); absent for a bearer token. */
  readonly apiKeyId?: string | undefined
}

export class CurrentUser extends Context.Service<CurrentUser, User>()("CurrentUser") {}

/**
 * For public endpoints that show more to some callers: no Authorization header is an anonymous
 * caller (`Option.none()`), a header that does not verify is still 401.
 */
export class Viewer extends Context.Service<Viewer, Option.Option<User>>()("Viewer") {}

/**
 * The bearer scheme, named `bearer` in the document as it always was (Effect 4's
 * `HttpApiSecurity.bearer` names it `Bearer`, which the /docs reference does not take for bearer
 * and shows as basic). The Authorization header's scheme is matched regardless of case.
 */
const bearer = HttpApiSecurity.http({ scheme: "bearer" }).pipe(HttpApiSecurity.annotate(OpenApi.Format, "JWT"))

/** Bearer JWT authentication: endpoints that declare it run with the caller as `CurrentUser`. */
export class Authentication extends HttpApiMiddleware.Service<Authentication, { provides: CurrentUser }>()("Authentication", {
  error: AuthenticationFailure,
  security: { bearer }
}) {}

/** The header of a user API key (the host's API nodes send it when the user has no login token). */
export const apiKeyHeader = "X-API-KEY"

const apiKey = HttpApiSecurity.apiKey({ in: "header", key: apiKeyHeader }).pipe(
  HttpApiSecurity.annotate(OpenApi.Description, "A user API key (POST /customers/api-keys)")
)

/**
 * A bearer JWT or a user API key: endpoints that declare it run with the caller as `CurrentUser`,
 * whichever of the two the request carries. `Authorization` is read first, as the host's API
 * nodes send only one of them.
 */
export class KeyOrBearerAuthentication extends HttpApiMiddleware.Service<KeyOrBearerAuthentication, { provides: CurrentUser }>()("KeyOrBearerAuthentication", {
  error: AuthenticationFailure,
  security: { bearer, apiKey }
}) {}

/** Bearer JWT authentication that lets anonymous callers through, as `Viewer`. */
export class OptionalAuthentication extends HttpApiMiddleware.Service<OptionalAuthentication, { provides: Viewer }>()("OptionalAuthentication", {
  error: AuthenticationFailure,
  security: { bearer }
}) {}
