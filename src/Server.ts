/**
 * The service's Layers: the HTTP application over every feature's handlers, the services they
 * use, and the HTTP server. `main.ts` composes them with the real configuration; the tests with a
 * configuration pointing at their own database and a server on a free port.
 */
import { HttpApiBuilder, HttpApiScalar, HttpIncomingMessage, HttpServer, HttpServerRequest } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Fiber, identity, Layer, Option } from "effect"
import * as http from "node:http"
import { AdminLive } from "./Admin/Http.ts"
import { Api } from "./Api.ts"
import { AuthenticationLive, OptionalAuthenticationLive } from "./Auth/Authentication.ts"
import { JwtVerifier } from "./Auth/Jwt.ts"
import { UserRepo } from "./Auth/UserRepo.ts"
import { CatalogLive, PublisherNodesLive } from "./Catalog/Http.ts"
import { ListCacheLive } from "./Catalog/ListCache.ts"
import { NodeRepoLive } from "./Catalog/Repo.ts"
import { CatalogWritesLive } from "./Catalog/Writes.ts"
import { SearchRepoLive } from "./Catalog/SearchRepo.ts"
import { AppConfig } from "./Config.ts"
import { DatabaseLive } from "./Db/Database.ts"
import { errorResponse, respondToCause } from "./Errors.ts"
import { HostNodesLive, PublicHostNodesLive } from "./HostNodes/Http.ts"
import { HostNodeRepoLive } from "./HostNodes/Repo.ts"
import { ImageProxyLive, SimulatedImagesLive, SimulatedModeHeader } from "./Media/ImageHttp.ts"
import { ImageVendorLive } from "./Media/ImageVendor.ts"
import { TaskRepoLive } from "./Media/TaskRepo.ts"
import { MusicProxyLive } from "./Media/MusicHttp.ts"
import { MusicVendorLive } from "./Media/MusicVendor.ts"
import { PublicPublishersLive, PublishersLive } from "./Publishers/Http.ts"
import { ClaimsLive } from "./Publishers/Claim.ts"
import { PublisherRepoLive } from "./Publishers/Repo.ts"
import { ArchivesLive, PublishingLive, PublishLive } from "./Publishing/Http.ts"
import { UrlSignerLive } from "./Publishing/Signing.ts"
import { LocalStorage } from "./Publishing/Storage.ts"
import { RepohostLive } from "./Repohost/Client.ts"
import { SystemLive } from "./System/Http.ts"
import { TokensLive } from "./Tokens/Http.ts"
import { TokenRepoLive } from "./Tokens/Repo.ts"

/** For each declared route, the methods it answers: a path known under another method is a 405. */
const routeTable = [
  ...Object.values(Api.groups).flatMap((group) =>
    Object.values(group.endpoints).map((endpoint) => ({ method: endpoint.method, path: endpoint.path }))
  ),
  { method: "GET", path: "/openapi.json" },
  { method: "GET", path: "/docs" }
].map(({ method, path }) => ({ method, pattern: new RegExp(`^${path.replace(/:[^/]+/g, "[^/]+")}/?$`) }))
const allowedMethods = (path: string) => [...new Set(routeTable.filter((r) => r.pattern.test(path)).map((r) => r.method))]

/** The largest JSON body read: a bulk host-node record of 5,000 entries fits with room to spare. */
const maxJsonBodyBytes = 16 * 1024 * 1024

/**
 * Routes that read their body as a stream and enforce their own, larger limits: the video upload
 * of the music proxy and node archives (signed upload URLs).
 */
const streamedBodyRoutes = [/^\/proxy\/musicvendor\//, /^\/archives\//]
const readsStreamedBody = (request: HttpServerRequest.HttpServerRequest) =>
  request.method !== "GET" && request.method !== "HEAD" && streamedBodyRoutes.some((route) => route.test(request.url))

/**
 * A request whose client goes away still runs to its end, its answer dropped. Interrupting it
 * would cancel its SQL statement, and the driver's cancel (sent from another pooled connection,
 * given up after 5 s when the pool is busy, still queued) can land on the next statement the
 * connection runs: another request's. Streamed uploads stay interruptible: a client that leaves
 * must stop the vendor request its upload feeds.
 */
const runToCompletion = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.flatMap(Effect.forkDaemon(effect), Fiber.join)

/** Framework failures, typed errors and defects all leave as ErrorResponse; bodies are bounded. */
const ErrorResponses = HttpApiBuilder.middleware((app) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    // a declared length over the limit is answered before reading a byte of it
    !readsStreamedBody(request) && Number(request.headers["content-length"] ?? 0) > maxJsonBodyBytes
      ? Effect.succeed(errorResponse(413, "payload_too_large", `The request body is larger than ${maxJsonBodyBytes} bytes`))
      : app.pipe(
        HttpIncomingMessage.withMaxBodySize(Option.some(maxJsonBodyBytes)),
        Effect.catchAllCause(respondToCause(allowedMethods)),
        readsStreamedBody(request) ? identity : runToCompletion
      ))
)

const Docs = Layer.mergeAll(
  HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" }),
  HttpApiScalar.layer({ path: "/docs", scalar: { layout: "modern", theme: "default", withDefaultFonts: false } })
)

/** The repositories and services the handlers use, over one database pool. */
export const ServicesLive = Layer.mergeAll(
  NodeRepoLive,
  SearchRepoLive,
  CatalogWritesLive,
  PublisherRepoLive,
  HostNodeRepoLive,
  TokenRepoLive,
  RepohostLive,
  ImageVendorLive,
  TaskRepoLive,
  MusicVendorLive,
  AuthenticationLive,
  OptionalAuthenticationLive,
  UrlSignerLive,
  LocalStorage
).pipe(
  Layer.provide([JwtVerifier.layer, UserRepo.layer]),
  Layer.provideMerge(ListCacheLive),
  Layer.provideMerge(DatabaseLive)
)

const ApiLive = HttpApiBuilder.api(Api).pipe(
  Layer.provide([CatalogLive, PublisherNodesLive, SystemLive]),
  Layer.provide([PublicHostNodesLive, HostNodesLive, AdminLive]),
  Layer.provide([TokensLive, ClaimsLive]),
  Layer.provide([PublishingLive, PublishLive, ArchivesLive]),
  Layer.provide([PublicPublishersLive, PublishersLive]),
  Layer.provide([ImageProxyLive, SimulatedImagesLive]),
  Layer.provide(MusicProxyLive)
)

/**
 * Serves the API on the provided HttpServer with the provided services. Build the services
 * before the server: a server listens as soon as it is built, and a request arriving before the
 * application is attached would wait for nothing.
 */
export const AppLive = HttpApiBuilder.serve().pipe(
  Layer.provide([Docs, ErrorResponses, SimulatedModeHeader]),
  Layer.provide(ApiLive),
  HttpServer.withLogAddress
)

/**
 * A Node HTTP server whose malformed requests (oversized headers or URL, bytes HTTP does not
 * allow) are answered as ErrorResponse too, before they ever reach the application.
 */
export const makeHttpServer = () => {
  const server = http.createServer()
  server.on("clientError", (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return socket.destroy()
    const [status, reason, code, message] = err.code === "HPE_HEADER_OVERFLOW"
      ? [431, "Request Header Fields Too Large", "request_too_large", "The request line or headers are too large"]
      : [400, "Bad Request", "bad_request", "The request is not valid HTTP"]
    const body = JSON.stringify({ error: code, message })
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
        `connection: close\r\n\r\n${body}`
    )
  })
  return server
}

/** The HttpServer of the configured host and port. */
export const HttpServerLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) => NodeHttpServer.layer(makeHttpServer, { port: config.port, host: config.host }))
)
