/**
 * One request as the edge sees it: made once, when the request enters the edge (Edge.ts), with
 * its route as the table found it on arrival (Routes.ts), and handed to every edge piece in turn.
 * The pieces before the handler may give it another request to hand on (a body read, aliases
 * renamed); the router provides that one to the handler (Router.ts).
 */
import type { HttpServerRequest, HttpServerResponse } from "effect/http"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Context, Effect, Option } from "effect"
import type * as http from "node:http"
import type { Resolved, RouteInfo } from "./Routes.ts"

export interface Exchange {
  /** The request the handler is given: the arrived one, or one a piece made of it. */
  request: HttpServerRequest.HttpServerRequest
  /** Its query, parsed once on arrival; renamed by the aliases piece. */
  searchParams: Readonly<Record<string, string | Array<string>>>
  readonly incoming: http.IncomingMessage
  readonly outgoing: http.ServerResponse
  readonly method: string
  /** The path, without the query (signed URLs carry their signature there). */
  readonly path: string
  readonly resolved: Resolved
  /** The route, or undefined: no route for this method and path. */
  readonly route: RouteInfo | undefined
  /** `performance.now()` at the request's arrival in the edge. */
  readonly started: number
  /** X-Request-Id (RequestId.ts). */
  id: string
  /** Who made the request, as authentication learnt it (`noteUser`, `noteToken`), for the access line. */
  userId: string | undefined
  tokenId: string | undefined
}

/** The request's Exchange, in the handler's context (Router.ts provides it). */
export class CurrentExchange extends Context.Service<CurrentExchange, Exchange>()("Http/Exchange") {}

/** A new Exchange for `request`, its route as `resolve` found it on arrival. */
export const makeExchange = (
  request: HttpServerRequest.HttpServerRequest,
  resolve: (incoming: http.IncomingMessage) => Resolved
): Exchange => {
  const incoming = NodeHttpServerRequest.toIncomingMessage(request) as http.IncomingMessage
  const resolved = resolve(incoming)
  const url = request.url
  const query = url.indexOf("?")
  return {
    request,
    searchParams: resolved.searchParams,
    incoming,
    outgoing: NodeHttpServerRequest.toServerResponse(request) as http.ServerResponse,
    method: request.method,
    path: query === -1 ? url : url.slice(0, query),
    resolved,
    route: resolved.entry?.info,
    started: performance.now(),
    id: "",
    userId: undefined,
    tokenId: undefined
  }
}

const noted = (note: (exchange: Exchange) => void) =>
  Effect.map(Effect.serviceOption(CurrentExchange), (exchange) => {
    if (Option.isSome(exchange)) note(exchange.value)
  })

/** Records the request's user (a token's `sub`, an API key's owner); nothing outside a request. */
export const noteUser = (userId: string) => noted((exchange) => (exchange.userId = userId))

/** Records the personal access token (its id, never its value) a request authenticated with. */
export const noteToken = (tokenId: string) => noted((exchange) => (exchange.tokenId = tokenId))

/** What answers an exchange: the handler, or the pieces of the edge still to come before it. */
export type Next = (exchange: Exchange) => Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>

/** A piece of the edge (Edge.ts): it acts before and after the rest of the list. */
export type Piece = (next: Next) => Next
