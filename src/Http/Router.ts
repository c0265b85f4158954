/**
 * The application's router. HttpApiBuilder, the documents and `/metrics` add their routes to it
 * as to the platform's (it is the HttpRouter service), and it puts each handler in the route
 * table's entry (Routes.ts). It dispatches a request on the route the table found when the
 * request arrived: nothing searches again.
 *
 * A handler runs to its end even when its client goes away, its answer dropped: interrupting it
 * would cancel its SQL statement, and the driver's cancel can land on the next statement the
 * connection runs, another request's. The platform runs each request uninterruptible and makes
 * a route interruptible on entry; here only the routes that read their own streamed bodies are
 * (a client that leaves an upload must stop the vendor request or the write it feeds).
 */
import { HttpRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { Context, Effect, Option, Tracer } from "effect"
import { CurrentExchange, type Exchange } from "./Exchange.ts"
import type { RouteTable } from "./Routes.ts"

type Handler = Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>

const routeNotFound = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.fail(new HttpServerError.HttpServerError({ reason: new HttpServerError.RouteNotFound({ request }) }))

/**
 * Runs the exchange's handler with what the handler reads from its context: the request the edge
 * hands on, its query, its path parameters, and the Exchange.
 */
export const dispatch = (exchange: Exchange): Handler => {
  const entry = exchange.resolved.entry
  if (entry === undefined) return routeNotFound(exchange.request)
  const route = entry.handler as HttpRouter.Route<unknown, unknown>
  return Effect.withFiber((fiber) => {
    // the server span, when a tracer made one, names its route as OpenTelemetry's conventions do
    const span = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
    if (span !== undefined && span._tag === "Span" && span.sampled) span.attribute("http.route", entry.info.pattern)
    // four overlays on the request's context: a merge would copy every service of the application
    const handler: Handler = Effect.updateContext(route.handler as Handler, (context: Context.Context<never>) =>
      context.pipe(
        Context.add(HttpServerRequest.HttpServerRequest, exchange.request),
        Context.add(HttpServerRequest.ParsedSearchParams, exchange.searchParams),
        Context.add(HttpRouter.RouteContext, { route, params: exchange.resolved.params }),
        Context.add(CurrentExchange, exchange)
      ))
    return entry.info.streamed ? Effect.interruptible(handler) : handler
  })
}

const toEffect = (
  handler: HttpServerResponse.HttpServerResponse | Handler | ((request: HttpServerRequest.HttpServerRequest) => Handler)
): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, HttpServerRequest.HttpServerRequest> =>
  HttpServerResponse.isHttpServerResponse(handler)
    ? Effect.succeed(handler)
    : Effect.isEffect(handler)
    ? handler
    : Effect.flatMap(HttpServerRequest.HttpServerRequest, handler)

type Router = HttpRouter.HttpRouter

/**
 * The HttpRouter whose routes are the entries of `table`: the platform's, with what adds routes
 * putting them in the table instead. A route the table does not declare is refused at start.
 */
export const makeRouter = (table: RouteTable): Effect.Effect<Router> =>
  Effect.map(HttpRouter.make, (platform) => {
    const addAll = (routes: ReadonlyArray<HttpRouter.Route<any, any>>) =>
      Effect.suspend(() => {
        for (const route of routes) {
          const entry = table.entryOf(route.method, route.path)
          if (entry === undefined || Option.isSome(route.prefix)) {
            return Effect.die(new Error(`The route ${route.method} ${route.path} is not in the route table (Http/Routes.ts)`))
          }
          entry.handler = route
        }
        return Effect.void
      })
    return HttpRouter.HttpRouter.of({
      ...platform,
      prefixed: () => {
        throw new Error("The route table has no prefixed routes")
      },
      addAll: addAll as Router["addAll"],
      add: ((method: HttpRouter.Route<any, any>["method"], path: HttpRouter.PathInput, handler: never, options?: { readonly uninterruptible?: boolean | undefined }) =>
        addAll([HttpRouter.route(method, path, toEffect(handler), options)])) as unknown as Router["add"],
      addGlobalMiddleware: () => Effect.die(new Error("The edge's pieces are listed in Http/Edge.ts, not added as global middleware")),
      asHttpEffect: () => Effect.die(new Error("The edge dispatches (Http/Edge.ts)"))
    })
  })
