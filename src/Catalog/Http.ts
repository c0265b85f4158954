import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Deferred, Effect, FiberId, Metric, Option } from "effect"
import { createHash } from "node:crypto"
import { Api } from "../Api.ts"
import { jsonText } from "../Domain/JsonText.ts"
import { roleIn } from "../Auth/Policy.ts"
import { BadRequest, Forbidden, nodeBanned, NotFound } from "../Errors.ts"
import { PublisherRepo } from "../Publishers/Repo.ts"
import { defaultLimit, type ListNodesParams, maxLimit } from "./Api.ts"
import { type CachedPage, ListCache } from "./ListCache.ts"
import { installableStatus, type NodeAccess, type NodePage, type NodeQuery, NodeRepo, type SortColumn } from "./Repo.ts"
import { SearchRepo } from "./SearchRepo.ts"
import { semverKey } from "./Semver.ts"

const isTrue = (flag: string | undefined) => flag === "true" || flag === "1"

const pageOf = (page: number | undefined, limit: number | undefined) => ({
  page: page ?? 1,
  limit: Math.min(limit ?? defaultLimit, maxLimit)
})

/** The validated query of `GET /nodes`; a host version that is not semver is the client's error. */
const toQuery = (p: ListNodesParams): Effect.Effect<NodeQuery, BadRequest> => {
  let hostVersionKey: string | undefined
  if (p.host_version !== undefined) {
    hostVersionKey = semverKey(p.host_version.trim().replace(/^v/i, ""))
    if (hostVersionKey === undefined) {
      return Effect.fail(new BadRequest({ message: `Invalid value for 'host_version': '${p.host_version}' is not a semantic version` }))
    }
  }
  return Effect.succeed({
    ...pageOf(p.page, p.limit),
    sort: (p.sort ?? []).map((s) => {
      const [column, direction] = s.split(";")
      return { column: column as SortColumn, desc: direction === "desc" }
    }),
    supportedOs: p.supported_os,
    supportedAccelerator: p.supported_accelerator,
    updatedAfter: p.timestamp,
    nodeIds: p.node_id,
    hostVersionKey
  })
}

/** Two queries asking the same thing share one key. */
const cacheKey = (q: NodeQuery) =>
  JSON.stringify([
    q.page, q.limit, q.sort, q.supportedOs?.toLowerCase(), q.supportedAccelerator?.toLowerCase(),
    q.updatedAfter?.getTime(), q.nodeIds && [...q.nodeIds].sort(), q.hostVersionKey
  ])

const encoder = new TextEncoder()

const render = (json: string): CachedPage => {
  const body = encoder.encode(json)
  return { body, etag: `"${createHash("sha1").update(body).digest("base64url")}"` }
}

const renderList = (q: { page: number; limit: number }, page: NodePage) =>
  render(
    `{"limit":${q.limit},"nodes":[${page.nodes}],"page":${q.page},"total":${page.total},"totalPages":${
      Math.ceil(page.total / q.limit)
    }}`
  )

/** If-None-Match holds the page's ETag (weak comparison, lists and `*` included). */
const notModified = (request: HttpServerRequest.HttpServerRequest, etag: string) => {
  const header = request.headers["if-none-match"]
  if (header === undefined) return false
  return header.split(",").some((tag) => {
    const t = tag.trim()
    return t === "*" || t.replace(/^W\//, "") === etag
  })
}

const respond = (request: HttpServerRequest.HttpServerRequest, page: CachedPage, cache: "hit" | "miss" | "bypass") => {
  const headers = { etag: page.etag, "cache-control": "no-cache", "x-cache": cache }
  return notModified(request, page.etag)
    ? HttpServerResponse.empty({ status: 304, headers })
    : HttpServerResponse.uint8Array(page.body, { contentType: "application/json", headers })
}

const listRequests = Metric.counter("nodes_list_requests", { description: "GET /nodes requests by form factor" })
const knownFormFactors = new Set(["desktop-win", "desktop-mac", "git-windows", "git-mac", "git-linux", "other"])

export const CatalogLive = HttpApiBuilder.group(Api, "catalog", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* NodeRepo
    const cache = yield* ListCache
    const searchRepo = yield* SearchRepo

    /**
     * Concurrent misses of one page share one query. It runs apart from the requests, so a client
     * that goes away neither cancels it for the others nor keeps the page from being cached.
     */
    const inFlight = new Map<string, Deferred.Deferred<CachedPage>>()
    const shared = (key: string, compute: Effect.Effect<CachedPage>) =>
      Effect.suspend(() => {
        const pending = inFlight.get(key)
        if (pending) return Deferred.await(pending)
        const deferred = Deferred.unsafeMake<CachedPage>(FiberId.none)
        inFlight.set(key, deferred)
        return compute.pipe(
          Effect.intoDeferred(deferred),
          Effect.ensuring(Effect.sync(() => inFlight.delete(key))),
          Effect.forkDaemon,
          Effect.zipRight(Deferred.await(deferred))
        )
      })
    return handlers
      .handle("listAllNodes", ({ request, urlParams }) =>
        Effect.gen(function*() {
          const formFactor = urlParams.form_factor?.toLowerCase() ?? "unknown"
          yield* Metric.increment(Metric.tagged(listRequests, "form_factor", knownFormFactors.has(formFactor) ? formFactor : "unknown"))
          const query = yield* toQuery(urlParams)
          const key = cacheKey(query)
          const compute = Effect.gen(function*() {
            const generation = cache.generation()
            const page = renderList(query, yield* repo.listPage(query))
            cache.set(key, generation, page)
            return page
          })
          if (isTrue(urlParams.latest)) return respond(request, yield* compute, "bypass")
          const hit = cache.get(key)
          if (Option.isSome(hit)) return respond(request, hit.value, "hit")
          return respond(request, yield* shared(key, compute), "miss")
        }))
      // not cached: host-node records, which search covers, change without invalidating list pages
      .handle("searchNodes", ({ urlParams }) =>
        Effect.gen(function*() {
          const q = pageOf(urlParams.page, urlParams.limit)
          const page = yield* searchRepo.search({
            ...q,
            text: urlParams.search,
            supportedOs: urlParams.supported_os,
            supportedAccelerator: urlParams.supported_accelerator
          })
          return HttpServerResponse.uint8Array(renderList(q, page).body, { contentType: "application/json" })
        }))
      .handle("getNodeVersion", ({ path }) =>
        Effect.gen(function*() {
          const found = yield* repo.findVersion(path.nodeId, path.versionId)
          switch (found._tag) {
            case "Missing":
              return yield* new NotFound({ message: `Node '${path.nodeId}' has no version '${path.versionId}'` })
            case "Banned":
              return yield* nodeBanned(path.nodeId)
            case "Visible":
              return jsonText(found.json)
          }
        }))
      .handle("getNode", ({ path }) =>
        Effect.flatMap(repo.nodeAccess(path.nodeId), (found) => visible(path.nodeId, found)))
      .handle("listNodeVersions", ({ path, urlParams }) =>
        Effect.flatMap(
          repo.listVersions(path.nodeId, urlParams.statuses ?? [installableStatus]),
          (found) => visible(path.nodeId, found)
        ))
      .handle("installNode", ({ path, urlParams }) =>
        Effect.gen(function*() {
          const result = yield* repo.install(path.nodeId, urlParams.version)
          switch (result._tag) {
            case "Missing":
            case "Banned":
              return yield* visible(path.nodeId, result)
            case "NoInstallableVersion":
              return yield* new NotFound({
                code: "no_installable_version",
                message: urlParams.version === undefined
                  ? `Node '${path.nodeId}' has no installable version`
                  : `Node '${path.nodeId}' has no installable version '${urlParams.version}'`
              })
            case "Installed":
              return jsonText(result.json)
          }
        }))
  }))

/** The JSON of a node a client may see; 404 for an absent or deleted node, 403 for a banned one. */
const visible = (nodeId: string, found: NodeAccess): Effect.Effect<HttpServerResponse.HttpServerResponse, NotFound | Forbidden> => {
  switch (found._tag) {
    case "Missing":
      return Effect.fail(new NotFound({ message: `No node '${nodeId}'` }))
    case "Banned":
      return Effect.fail(nodeBanned(nodeId))
    case "Visible":
      return Effect.succeed(jsonText(found.json))
  }
}

export const PublisherNodesLive = HttpApiBuilder.group(Api, "publisherNodes", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* NodeRepo
    const publishers = yield* PublisherRepo

    /** The publisher exists, and banned nodes are shown to its members and site admins only. */
    const authorize = (publisherId: string, includeBanned: boolean) =>
      Effect.gen(function*() {
        const { role, user } = yield* roleIn(publisherId)
        if (includeBanned && !user.isSiteAdmin && Option.isNone(role)) {
          return yield* new Forbidden({ message: "include_banned is for members of the publisher and site admins" })
        }
      }).pipe(Effect.provideService(PublisherRepo, publishers))

    return handlers
      .handle("listNodesForPublisher", ({ path, urlParams }) =>
        Effect.gen(function*() {
          const includeBanned = isTrue(urlParams.include_banned)
          yield* authorize(path.publisherId, includeBanned)
          const page = yield* repo.listPage({
            page: 1,
            limit: Number.MAX_SAFE_INTEGER,
            sort: [],
            publisherId: path.publisherId,
            includeBanned
          })
          return jsonText(`[${page.nodes}]`)
        }))
      .handle("listNodesForPublisherV2", ({ path, urlParams }) =>
        Effect.gen(function*() {
          const includeBanned = isTrue(urlParams.include_banned)
          yield* authorize(path.publisherId, includeBanned)
          const q = pageOf(urlParams.page, urlParams.limit)
          const page = yield* repo.listPage({ ...q, sort: [], publisherId: path.publisherId, includeBanned })
          return HttpServerResponse.uint8Array(renderList(q, page).body, { contentType: "application/json" })
        }))
  }))
