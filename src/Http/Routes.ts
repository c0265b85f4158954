/**
 * The one route table. Every route the service serves is in it (the Api's endpoints, the
 * documents, `/metrics`), with what the edge needs to know of it: whether it reads its own body
 * as a stream, and whether the edge validates its answers. A request's route is found once, when
 * Node hands the request over (NodeServer.ts), by the radix tree the platform's router uses
 * (FindMyWay), and kept with the request: the router dispatches on it and every edge piece reads
 * it from the request's Exchange. Nothing searches the table again for that request.
 */
import * as FindMyWay from "effect/http/FindMyWay"
import { Context, Option } from "effect"
import type * as http from "node:http"
import { Revalidated, StreamedBody } from "../Domain/HttpHints.ts"

/** What a route is, for the edge. */
export interface RouteInfo {
  readonly method: string
  /** The declared pattern (`/nodes/:nodeId`): what logs, metrics and spans name. */
  readonly pattern: string
  /** `GET /nodes/:nodeId`. */
  readonly label: string
  /**
   * The handler reads the body itself, as a stream, under its own limits (uploads): no JSON
   * limit or checks, no overall arrival limit, and it stops when its client leaves.
   */
  readonly streamed: boolean
  /** The Cache-Control of answers the edge validates itself (ETag of the body, 304); none for the others. */
  readonly revalidate: string | undefined
  /** Its body is the same on every answer (the documents): compressed once, at the highest levels. */
  readonly stable: boolean
  /** An HTML page of this service's (the API reference): it gets a content security policy of its own scripts. */
  readonly page: boolean
}

/** The edge's knowledge of a route that is not an Api endpoint (the documents). */
export type ExtraRoute = Pick<RouteInfo, "method" | "pattern"> & Partial<Pick<RouteInfo, "streamed" | "revalidate" | "stable" | "page">>

/** A route of the table, and its handler once the router has it. */
export interface Entry {
  readonly info: RouteInfo
  handler: unknown
}

/** A request's route, as found when it arrived. */
export interface Resolved {
  readonly entry: Entry | undefined
  readonly params: Readonly<Record<string, string | undefined>>
  readonly searchParams: Readonly<Record<string, string | Array<string>>>
}

const unmatched: Resolved = { entry: undefined, params: {}, searchParams: {} }

const infoOf = (route: ExtraRoute): RouteInfo => ({
  method: route.method,
  pattern: route.pattern,
  label: `${route.method} ${route.pattern}`,
  streamed: route.streamed ?? false,
  revalidate: route.revalidate,
  stable: route.stable ?? false,
  page: route.page ?? false
})

/** What the table reads of an Api: its endpoints' methods, paths and annotations. */
interface Declared {
  readonly groups: Readonly<Record<string, { readonly endpoints: Readonly<Record<string, DeclaredEndpoint>> }>>
}
interface DeclaredEndpoint {
  readonly method: string
  readonly path: string
  readonly annotations: Context.Context<never>
}

/** The routes an Api declares, each with its endpoint's hints (Domain/HttpHints.ts). */
export const declaredRoutes = (api: Declared): ReadonlyArray<ExtraRoute> =>
  Object.values(api.groups).flatMap((group) =>
    Object.values(group.endpoints).map((endpoint) => ({
      method: endpoint.method,
      pattern: endpoint.path,
      streamed: Context.getOption(endpoint.annotations, StreamedBody).pipe(Option.isSome),
      revalidate: Option.getOrUndefined(Context.getOption(endpoint.annotations, Revalidated))
    }))
  )

const methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const

export interface RouteTable {
  /** The route of `method` and `url` (HEAD answered by GET's), or `unmatched`. */
  readonly find: (method: string, url: string) => Resolved
  /** The request's route: found once, on the first call, and kept with the Node request. */
  readonly resolve: (incoming: http.IncomingMessage) => Resolved
  /** The methods `url` has routes for: a path known under another method answers 405. */
  readonly allowedMethods: (url: string) => ReadonlyArray<string>
  /** The table's entry of `method` and `pattern`, to give it its handler (Router.ts). */
  readonly entryOf: (method: string, pattern: string) => Entry | undefined
}

/**
 * A table of `routes`; a route declared twice is a mistake, refused at start. `aliasesOf` gives
 * the other patterns a route answers under (the clients' path aliases, Compat/Aliases.ts): they
 * find the very route, so everything after routing treats the request as the route's own.
 */
export const makeRouteTable = (
  routes: ReadonlyArray<ExtraRoute>,
  aliasesOf: (pattern: string) => ReadonlyArray<string> = () => []
): RouteTable => {
  const router = FindMyWay.make<Entry>()
  const byKey = new Map<string, Entry>()
  for (const route of routes) {
    const info = infoOf(route)
    if (byKey.has(info.label)) throw new Error(`The route ${info.label} is declared twice`)
    const entry: Entry = { info, handler: undefined }
    byKey.set(info.label, entry)
    for (const pattern of [info.pattern, ...aliasesOf(info.pattern)]) {
      router.on(info.method, pattern as FindMyWay.PathInput, entry)
    }
  }
  const found = (result: FindMyWay.FindResult<Entry> | undefined): Resolved | undefined =>
    result === undefined || result.handler.handler === undefined
      ? undefined
      : { entry: result.handler, params: result.params, searchParams: result.searchParams }
  const find = (method: string, url: string): Resolved =>
    found(router.find(method, url)) ?? (method === "HEAD" ? found(router.find("GET", url)) : undefined) ?? unmatched
  const known = new WeakMap<http.IncomingMessage, Resolved>()
  return {
    find,
    resolve: (incoming) => {
      let resolved = known.get(incoming)
      if (resolved === undefined) {
        resolved = find(incoming.method ?? "GET", incoming.url ?? "/")
        known.set(incoming, resolved)
      }
      return resolved
    },
    allowedMethods: (url) => methods.filter((method) => found(router.find(method, url)) !== undefined),
    entryOf: (method, pattern) => byKey.get(`${method} ${pattern}`)
  }
}

/** The table of the service being served. */
export class Routes extends Context.Service<Routes, RouteTable>()("Http/Routes") {}
