/**
 * Versions across nodes: the moderation queue (site admins see every status, everyone else the
 * active versions of listed nodes) and the bulk resolution of the pairs a lock file pins.
 */
import { Context, Effect, Layer, Option } from "effect"
import { Viewer } from "../Domain/Auth.ts"
import { NodeVersion, type NodeVersionStatus } from "../Domain/Node.ts"
import type { BulkNodeVersionResult, NodeVersionIdentifier, NodeVersionPage } from "../Domain/Versions.ts"
import { type ResolvedPair, VersionsRepo } from "./Repo.ts"
import { traced } from "../Tracing.ts"

/** What the queue is asked for. */
export interface QueueRequest {
  readonly page: number
  readonly pageSize: number
  readonly statuses: ReadonlyArray<NodeVersionStatus> | undefined
  readonly nodeId: string | undefined
  readonly statusReason: string | undefined
  readonly includeStatusReason: boolean
}

const active: NodeVersionStatus = "NodeVersionStatusActive"

/** The statuses a caller may see of those asked (every status when none are asked). */
const visibleStatuses = (asked: ReadonlyArray<NodeVersionStatus> | undefined, siteAdmin: boolean) =>
  siteAdmin ? asked : (asked ?? [active]).filter((s) => s === active)

const withoutStatusReason = ({ status_reason: _, ...rest }: NodeVersion) => new NodeVersion(rest, { disableChecks: true })

/** The result of one pair: deleted records are not found, banned ones refused with a reason. */
export const resultOf = (identifier: NodeVersionIdentifier, found: ResolvedPair): BulkNodeVersionResult => {
  const refused = (error_message: string): BulkNodeVersionResult => ({ identifier, status: "error", error_message })
  const { node_status, publisher_status, version } = found
  if (node_status === null || node_status === "NodeStatusDeleted") return { identifier, status: "not_found" }
  if (node_status === "NodeStatusBanned") return refused(`Node '${identifier.node_id}' is banned`)
  if (publisher_status === "PublisherStatusBanned") return refused(`The publisher of node '${identifier.node_id}' is banned`)
  if (version === null || version.status === "NodeVersionStatusDeleted") return { identifier, status: "not_found" }
  if (version.status === "NodeVersionStatusBanned") {
    return refused(`Version '${identifier.version}' of node '${identifier.node_id}' is banned`)
  }
  return { identifier, status: "success", node_version: version }
}

export class Versions extends Context.Service<Versions>()("Versions", {
  make: Effect.gen(function*() {
    const repo = yield* VersionsRepo

    return {
      /** A page of the queue, newest first, as the caller may see it. */
      queue: traced("Versions.queue")(function*(request: QueueRequest) {
        const siteAdmin = Option.exists(yield* Viewer, (user) => user.isSiteAdmin)
        const { total, versions } = yield* repo.queuePage({
          page: request.page,
          pageSize: request.pageSize,
          statuses: visibleStatuses(request.statuses, siteAdmin),
          nodeId: request.nodeId,
          statusReason: request.statusReason,
          listedOnly: !siteAdmin
        })
        const page: NodeVersionPage = {
          page: request.page,
          pageSize: request.pageSize,
          total,
          totalPages: Math.ceil(total / request.pageSize),
          versions: request.includeStatusReason ? versions : versions.map(withoutStatusReason)
        }
        return page
      }),

      /** Each pair's version or why there is none, in the request's order. */
      resolve: traced("Versions.resolve")(function*(pairs: ReadonlyArray<NodeVersionIdentifier>) {
        const found = yield* repo.resolve(pairs)
        return pairs.map((pair, i) => resultOf(pair, found[i]!))
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(Versions, Versions.make)
  static readonly layer = Versions.layerWithoutDependencies.pipe(Layer.provide(VersionsRepo.layer))
}
