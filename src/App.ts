/**
 * The application: every feature folder's handlers, one line each (each feature's layer brings
 * the services its handlers use), over what the features share, provided once, served through
 * the HTTP edge (src/Http/). Layers are
 * memoised by reference within one build, so a service several features use (Publishers,
 * Archives, the page cache behind the catalogue's writes) is built once, over the one pool.
 */
import { HttpApiBuilder } from "effect/http-api"
import { HttpRouter } from "effect/http"
import { NodeFileSystem, NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer, Option } from "effect"
import { AdminHttp } from "./Admin/Http.ts"
import { Api } from "./Api.ts"
import { ApiKeysHttp } from "./ApiKeys/Http.ts"
import { ApiKeyRepo } from "./ApiKeys/Repo.ts"
import { AuthenticationLive, KeyOrBearerAuthenticationLive, OptionalAuthenticationLive } from "./Auth/Authentication.ts"
import { AuthFailures } from "./Auth/Failures.ts"
import { JwtVerifier } from "./Auth/Jwt.ts"
import { UserRepo } from "./Auth/UserRepo.ts"
import { CatalogHttp } from "./Catalog/Http.ts"
import { DownloadsHttp } from "./Downloads/Http.ts"
import { DownloadRepo } from "./Downloads/Repo.ts"
import { rollupTask } from "./Downloads/Rollup.ts"
import { ClaimsHttp } from "./Claims/Http.ts"
import { aliasPatterns } from "./Compat/Aliases.ts"
import { AppConfig } from "./Config.ts"
import { DatabaseLive } from "./Db/Database.ts"
import { AnyEndpoint } from "./Domain/RegistryApi.ts"
import { DocumentsLive, documentRoutes } from "./ApiDocument.ts"
import { EdgeLive } from "./Http/Edge.ts"
import { HttpServerLive as NodeServerLive } from "./Http/NodeServer.ts"
import { makeRouter } from "./Http/Router.ts"
import { declaredRoutes, makeRouteTable, Routes } from "./Http/Routes.ts"
import { spanNames } from "./Http/Spans.ts"
import { Storage } from "./Storage/Store.ts"
import { metricsRoute, MetricsLive } from "./System/MetricsEndpoint.ts"
import { HostNodesHttp } from "./HostNodes/Http.ts"
import { ImagesHttp } from "./Images/Http.ts"
import { MediaStorageHttp } from "./MediaStorage/Http.ts"
import { CustomersHttp } from "./Customers/Http.ts"
import { MusicHttp } from "./Music/Http.ts"
import { ModerationHttp } from "./Moderation/Http.ts"
import { ModerationRepo } from "./Moderation/Repo.ts"
import { FileScanner } from "./Moderation/FileScanner.ts"
import { SyncHttp } from "./Sync/Http.ts"
import { ChangeFeed } from "./Sync/Feed.ts"
import { checkSnapshots, snapshotTask } from "./Sync/Snapshot.ts"
import { NodePages } from "./Catalog/NodePages.ts"
import { rescanTask, scanRetryTask } from "./Moderation/Rescan.ts"
import { ShutdownReport } from "./Observability/ShutdownReport.ts"
import { PublishersHttp } from "./Publishers/Http.ts"
import { PublishingHttp } from "./Publishing/Http.ts"
import { ReviewsHttp } from "./Reviews/Http.ts"
import { Leftovers } from "./System/Leftovers.ts"
import { SystemHttp } from "./System/Http.ts"
import { TokensHttp } from "./Tokens/Http.ts"
import { TrustedPublishingHttp } from "./TrustedPublishing/Http.ts"
import { VersionsHttp } from "./Versions/Http.ts"
import { jobRunner } from "./Jobs/Runner.ts"
import { deliveryTask } from "./Webhooks/Delivery.ts"
import { archiveDigestTask, queueDigestBackfill } from "./Publishing/DigestBackfill.ts"
import { dependencyParseTask, queueDependencyBackfill } from "./Publishing/DependencyBackfill.ts"
import { WebhooksHttp } from "./Webhooks/Http.ts"
import { WebhookRepo } from "./Webhooks/Repo.ts"

/** The Api's routes: one line per feature folder, its groups with the services they use. */
export const ApiLive = HttpApiBuilder.layer(Api).pipe(
  Layer.provide([
    CatalogHttp,
    DownloadsHttp,
    PublishersHttp,
    TokensHttp,
    ClaimsHttp,
    HostNodesHttp,
    AdminHttp,
    PublishingHttp,
    TrustedPublishingHttp,
    ModerationHttp,
    SystemHttp,
    ImagesHttp,
    MusicHttp,
    ReviewsHttp,
    VersionsHttp,
    ApiKeysHttp,
    MediaStorageHttp,
    CustomersHttp,
    WebhooksHttp,
    SyncHttp
  ])
)

/**
 * The job runner and the tasks it runs, one line each (each a small module of its feature,
 * src/Jobs/Task.ts), with what they use.
 */
/** The archive scanner's thread: one for the uploads and the scan jobs (a layer is built once). */
const FileScannerLive = Layer.unwrap(Effect.map(AppConfig, ({ scanning }) =>
  FileScanner.thread({
    timeoutMs: scanning.fileTimeoutMillis,
    ...Option.match(scanning.threadProgram, { onNone: () => ({}), onSome: (program) => ({ program }) })
  })))

const JobsLive = jobRunner(
  [deliveryTask, archiveDigestTask, dependencyParseTask, rescanTask, scanRetryTask, rollupTask, snapshotTask],
  Effect.andThen(Effect.andThen(queueDigestBackfill, queueDependencyBackfill), checkSnapshots)
).pipe(
  Layer.provide([
    WebhookRepo.layer,
    Storage.layer,
    ModerationRepo.layer,
    FileScannerLive,
    DownloadRepo.layer,
    NodePages.layer,
    ChangeFeed.layer
  ])
)

/**
 * What every feature shares, provided once: the middlewares the Api's groups name (the three
 * authentications, AnyEndpoint), the failed-authentication counts (the bearer middleware and the
 * publish endpoint's token check count together), the sweep of crash leftovers; over one
 * database pool, the shutdown report and the local file system.
 */
export const ServicesLive = Layer.mergeAll(
  AuthenticationLive,
  OptionalAuthenticationLive,
  KeyOrBearerAuthenticationLive,
  AnyEndpoint.layer,
  AuthFailures.layer,
  Leftovers.layer,
  // the catalogue hands out the store's own download URLs, publishing and media write there
  Storage.layer,
  // uploads scan their archives
  FileScannerLive,
  // started with the services, stopped before the pool closes
  JobsLive
).pipe(
  Layer.provide([JwtVerifier.layer, UserRepo.layer, ApiKeyRepo.layer, AuthFailures.layer]),
  Layer.provideMerge(DatabaseLive),
  // under the database: its scope closes after the database's, so its last line ends the stop
  Layer.provideMerge(ShutdownReport.layer),
  Layer.provideMerge(NodeFileSystem.layer)
)

/** Every route the service serves: the Api's endpoints, the documents, `/metrics`; the host-node routes also under the clients' word. */
const RouteTableLive = Layer.effect(
  Routes,
  Effect.map(AppConfig, (config) =>
    makeRouteTable([...declaredRoutes(Api), ...documentRoutes, metricsRoute], aliasPatterns(config.aliases)))
)

/** The router the routes are added to: the route table's (Http/Router.ts). */
const RouterLive = Layer.effect(HttpRouter.HttpRouter, Effect.flatMap(Effect.service(Routes), makeRouter))

/**
 * What a layer adding routes needs: its own requirements, and what its handlers need at request
 * time (the router's `Requires` markers), which the application's context provides.
 */
const addingRoutes = <A, E, R>(layer: Layer.Layer<A, E, R>) =>
  layer as unknown as Layer.Layer<A, HttpRouter.Request.Without<E>, HttpRouter.Request.Without<R> | HttpRouter.Request.Only<"Requires", R>>

/** The layers that add routes: built before the edge serves, so that no request finds the table empty. */
const RoutesLive = addingRoutes(Layer.mergeAll(ApiLive, DocumentsLive, MetricsLive)).pipe(
  Layer.provide(RouterLive),
  // the platform's services (files, ETags), which the server's layer provides too: built before it
  Layer.provide(NodeHttpServer.layerHttpServices)
)

/**
 * Serves the API on the provided HttpServer with the provided services. Build the services
 * before the server: a server listens as soon as it is built, and a request arriving before the
 * application is attached would wait for nothing.
 */
export const AppLive = EdgeLive.pipe(
  Layer.provide([RoutesLive, Layer.unwrap(Effect.map(Effect.service(Routes), spanNames))]),
  Layer.provide(RouteTableLive)
)

/**
 * The Node HTTP server of the configured host and port (Http/NodeServer.ts), over the same route
 * table. It listens once the routes are added (RoutesLive is built first, once: layers are
 * memoised), so that a client waiting for the service, as the README's `until curl` loop does,
 * is refused a connection rather than left on one that nothing answers.
 */
export const HttpServerLive = NodeServerLive.pipe(Layer.provide(RoutesLive), Layer.provide(RouteTableLive))
