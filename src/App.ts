/**
 * The application: every feature folder's handlers, one line each (each feature's layer brings
 * the services its handlers use), over what the features share, provided once. Layers are
 * memoised by reference within one build, so a service several features use (Publishers,
 * Archives, the page cache behind the catalogue's writes) is built once, over the one pool.
 */
import { HttpApiBuilder } from "effect/http-api"
import { NodeFileSystem } from "@effect/platform-node"
import { Layer } from "effect"
import { AdminHttp } from "./Admin/Http.ts"
import { Api } from "./Api.ts"
import { ApiKeysHttp } from "./ApiKeys/Http.ts"
import { ApiKeyRepo } from "./ApiKeys/Repo.ts"
import { AuthenticationLive, KeyOrBearerAuthenticationLive, OptionalAuthenticationLive } from "./Auth/Authentication.ts"
import { AuthFailures } from "./Auth/Failures.ts"
import { JwtVerifier } from "./Auth/Jwt.ts"
import { UserRepo } from "./Auth/UserRepo.ts"
import { CatalogHttp } from "./Catalog/Http.ts"
import { ClaimsHttp } from "./Claims/Http.ts"
import { DatabaseLive } from "./Db/Database.ts"
import { AnyEndpoint } from "./Domain/RegistryApi.ts"
import { HostNodesHttp } from "./HostNodes/Http.ts"
import { ImagesHttp } from "./Images/Http.ts"
import { MediaStorageHttp } from "./MediaStorage/Http.ts"
import { MusicHttp } from "./Music/Http.ts"
import { ShutdownReport } from "./Observability/ShutdownReport.ts"
import { PublishersHttp } from "./Publishers/Http.ts"
import { PublishingHttp } from "./Publishing/Http.ts"
import { ReviewsHttp } from "./Reviews/Http.ts"
import { Leftovers } from "./System/Leftovers.ts"
import { SystemHttp } from "./System/Http.ts"
import { TokensHttp } from "./Tokens/Http.ts"
import { VersionsHttp } from "./Versions/Http.ts"

/** The Api's routes: one line per feature folder, its groups with the services they use. */
export const ApiLive = HttpApiBuilder.layer(Api).pipe(
  Layer.provide([
    CatalogHttp,
    PublishersHttp,
    TokensHttp,
    ClaimsHttp,
    HostNodesHttp,
    AdminHttp,
    PublishingHttp,
    SystemHttp,
    ImagesHttp,
    MusicHttp,
    ReviewsHttp,
    VersionsHttp,
    ApiKeysHttp,
    MediaStorageHttp
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
  Leftovers.layer
).pipe(
  Layer.provide([JwtVerifier.layer, UserRepo.layer, ApiKeyRepo.layer, AuthFailures.layer]),
  Layer.provideMerge(DatabaseLive),
  // under the database: its scope closes after the database's, so its last line ends the stop
  Layer.provideMerge(ShutdownReport.layer),
  Layer.provideMerge(NodeFileSystem.layer)
)
