/**
 * What every group of the registry's HttpApi shares. `AnyEndpoint` declares, once, the errors any
 * endpoint may answer: a malformed request (BadRequest) and a failure of the service's own
 * (InternalError). `registryApi(...groups)` is the HttpApi of those groups under that
 * declaration: `src/Api.ts` composes the whole API with it.
 *
 * What the edge answers before or instead of any handler (405, 413, 415, the database's 503) is
 * documented by ApiDocument.ts.
 */
import { HttpApi, type HttpApiGroup, HttpApiMiddleware } from "effect/http-api"
import { Layer } from "effect"
import { BadRequest, InternalError } from "./ApiErrors.ts"

/** The errors every endpoint may answer, and which its handlers may fail with. */
export class AnyEndpoint extends HttpApiMiddleware.Service<AnyEndpoint>()("AnyEndpoint", {
  error: [BadRequest, InternalError]
}) {
  /** It only declares: nothing to do on a request (a middleware is applied once, when its route is built). */
  static readonly layer = Layer.succeed(AnyEndpoint, (effect) => effect)
}

/** The HttpApi of `groups`, every endpoint of which may answer `AnyEndpoint`'s errors. */
export const registryApi = <const Groups extends readonly [HttpApiGroup.Constraint, ...Array<HttpApiGroup.Constraint>]>(
  ...groups: Groups
) => HttpApi.make("registry").add(...groups).middleware(AnyEndpoint)
