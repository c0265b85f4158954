/**
 * The application: every feature's routes and services, served through the HTTP edge
 * (src/Http/). `main.ts` composes it with the real configuration; the tests with a configuration
 * pointing at their own database and a server on a free port.
 */
import { HttpApiBuilder } from "effect/http-api"
import { HttpRouter } from "effect/http"
import { NodeFileSystem } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { AdminLive } from "./Admin/Http.ts"
import { Moderation } from "./Admin/Service.ts"
import { Api } from "./Api.ts"
import { DocumentsLive, documentRoutes } from "./ApiDocument.ts"
import { AuthFailures } from "./Auth/Failures.ts"
import { AuthenticationLive, KeyOrBearerAuthenticationLive, OptionalAuthenticationLive } from "./Auth/Authentication.ts"
import { JwtVerifier } from "./Auth/Jwt.ts"
import { UserRepo } from "./Auth/UserRepo.ts"
import { CatalogLive, PublisherNodesLive } from "./Catalog/Http.ts"
import { Catalog } from "./Catalog/Service.ts"
import { ClaimsLive } from "./Claims/Http.ts"
import { Claims } from "./Claims/Service.ts"
import { DatabaseLive } from "./Db/Database.ts"
import { HostNodesLive, PublicHostNodesLive } from "./HostNodes/Http.ts"
import { HostNodes } from "./HostNodes/Service.ts"
import { EdgeLive } from "./Http/Edge.ts"
import { HttpServerLive as NodeServerLive } from "./Http/NodeServer.ts"
import { makeRouter } from "./Http/Router.ts"
import { declaredRoutes, makeRouteTable, Routes } from "./Http/Routes.ts"
import { spanNames } from "./Http/Spans.ts"
import { ImageProxyLive, SimulatedImagesLive } from "./Images/Http.ts"
import { ImageTasks } from "./Images/Service.ts"
import { MusicProxyLive } from "./Music/Http.ts"
import { Music } from "./Music/Service.ts"
import { PublicPublishersLive, PublishersLive } from "./Publishers/Http.ts"
import { Publishers } from "./Publishers/Service.ts"
import { Archives } from "./Publishing/Archives.ts"
import { ArchivesLive, PublishingLive, PublishLive } from "./Publishing/Http.ts"
import { Publishing } from "./Publishing/Service.ts"
import { ReviewsLive } from "./Reviews/Http.ts"
import { Reviews } from "./Reviews/Service.ts"
import { SystemLive } from "./System/Http.ts"
import { metricsRoute, MetricsLive } from "./System/MetricsEndpoint.ts"
import { TokensLive } from "./Tokens/Http.ts"
import { Tokens } from "./Tokens/Service.ts"
import { BulkVersionsLive, VersionQueueLive } from "./Versions/Http.ts"
import { Versions } from "./Versions/Service.ts"
import { ApiKeysLive } from "./ApiKeys/Http.ts"
import { ApiKeys } from "./ApiKeys/Service.ts"
import { ApiKeyRepo } from "./ApiKeys/Repo.ts"
import { MediaFilesLive, MediaStorageLive } from "./MediaStorage/Http.ts"
import { MediaStorage } from "./MediaStorage/Service.ts"
import { Leftovers } from "./System/Leftovers.ts"
import { Storage } from "./Storage/Store.ts"
import { ShutdownReport } from "./Observability/ShutdownReport.ts"

export const ServicesLive = Layer.mergeAll(
  Catalog.layer,
  Publishing.layer,
  Archives.layer,
  Publishers.layer,
  Tokens.layer,
  Claims.layer,
  HostNodes.layer,
  Moderation.layer,
  ImageTasks.layer,
  Music.layer,
  Reviews.layer,
  Versions.layer,
  AuthenticationLive,
  OptionalAuthenticationLive,
  ApiKeys.layer,
  MediaStorage.layer,
  KeyOrBearerAuthenticationLive,
  Leftovers.layer,
  // the catalogue hands out the store's own download URLs
  Storage.layer,
  AuthFailures.layer
).pipe(
  Layer.provide([JwtVerifier.layer, UserRepo.layer, ApiKeyRepo.layer, AuthFailures.layer]),
  Layer.provideMerge(DatabaseLive),
  // under the database: its scope closes after the database's, so its last line ends the stop
  Layer.provideMerge(ShutdownReport.layer),
  Layer.provideMerge(NodeFileSystem.layer)
)

const ApiLive = HttpApiBuilder.layer(Api).pipe(
  Layer.provide([CatalogLive, PublisherNodesLive, SystemLive]),
  Layer.provide([PublicHostNodesLive, HostNodesLive, AdminLive]),
  Layer.provide([TokensLive, ClaimsLive]),
  Layer.provide([PublishingLive, PublishLive, ArchivesLive]),
  Layer.provide([PublicPublishersLive, PublishersLive]),
  Layer.provide([ImageProxyLive, SimulatedImagesLive]),
  Layer.provide(MusicProxyLive),
  Layer.provide(ReviewsLive),
  Layer.provide([VersionQueueLive, BulkVersionsLive]),
  Layer.provide([ApiKeysLive, MediaStorageLive, MediaFilesLive])
)

/** Every route the service serves: the Api's endpoints, the documents, `/metrics`. */
const RouteTableLive = Layer.sync(Routes, () => makeRouteTable([...declaredRoutes(Api), ...documentRoutes, metricsRoute]))

/** The router the routes are added to: the route table's (Http/Router.ts). */
const RouterLive = Layer.effect(HttpRouter.HttpRouter, Effect.flatMap(Effect.service(Routes), makeRouter))

/**
 * What a layer adding routes needs: its own requirements, and what its handlers need at request
 * time (the router's `Requires` markers), which the application's context provides.
 */
const addingRoutes = <A, E, R>(layer: Layer.Layer<A, E, R>) =>
  layer as unknown as Layer.Layer<A, HttpRouter.Request.Without<E>, HttpRouter.Request.Without<R> | HttpRouter.Request.Only<"Requires", R>>

/** The layers that add routes: built before the edge serves, so that no request finds the table empty. */
const RoutesLive = addingRoutes(Layer.mergeAll(ApiLive, DocumentsLive, MetricsLive)).pipe(Layer.provide(RouterLive))

/**
 * Serves the API on the provided HttpServer with the provided services. Build the services
 * before the server: a server listens as soon as it is built, and a request arriving before the
 * application is attached would wait for nothing.
 */
export const AppLive = EdgeLive.pipe(
  Layer.provide([RoutesLive, Layer.unwrap(Effect.map(Effect.service(Routes), spanNames))]),
  Layer.provide(RouteTableLive)
)

/** The Node HTTP server of the configured host and port (Http/NodeServer.ts), over the same route table. */
export const HttpServerLive = NodeServerLive.pipe(Layer.provide(RouteTableLive))
