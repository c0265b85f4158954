/**
 * Renames the clients' aliases (Compat/Aliases.ts) before HttpApi decodes.
 *
 * HttpApi reads the query from the parsed search parameters, and its payload decoder reads the
 * body through the request's `json`: the handler is given the renamed parameters (and a request
 * with the renamed query in its URL), or a request whose body reads as the renamed JSON. A body
 * that is not JSON, or cannot be read, is left to the decoder, which answers it exactly as
 * without this piece. Requests on other routes go through untouched. A body field that does not
 * decode is named as the client sent it: by its alias when it came under one.
 */
import type { HttpServerRequest } from "effect/http"
import { HttpApiError } from "effect/http-api"
import { Cause, Effect, Option, Result } from "effect"
import { BadRequest } from "../Domain/ApiErrors.ts"
import { aliasRoutes, type AliasWords, type BodyPlace, renameBody, renameKeys, renameQuery, type Renames } from "../Compat/Aliases.ts"
import type { Exchange, Next, Piece } from "./Exchange.ts"
import { describeDecodeError } from "./Failures.ts"

/** HttpApi reads a body without a content type as JSON, too. */
const isJson = (request: HttpServerRequest.HttpServerRequest) =>
  (request.headers["content-type"] ?? "application/json").toLowerCase().includes("application/json")

/** The request with its body reading as `body` (the original's stream is read once, by the body checks). */
const withJsonBody = (request: HttpServerRequest.HttpServerRequest, body: unknown): HttpServerRequest.HttpServerRequest =>
  Object.create(request, {
    json: { value: Effect.succeed(body) },
    text: { value: Effect.sync(() => JSON.stringify(body)) }
  })

const renamingQuery = (exchange: Exchange, renames: Renames) => {
  const { request } = exchange
  const at = request.url.indexOf("?")
  if (at === -1) return
  const query = request.url.slice(at + 1)
  const renamed = renameQuery(query, renames)
  if (renamed === query) return
  exchange.request = request.modify({ url: `${request.url.slice(0, at)}?${renamed}` })
  exchange.searchParams = renameKeys(exchange.searchParams, renames) as Exchange["searchParams"]
}

const renamingBody = (next: Next, exchange: Exchange, places: ReadonlyArray<BodyPlace>) => {
  const { request } = exchange
  if (!isJson(request)) return next(exchange)
  return Effect.flatMap(Effect.result(request.json), (read) => {
    // unreadable: the decoder reads the same cached failure and answers it as ever
    if (Result.isFailure(read)) return next(exchange)
    const body = renameBody(read.success, places)
    if (body === read.success) return next(exchange)
    exchange.request = withJsonBody(request, body)
    const named = namingAsSent(read.success, places)
    // HttpApiBuilder fails a body that does not decode with a defect (Failures.ts reads both)
    return Effect.catchCause(next(exchange), (cause) => {
      const failure = Option.orElse(Cause.findErrorOption(cause), () => Result.getSuccess(Cause.findDefect(cause)))
      return Option.isSome(failure) && HttpApiError.HttpApiSchemaError.is(failure.value) && failure.value.kind === "Payload"
        ? Effect.fail(new BadRequest({ message: describeDecodeError(failure.value, named) }))
        : Effect.failCause(cause)
    })
  })
}

/** A decode path with each field the client sent under an alias named by that alias. */
const namingAsSent = (sent: unknown, places: ReadonlyArray<BodyPlace>) => (path: ReadonlyArray<string>): ReadonlyArray<string> => {
  for (const place of places) {
    if (path.length <= place.at.length || !place.at.every((key, i) => path[i] === key)) continue
    const object = place.at.reduce<unknown>((value, key) => (isObject(value) ? value[key] : undefined), sent)
    if (!isObject(object)) continue
    const field = path[place.at.length]!
    const alias = [...place.renames].find(([alias, name]) => name === field && alias in object)?.[0]
    if (alias !== undefined) return [...place.at, alias, ...path.slice(place.at.length + 1)]
  }
  return path
}

const isObject = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)

/** The piece renaming the aliases of `words`; none when both words are off. */
export const aliasRewriting = (words: AliasWords): Piece | undefined => {
  const routes = new Map(aliasRoutes(words).map((route) => [`${route.method} ${route.path}`, route]))
  if (routes.size === 0) return undefined
  return (next) => (exchange) => {
    const route = exchange.route === undefined ? undefined : routes.get(exchange.route.label)
    if (route === undefined) return next(exchange)
    if (route.query !== undefined) {
      renamingQuery(exchange, route.query)
      return next(exchange)
    }
    return route.body === undefined ? next(exchange) : renamingBody(next, exchange, route.body)
  }
}
