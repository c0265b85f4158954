/**
 * Who calls (CONTRACT.md, "Identity and roles"): the bearer security of the contract and what it
 * provides to handlers. The implementations (JWT verification, recording users) are in src/Auth.
 */
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Context, type Option } from "effect"
import { Unauthorized } from "./ApiErrors.ts"

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
  failure: Unauthorized,
  provides: CurrentUser,
  security: { bearer }
}) {}

/** Bearer JWT authentication that lets anonymous callers through, as `Viewer`. */
export class OptionalAuthentication extends HttpApiMiddleware.Tag<OptionalAuthentication>()("OptionalAuthentication", {
  failure: Unauthorized,
  provides: Viewer,
  security: { bearer }
}) {}
