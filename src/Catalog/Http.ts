import { HttpApiBuilder } from "effect/http-api"
import { HttpServerResponse } from "effect/http"
import { Effect, Layer, Metric, Option } from "effect"
import {
  CatalogApi,
  type CheckDependencyConflictsRequest,
  type CheckDependencyConflictsResponse,
  defaultLimit,
  defaultPage,
  defaultStatuses,
  type InstallNodeParams,
  type ListNodesParams,
  maxConflictVersions,
  maxResolveItems,
  PublisherNodesApi,
  type ResolvedItem,
  type ResolveNodeVersionsRequest,
  type SearchNodesParams
} from "./Api.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
import { clientAddress } from "../Http/ClientAddress.ts"
import { AppConfig } from "../Config.ts"
import { hostVersionKey, versionRangeOf } from "../Domain/Semver.ts"
import type { NodeQuery, SearchQuery } from "./NodePages.ts"
import { type RenderedPage, ServedPage } from "./PageCache.ts"
import { Catalog, type CheckedConflicts, type Resolved, type ResolveItem } from "./Service.ts"
import type { Wanted } from "./Resolution.ts"
import { NodeVersion } from "../Domain/Node.ts"
import { represent } from "../Http/Representation.ts"
import { labelledCounter } from "../Observability/Metrics.ts"
import { archiveKey, archiveServed } from "../Storage/Keys.ts"
import { Storage } from "../Storage/Store.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import { BadRequest, HostVersionUnsupported, NoInstallableVersion, PayloadTooLarge } from "../Domain/ApiErrors.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({
  ...sharedAnswers,
  NothingToInstall: NoInstallableVersion,
  HostExcluded: HostVersionUnsupported
})

/** The host version as the list filter reads it: none when absent or `unknown` (the schema let through only such or versions with a key). */
const hostOf = (text: string | undefined): Wanted["host"] => {
  const key = text === undefined ? undefined : hostVersionKey(text)
  return key === undefined ? undefined : { text: text!.trim(), key }
}

/** What an install asks; `version` and `version_range` together are a 400 naming the range. */
const wantedOf = (q: InstallNodeParams): Effect.Effect<Wanted, BadRequest> =>
  q.version !== undefined && q.version_range !== undefined
    ? Effect.fail(new BadRequest({ message: "Invalid value for 'version_range': not with 'version', which pins one exact version" }))
    : Effect.succeed({ pinned: q.version, range: q.version_range, host: hostOf(q.host_version) })

/** `items` of the body's field `field`, or past `max` of them a 413 naming the field. */
const atMost = <A>(field: string, items: ReadonlyArray<A>, max: number, done: string): Effect.Effect<ReadonlyArray<A>, PayloadTooLarge> =>
  items.length > max
    ? Effect.fail(new PayloadTooLarge({ message: `'${field}' has ${items.length} items: at most ${max} are ${done} in one request` }))
    : Effect.succeed(items)

/**
 * A bulk resolve's items, checked: the count before anything else (10,000 items are refused
 * without reading one range), then each range, a malformed one a 400 naming it.
 */
const resolveItemsOf = (body: ResolveNodeVersionsRequest): Effect.Effect<ReadonlyArray<ResolveItem>, BadRequest | PayloadTooLarge> =>
  Effect.flatMap(atMost("nodes", body.nodes, maxResolveItems, "resolved"), (nodes) => {
    const items: Array<ResolveItem> = []
    for (const [i, item] of nodes.entries()) {
      const range = item.range === undefined ? undefined : versionRangeOf(item.range)
      if (item.range !== undefined && range === undefined) {
        return Effect.fail(new BadRequest({ message: `Invalid value for 'nodes.${i}.range': expected a version range such as ^1.2, >=1 <2, ~=1.2 or >=1.2,<2` }))
      }
      items.push({ id: item.id, range })
    }
    return Effect.succeed(items)
  })

/** The conflict check's answer in the wire's names. */
const conflictAnswer = (checked: CheckedConflicts): CheckDependencyConflictsResponse => ({
  conflicts: checked.report.conflicts.map((c) => ({
    package: c.package,
    requirements: c.requirements.map((a) => ({
      node_id: a.nodeId,
      version: a.version,
      requirement: a.text,
      specifier: a.requirement.specifier,
      ...(a.requirement.markerText === undefined ? {} : { marker: a.requirement.markerText }),
      marker_assumed: a.markerAssumed
    }))
  })),
  unparseable: checked.report.unparseable.map((u) => ({ node_id: u.nodeId, version: u.version, requirement: u.text, error: u.error })),
  not_found: checked.notFound.map((p) => ({ node_id: p.nodeId, version: p.version })),
  markers_assumed: checked.report.markersAssumed
})

/** The versions to check, the count first: past the limit is 413 naming `versions`. */
const conflictVersionsOf = (body: CheckDependencyConflictsRequest) =>
  Effect.map(atMost("versions", body.versions, maxConflictVersions, "checked"), (versions) => versions.map((v) => ({ nodeId: v.node_id, version: v.version })))

/** An item's answer: what was asked, with the choice or the refusal. */
const resolvedItem = (asked: ResolveNodeVersionsRequest["nodes"][number], resolved: Resolved): ResolvedItem => ({
  id: asked.id,
  ...(asked.range === undefined ? {} : { range: asked.range }),
  ...(resolved._tag === "Chosen"
    ? { version: resolved.version, ...(resolved.downloadUrl === null ? {} : { downloadUrl: resolved.downloadUrl }) }
    : { error: resolved.error, reason: resolved.reason })
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
        answer(
          wantedOf(query).pipe(
            Effect.flatMap((wanted) => catalog.install(params.nodeId, wanted, clientAddress(request, trustProxy))),
            Effect.flatMap(fromItsStore)
          )
        ))
      .handle("resolveNodeVersions", ({ payload }) =>
        resolveItemsOf(payload).pipe(
          Effect.flatMap((items) => catalog.resolve(items, hostOf(payload.host_version))),
          Effect.map((resolved) => ({ nodes: resolved.map((r, i) => resolvedItem(payload.nodes[i]!, r)) })),
          answer
        ))
      .handle("checkDependencyConflicts", ({ payload }) =>
        conflictVersionsOf(payload).pipe(
          Effect.flatMap((pairs) => catalog.conflicts(pairs, payload.environment)),
          Effect.map(conflictAnswer),
          answer
        ))
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
