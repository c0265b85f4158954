/**
 * The whole HTTP interface: one declaration gives the server, the typed client (src/client.ts)
 * and, through ApiDocument.ts, /openapi.json and /docs. Every endpoint may also answer the
 * errors `registryApi` declares for all (Domain/RegistryApi.ts).
 */
import { OpenApi } from "effect/http-api"
import { AdminApi } from "./Admin/Api.ts"
import { CatalogApi, PublisherNodesApi } from "./Catalog/Api.ts"
import { ClaimApi } from "./Claims/Api.ts"
import { HostNodesApi, PublicHostNodesApi } from "./HostNodes/Api.ts"
import { ImageCallbacksApi, ImageProxyApi, SimulatedImagesApi } from "./Images/Api.ts"
import { MusicProxyApi } from "./Music/Api.ts"
import { ScanRulesApi, VersionReviewApi } from "./Moderation/Api.ts"
import { PublicPublishersApi, PublishersApi } from "./Publishers/Api.ts"
import { ArchivesApi, PublishApi, PublishingApi } from "./Publishing/Api.ts"
import { ReviewsApi } from "./Reviews/Api.ts"
import { SystemApi } from "./System/Api.ts"
import { TokensApi } from "./Tokens/Api.ts"
import { TrustedPublishersApi, TrustedPublishingApi } from "./TrustedPublishing/Api.ts"
import { BulkVersionsApi, VersionQueueApi } from "./Versions/Api.ts"
import { ApiKeysApi } from "./ApiKeys/Api.ts"
import { registryApi } from "./Domain/RegistryApi.ts"
import { MediaFilesApi, MediaStorageApi } from "./MediaStorage/Api.ts"
import { CustomerQuotasApi, CustomersApi } from "./Customers/Api.ts"
import { WebhooksApi } from "./Webhooks/Api.ts"
import { CatalogueSyncApi } from "./Sync/Api.ts"
import { DownloadsApi } from "./Downloads/Api.ts"

export class Api extends registryApi(
  CatalogApi,
  PublisherNodesApi,
  PublicPublishersApi,
  PublishersApi,
  TokensApi,
  ClaimApi,
  PublicHostNodesApi,
  HostNodesApi,
  AdminApi,
  PublishingApi,
  PublishApi,
  TrustedPublishersApi,
  TrustedPublishingApi,
  ArchivesApi,
  ScanRulesApi,
  VersionReviewApi,
  SystemApi,
  ImageProxyApi,
  SimulatedImagesApi,
  ImageCallbacksApi,
  MusicProxyApi,
  ReviewsApi,
  VersionQueueApi,
  BulkVersionsApi,
  ApiKeysApi,
  MediaStorageApi,
  MediaFilesApi,
  CustomersApi,
  CustomerQuotasApi,
  WebhooksApi,
  CatalogueSyncApi,
  DownloadsApi
)
  .annotate(OpenApi.Title, "Extension Registry and Media Proxy")
  .annotate(OpenApi.Version, "1.0")
  .annotate(OpenApi.Description, "Extension-node registry (publishers, nodes, versions, host-nodes, tokens, claiming) and a proxy for AI media operations. Every error body is ErrorResponse {error, message}.")
{}
