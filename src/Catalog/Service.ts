/**
 * Catalogue reads: the listings (the fast path, cached for `GET /nodes`), search, and nodes and
 * versions as clients may see them. A deleted node is missing; a banned one, or one of a banned
 * publisher, is refused by name.
 */
import { Context, Data, Effect, Layer, Option } from "effect"
import { Policy } from "../Auth/Policy.ts"
import { Viewer } from "../Domain/Auth.ts"
import { NodeMissing, NotPermitted, VersionMissing } from "../Domain/Errors.ts"
import { Node, type NodeVersionStatus } from "../Domain/Node.ts"
import { type NodeQuery, NodePages, type SearchQuery } from "./NodePages.ts"
import { PageCache, renderPage } from "./PageCache.ts"
import { type NodeCandidates, NodeRepo, requireVisible } from "./Repo.ts"
import { choose, type Wanted } from "./Resolution.ts"
import { type ConflictReport, findConflicts } from "./Conflicts.ts"
import type { Environment } from "../Domain/Requirements.ts"
import type { VersionRange } from "../Domain/Semver.ts"
import { span, traced } from "../Tracing.ts"
import { renderVersion, VersionCache } from "./VersionCache.ts"

/** The node has no installable version (or not the one asked for, or none its range admits). */
export class NothingToInstall extends Data.TaggedError("NothingToInstall")<{
  readonly nodeId: string
  readonly version: string | undefined
  /** Which constraint excluded what (Resolution.ts), when a range or host was asked. */
  readonly reason?: string
}> {
  override get message() {
    return this.reason !== undefined
      ? `Node '${this.nodeId}': ${this.reason}`
      : this.version === undefined
      ? `Node '${this.nodeId}' has no installable version`
      : `Node '${this.nodeId}' has no installable version '${this.version}'`
  }
}

/** Versions satisfy the range, but none supports the caller's host. */
export class HostExcluded extends Data.TaggedError("HostExcluded")<{
  readonly nodeId: string
  readonly reason: string
}> {
  override get message() {
    return `Node '${this.nodeId}': ${this.reason}`
  }
}

/** A conflict check's findings, and the versions asked for that were not found. */
export interface CheckedConflicts {
  readonly report: ConflictReport
  readonly notFound: ReadonlyArray<{ readonly nodeId: string; readonly version: string }>
}

/** One item of a bulk resolve: a node and the range its versions must satisfy. */
export interface ResolveItem {
  readonly id: string
  readonly range: VersionRange | undefined
}

/** An item's outcome: the chosen version, or the code and reason of the refusal. */
export type Resolved =
  | { readonly _tag: "Chosen"; readonly version: string; readonly downloadUrl: string | null }
  | { readonly _tag: "Refused"; readonly error: ResolveRefusal; readonly reason: string }

/** The codes of a bulk item's refusals: those the single install answers with. */
export type ResolveRefusal = "not_found" | "node_banned" | "no_installable_version" | "host_version_unsupported"

/** A node's standing, as a bulk item's refusal when clients may not see it. */
const refusalOf = (row: NodeCandidates | undefined, nodeId: string): Resolved | undefined =>
  row === undefined || row.nodeStatus === "NodeStatusDeleted"
    ? { _tag: "Refused", error: "not_found", reason: `Node '${nodeId}' not found` }
    : row.nodeStatus === "NodeStatusBanned" || row.publisherStatus === "PublisherStatusBanned"
    ? { _tag: "Refused", error: "node_banned", reason: `Node '${nodeId}' is banned` }
    : row.nodeStatus !== "NodeStatusActive"
    ? { _tag: "Refused", error: "no_installable_version", reason: `Node '${nodeId}' has no installable version` }
    : undefined

/** A publisher's listing: its nodes, and with `includeBanned` its banned ones too. */
export interface PublisherListing {
  readonly publisherId: string
  readonly includeBanned: boolean
}

/** The search names something to look for; without, it is a listing. */
const hasCriterion = (q: SearchQuery) => q.text !== undefined || q.hostNode !== undefined || q.repository !== undefined

export class Catalog extends Context.Service<Catalog>()("Catalog", {
  make: Effect.gen(function*() {
    const nodes = yield* NodeRepo
    const pages = yield* NodePages
    const cache = yield* PageCache
    const policy = yield* Policy
    const versions = yield* VersionCache

    /** The node's standing, failing unless clients may see it. */
    const visibleState = (nodeId: string) =>
      Effect.flatMap(nodes.nodeState(nodeId), Option.match({
        onNone: () => Effect.fail(new NodeMissing({ nodeId })),
        onSome: (state) => Effect.as(requireVisible(nodeId, state), state)
      }))

    /** A version's answer from the database. */
    const findVersion = (nodeId: string, versionOrId: string) =>
      Effect.gen(function*() {
        const found = yield* nodes.findVersion(nodeId, versionOrId)
        if (Option.isSome(found)) {
          yield* requireVisible(nodeId, { status: found.value.nodeStatus, publisherStatus: found.value.publisherStatus }).pipe(
            Effect.catchTag("NodeMissing", () => new VersionMissing({ nodeId, version: versionOrId }))
          )
          return renderVersion(found.value.version)
        }
        // no such version: a banned node is refused as such, whatever was asked of it
        yield* visibleState(nodeId).pipe(Effect.catchTag("NodeMissing", () => Effect.void))
        return yield* new VersionMissing({ nodeId, version: versionOrId })
      })

    /** The publisher exists, and banned nodes are shown to its members and site admins only. */
    const authorizeListing = (listing: PublisherListing) =>
      Effect.gen(function*() {
        const { role, user } = yield* policy.standingIn(listing.publisherId)
        if (listing.includeBanned && !user.isSiteAdmin && Option.isNone(role)) {
          return yield* new NotPermitted({ reason: "include_banned is for members of the publisher and site admins" })
        }
      })

    /** Banned nodes are shown in searches and GET /nodes to site admins only. */
    const authorizeSearch = (query: { readonly includeBanned?: boolean | undefined }) =>
      Effect.gen(function*() {
        if (!query.includeBanned) return
        const viewer = yield* Viewer
        if (Option.isNone(viewer) || !viewer.value.isSiteAdmin) {
          return yield* new NotPermitted({ reason: "include_banned is for site admins" })
        }
      })

    /** A search without criteria: the listing of GET /nodes (its cached pages when banned nodes are not asked for). */
    const searchListing = (query: SearchQuery) => {
      const listing: NodeQuery = {
        page: query.page,
        limit: query.limit,
        sort: [],
        supportedOs: query.supportedOs,
        supportedAccelerator: query.supportedAccelerator,
        includeBanned: query.includeBanned
      }
      return query.includeBanned
        ? Effect.map(pages.listPage(listing), ({ nodes, total }) => renderPage(listing, nodes, total))
        : Effect.map(cache.get(listing, false), (served) => served.page)
    }

    return {
      /** A page of `GET /nodes`: cached unless `bypass` or it includes banned nodes (PageCache.ts). */
      listNodes: traced("Catalog.listNodes")(function*(query: NodeQuery, bypass: boolean) {
        yield* authorizeSearch(query)
        return yield* cache.get(query, bypass)
      }),

      /**
       * A page of search results (not cached: host-node records, which search covers, change
       * without invalidating pages); without criteria, a page of the listing.
       */
      search: traced("Catalog.search")(function*(query: SearchQuery) {
        yield* authorizeSearch(query)
        if (!hasCriterion(query)) return yield* searchListing(query)
        const { nodes, total } = yield* pages.search(query)
        return renderPage(query, nodes, total)
      }),

      /** Every node of the publisher, as a JSON array text. */
      publisherNodes: traced("Catalog.publisherNodes")(function*(listing: PublisherListing) {
        yield* authorizeListing(listing)
        const { nodes } = yield* pages.listPage({ page: 1, limit: Number.MAX_SAFE_INTEGER, sort: [], ...listing })
        return `[${nodes}]`
      }),

      /** A page of the publisher's nodes. */
      publisherNodesPage: traced("Catalog.publisherNodesPage")(
        function*(listing: PublisherListing, page: { readonly page: number; readonly limit: number }) {
          yield* authorizeListing(listing)
          const { nodes, total } = yield* pages.listPage({ ...page, sort: [], ...listing })
          return renderPage(page, nodes, total)
        }
      ),

      /** The node with its latest version, and its translations unless left out. */
      getNode: traced("Catalog.getNode")(function*(nodeId: string, options: { readonly translations: boolean }) {
        const node = yield* nodes.findNode(nodeId)
        if (Option.isNone(node)) return yield* new NodeMissing({ nodeId })
        yield* requireVisible(nodeId, { status: node.value.status, publisherStatus: node.value.publisher.status })
        if (options.translations) return node.value
        const { translations: _left, ...rest } = node.value
        return new Node(rest, { disableChecks: true })
      }),

      /**
       * A version by version string or id, as the bytes of its answer (VersionCache.ts); a
       * deleted one is missing.
       */
      getVersion: (nodeId: string, versionOrId: string) =>
        versions.get(nodeId, versionOrId, findVersion(nodeId, versionOrId)).pipe(span("Catalog.getVersion")),

      /** The node's versions in these statuses, newest semantic version first. */
      listVersions: traced("Catalog.listVersions")(function*(nodeId: string, statuses: ReadonlyArray<NodeVersionStatus>) {
        yield* visibleState(nodeId)
        return yield* nodes.listVersions(nodeId, statuses)
      }),

      /**
       * The version to install (the newest installable unless one is named), counted as a
       * download once per client address, node and version an hour.
       */
      install: traced("Catalog.install")(function*(nodeId: string, wanted: Wanted, client: string) {
        const version = wanted.pinned
        if (wanted.range !== undefined || wanted.host !== undefined) {
          // chosen on the candidates (Resolution.ts), then installed by number: the second
          // statement refuses a version yanked or withdrawn in between rather than counting it
          const [row] = yield* nodes.candidates([nodeId])
          if (row === undefined) return yield* new NodeMissing({ nodeId })
          yield* requireVisible(nodeId, { status: row.nodeStatus, publisherStatus: row.publisherStatus })
          const choice = choose(row.candidates, wanted)
          if (choice._tag === "NoMatch") return yield* new NothingToInstall({ nodeId, version, reason: choice.reason })
          if (choice._tag === "HostExcluded") return yield* new HostExcluded({ nodeId, reason: choice.reason })
          const chosen = choice.candidate.version
          const installed = yield* nodes.install(nodeId, chosen, client, version !== undefined)
          const record = Option.isSome(installed) ? installed.value.version : undefined
          if (record === undefined) {
            return yield* new NothingToInstall({ nodeId, version, reason: `version ${chosen} stopped being installable while resolving; try again` })
          }
          return record
        }
        const installed = yield* nodes.install(nodeId, version, client)
        if (Option.isNone(installed)) return yield* new NodeMissing({ nodeId })
        const { node_status, publisher_status, version: chosen } = installed.value
        yield* requireVisible(nodeId, { status: node_status, publisherStatus: publisher_status })
        if (chosen === undefined) return yield* new NothingToInstall({ nodeId, version })
        return chosen
      }),

      /**
       * The dependency conflicts between these versions (Conflicts.ts), and the versions not
       * found (unknown, deleted, or of a node clients may not see). Their dependencies are read in
       * one statement and parsed here, so versions published before parsing began are read alike.
       */
      conflicts: traced("Catalog.conflicts")(function*(
        pairs: ReadonlyArray<{ readonly nodeId: string; readonly version: string }>,
        environment: Environment | undefined
      ) {
        const rows = yield* nodes.dependencies(pairs)
        const found = new Map(rows.map((r) => [`${r.node_id}\u0000${r.version}`, r]))
        const notFound = pairs.filter((p) => !found.has(`${p.nodeId}\u0000${p.version}`))
        const report: ConflictReport = findConflicts(
          rows.map((r) => ({ nodeId: r.node_id, version: r.version, dependencies: r.dependencies })),
          environment
        )
        return { report, notFound } satisfies CheckedConflicts
      }),

      /**
       * Each item's choice under its range and the one host version, or why none: the candidates
       * of every named node read in one statement, chosen here. Counts no download.
       */
      resolve: traced("Catalog.resolve")(function*(items: ReadonlyArray<ResolveItem>, host: Wanted["host"]) {
        const rows = yield* nodes.candidates([...new Set(items.map((item) => item.id))])
        const byId = new Map(rows.map((row) => [row.nodeId, row]))
        return items.map((item): Resolved => {
          const row = byId.get(item.id)
          const refused = refusalOf(row, item.id)
          if (refused !== undefined || row === undefined) return refused!
          const choice = choose(row.candidates, { range: item.range, host })
          switch (choice._tag) {
            case "Chosen":
              return { _tag: "Chosen", version: choice.candidate.version, downloadUrl: choice.candidate.downloadUrl }
            case "NoMatch":
              return { _tag: "Refused", error: "no_installable_version", reason: choice.reason }
            case "HostExcluded":
              return { _tag: "Refused", error: "host_version_unsupported", reason: choice.reason }
          }
        })
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(Catalog, Catalog.make)
  static readonly layer = Catalog.layerWithoutDependencies.pipe(Layer.provide([NodeRepo.layer, NodePages.layer, PageCache.layer, VersionCache.layer, Policy.layer]))
}
