/**
 * The HTTP middleware that renames the clients' aliases (Aliases.ts) before HttpApi decodes.
 *
 * HttpApi's router reads the query from the request's `url`, and its payload decoder reads the
 * body through the request's `json`: the handlers are given a request with the renamed query
 * (`modify({ url })`) or one whose body reads as the renamed JSON. A body that is not JSON, or
 * cannot be read, is left to the decoder, which answers it exactly as without this middleware.
 * Requests on other routes go through untouched.
 */
import { HttpServerRequest, type HttpServerResponse } from "effect/http"
import { Effect, Result } from "effect"
import { type AliasRoute, aliasRoutes, type AliasWords, renameBody, renameQuery } from "./Aliases.ts"

interface CompiledRoute {
  readonly route: AliasRoute
  readonly pattern: RegExp
}

const compile = (route: AliasRoute): CompiledRoute => ({
  route,
  pattern: new RegExp(`^${route.path.replace(/:[^/]+/g, "[^/]+")}/?$`)
})

/** HttpApi reads a body without a content type as JSON, too. */
const isJson = (request: HttpServerRequest.HttpServerRequest) =>
  (request.headers["content-type"] ?? "application/json").toLowerCase().includes("application/json")

/** The request with its body reading as `body` (the original's stream is read once, by this middleware). */
const withJsonBody = (request: HttpServerRequest.HttpServerRequest, body: unknown): HttpServerRequest.HttpServerRequest =>
  Object.create(request, {
    json: { value: Effect.succeed(body) },
    text: { value: Effect.sync(() => JSON.stringify(body)) }
  })

/** The application a middleware wraps: what answers a request. */
type App<E, R> = Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>

const renamingQuery = <E, R>(app: App<E, R>, request: HttpServerRequest.HttpServerRequest, route: AliasRoute) => {
  const at = request.url.indexOf("?")
  if (at === -1 || route.query === undefined) return app
  const query = request.url.slice(at + 1)
  const renamed = renameQuery(query, route.query)
  return renamed === query
    ? app
    : Effect.provideService(app, HttpServerRequest.HttpServerRequest, request.modify({ url: `${request.url.slice(0, at)}?${renamed}` }))
}

const renamingBody = <E, R>(app: App<E, R>, request: HttpServerRequest.HttpServerRequest, route: AliasRoute) => {
  const places = route.body
  if (places === undefined || !isJson(request)) return app
  return Effect.flatMap(Effect.result(request.json), (read) => {
    // unreadable: the decoder reads the same cached failure and answers it as ever
    if (Result.isFailure(read)) return app
    const body = renameBody(read.success, places)
    return body === read.success ? app : Effect.provideService(app, HttpServerRequest.HttpServerRequest, withJsonBody(request, body))
  })
}

/** The middleware renaming the aliases of `words`; the identity when both words are off. */
export const aliasRewriting = (words: AliasWords) => {
  const routes = aliasRoutes(words).map(compile)
  return <E, R>(app: App<E, R>): App<E, R | HttpServerRequest.HttpServerRequest> =>
    routes.length === 0 ? app : Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const method = request.method
      const path = request.url.split("?", 1)[0]!
      const found = routes.find((r) => r.route.method === method && r.pattern.test(path))
      if (found === undefined) return app
      return found.route.query !== undefined ? renamingQuery(app, request, found.route) : renamingBody(app, request, found.route)
    })
}
