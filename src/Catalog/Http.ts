import { HttpApiBuilder } from "effect/http-api"
import { HttpServerResponse } from "effect/http"
import { Effect, Layer, Metric, Option } from "effect"
import { CatalogApi, defaultLimit, defaultPage, defaultStatuses, type ListNodesParams, PublisherNodesApi, type SearchNodesParams } from "./Api.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
import { clientAddress } from "../Http/ClientAddress.ts"
import { AppConfig } from "../Config.ts"
import { hostVersionKey } from "../Domain/Semver.ts"
import type { NodeQuery, SearchQuery } from "./NodePages.ts"
import { type RenderedPage, ServedPage } from "./PageCache.ts"
import { Catalog } from "./Service.ts"
import { NodeVersion } from "../Domain/Node.ts"
import { represent } from "../Http/Representation.ts"
import { labelledCounter } from "../Observability/Metrics.ts"
import { archiveKey, archiveServed } from "../Storage/Keys.ts"
import { Storage } from "../Storage/Store.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import { NoInstallableVersion } from "../Domain/ApiErrors.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({
  ...sharedAnswers,
  NothingToInstall: NoInstallableVersion
})

/** The parameters' defaults, where the contract leaves them out (see Api.ts). */
const pageOf = (p: { readonly page?: number | undefined; readonly limit?: number | undefined }) => ({
  page: p.page ?? defaultPage,
  limit: p.limit ?? defaultLimit
})

const toQuery = (p: ListNodesParams): NodeQuery => ({
  ...pageOf(p),
  sort: p.sort ?? [],
  supportedOs: p.supported_os,
  supportedAccelerator: p.supported_accelerator,
  updatedAfter: p.timestamp,
  nodeIds: p.node_id,
  // the schema let through versions with a key, and `unknown` or nothing, which filter nothing
  hostVersionKey: p.host_version === undefined ? undefined : hostVersionKey(p.host_version),
  includeBanned: p.include_banned ?? false
})

/** A search criterion as given, trimmed; a blank one is none. */
const criterion = (s: string | undefined) => {
  const trimmed = s?.trim()
  return trimmed === "" ? undefined : trimmed
}

const toSearch = (p: SearchNodesParams): SearchQuery => ({
  text: criterion(p.search),
  hostNode: criterion(p.host_node_search),
  repository: criterion(p.repository_url_search),
  includeBanned: p.include_banned ?? false,
  ...pageOf(p),
  supportedOs: p.supported_os,
  supportedAccelerator: p.supported_accelerator
})

const json = (page: RenderedPage) => HttpServerResponse.uint8Array(page.body, { contentType: "application/json" })

/**
 * A listing page with its validators, and its kept compressed forms when it is stored
 * (PageCache.ts): the edge answers 304 when the client has it, and sends a stored page in the
 * coding the request accepts from its forms, so that only the first hit in a coding compresses.
 */
const respond = (served: ServedPage, withBanned: boolean) =>
  represent({
    body: served.page.body,
    contentType: "application/json",
    etag: served.page.etag,
    // a page with banned nodes is a site admin's: no shared cache may keep it for anyone else
    cacheControl: withBanned ? "private, no-cache" : "no-cache",
    forms: served.page.encoded,
    headers: { "x-cache": ServedPage.$match(served, { Hit: () => "hit", Miss: () => "miss", Bypass: () => "bypass" }) }
  })

const listRequests = labelledCounter("nodes_list_requests", "GET /nodes requests by form factor")
const knownFormFactors = new Set(["desktop-win", "desktop-mac", "git-windows", "git-mac", "git-linux", "other"])
const countRequest = (formFactor: string | undefined) => {
  const ff = formFactor?.toLowerCase() ?? "unknown"
  return Metric.update(listRequests({ form_factor: knownFormFactors.has(ff) ? ff : "unknown" }), 1)
}

/** This folder's groups, under what every endpoint shares: its handlers are built against these alone. */
const api = registryApi(CatalogApi, PublisherNodesApi)

const CatalogLive = HttpApiBuilder.group(api, "catalog", (handlers) =>
  Effect.gen(function*() {
    const catalog = yield* Catalog
    const storage = yield* Storage
    const { trustProxy } = yield* AppConfig
    /**
     * The version to install, its `downloadUrl` the store's own when archives are in a bucket, so
     * that the download goes straight there (a listing keeps the service's URL, which redirects:
     * a presigned URL lives minutes, and a listing may be kept longer). Should presigning fail,
     * the service's URL still works.
     */
    const fromItsStore = (version: NodeVersion) =>
      version.downloadUrl === undefined
        ? Effect.succeed(version)
        : storage.downloadUrl(archiveKey(version.id), "GET", archiveServed(version.node_id, version.version)).pipe(
          Effect.map(Option.match({
            onNone: () => version,
            // an instance: the success schema encodes NodeVersion instances only
            onSome: (downloadUrl) => new NodeVersion({ ...version, downloadUrl }, { disableChecks: true })
          })),
          Effect.catch((failure) =>
            Effect.as(Effect.logWarning("presigning an install's download URL failed; the service's URL is given", failure.cause), version))
        )
    return handlers
      .handle("listAllNodes", ({ query }) =>
        countRequest(query.form_factor).pipe(
          Effect.andThen(catalog.listNodes(toQuery(query), query.latest ?? false)),
          answer,
          Effect.map((served) => respond(served, query.include_banned === true))
        ))
      .handle("searchNodes", ({ query }) => catalog.search(toSearch(query)).pipe(answer, Effect.map(json)))
      .handle("getNodeVersion", ({ params }) =>
        Effect.map(answer(catalog.getVersion(params.nodeId, params.versionId)), (body) =>
          HttpServerResponse.uint8Array(body, { contentType: "application/json" })))
      .handle("getNode", ({ params, query }) =>
        answer(catalog.getNode(params.nodeId, { translations: query.include_translations ?? true })))
      .handle("listNodeVersions", ({ params, query }) => answer(catalog.listVersions(params.nodeId, query.statuses ?? defaultStatuses)))
      .handle("installNode", ({ params, query, request }) =>
        answer(Effect.flatMap(catalog.install(params.nodeId, query.version, clientAddress(request, trustProxy)), fromItsStore)))
  }))

const PublisherNodesLive = HttpApiBuilder.group(api, "publisherNodes", (handlers) =>
  Effect.gen(function*() {
    const catalog = yield* Catalog
    return handlers
      .handle("listNodesForPublisher", ({ params, query }) =>
        catalog.publisherNodes({ publisherId: params.publisherId, includeBanned: query.include_banned ?? false }).pipe(
          answer,
          Effect.map((nodes) => HttpServerResponse.text(nodes, { contentType: "application/json" }))
        ))
      .handle("listNodesForPublisherV2", ({ params, query }) =>
        catalog.publisherNodesPage(
          { publisherId: params.publisherId, includeBanned: query.include_banned ?? false },
          pageOf(query)
        ).pipe(answer, Effect.map(json)))
  }))

/** This folder's handlers, with the services they use (src/App.ts provides what every feature shares). */
export const CatalogHttp = Layer.mergeAll(CatalogLive, PublisherNodesLive).pipe(Layer.provide([Catalog.layer, Storage.layer]))
