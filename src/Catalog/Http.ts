import { HttpApiBuilder } from "effect/http-api"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import { Effect, Metric, Option } from "effect"
import { Api } from "../Api.ts"
import { clientAddress } from "../Auth/Failures.ts"
import { AppConfig } from "../Config.ts"
import { hostVersionKey } from "../Domain/Semver.ts"
import { answer } from "../Errors.ts"
import { defaultLimit, defaultPage, defaultStatuses, type ListNodesParams, type SearchNodesParams } from "./Api.ts"
import type { NodeQuery, SearchQuery } from "./NodePages.ts"
import { type RenderedPage, ServedPage } from "./PageCache.ts"
import { Catalog } from "./Service.ts"
import { Archives } from "../Publishing/Archives.ts"
import { NodeVersion } from "../Domain/Node.ts"
import { noneMatchHolds } from "../Web/Validators.ts"
import { negotiate, varyOnEncoding, withEncoding } from "../Web/Compression.ts"
import { labelledCounter } from "../Observability/Metrics.ts"

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
  hostVersionKey: p.host_version === undefined ? undefined : hostVersionKey(p.host_version)
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
 * A listing page with its validators; 304 when the client has it. A stored page is sent in the
 * coding the request accepts from its kept forms (PageCache.ts), so that only the first hit in a
 * coding compresses; a page computed for this request alone is left to the compression middleware.
 */
const respond = (request: HttpServerRequest.HttpServerRequest, served: ServedPage) => {
  const { encoded, etag } = served.page
  const coding = encoded === undefined ? "identity" : negotiate(request.headers["accept-encoding"])
  const headers = {
    etag,
    "cache-control": "no-cache",
    "x-cache": ServedPage.$match(served, { Hit: () => "hit", Miss: () => "miss", Bypass: () => "bypass" })
  }
  if (noneMatchHolds(request.headers["if-none-match"], etag)) {
    // the ETag of the representation the client would have been sent
    return Effect.succeed(
      varyOnEncoding(HttpServerResponse.empty({ status: 304, headers: { ...headers, etag: coding === "identity" ? etag : `W/${etag}` } }))
    )
  }
  const page = varyOnEncoding(HttpServerResponse.setHeaders(json(served.page), headers))
  return encoded === undefined || coding === "identity"
    ? Effect.succeed(page)
    : Effect.map(encoded[coding], (body) => withEncoding(page, coding, body))
}

const listRequests = labelledCounter("nodes_list_requests", "GET /nodes requests by form factor")
const knownFormFactors = new Set(["desktop-win", "desktop-mac", "git-windows", "git-mac", "git-linux", "other"])
const countRequest = (formFactor: string | undefined) => {
  const ff = formFactor?.toLowerCase() ?? "unknown"
  return Metric.update(listRequests({ form_factor: knownFormFactors.has(ff) ? ff : "unknown" }), 1)
}

export const CatalogLive = HttpApiBuilder.group(Api, "catalog", (handlers) =>
  Effect.gen(function*() {
    const catalog = yield* Catalog
    const archives = yield* Archives
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
        : archives.directUrl(version.node_id, version.version, version.id).pipe(
          Effect.map(Option.match({
            onNone: () => version,
            // an instance: the success schema encodes NodeVersion instances only
            onSome: (downloadUrl) => new NodeVersion({ ...version, downloadUrl }, { disableChecks: true })
          })),
          Effect.catch((failure) =>
            Effect.as(Effect.logWarning("presigning an install's download URL failed; the service's URL is given", failure.cause), version))
        )
    return handlers
      .handle("listAllNodes", ({ query, request }) =>
        countRequest(query.form_factor).pipe(
          Effect.andThen(catalog.listNodes(toQuery(query), query.latest ?? false)),
          Effect.flatMap((served) => respond(request, served))
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

export const PublisherNodesLive = HttpApiBuilder.group(Api, "publisherNodes", (handlers) =>
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
