/**
 * Host-node records of a node version: anyone reads them; the extraction job (a site admin) records
 * them in bulk; the node's managers and site admins update one, and only site admins its policy.
 */
import { Context, Data, Effect, Layer, Option } from "effect"
import { Policy } from "../Auth/Policy.ts"
import { type NamedVersion, NodeRepo, requireVisible } from "../Catalog/Repo.ts"
import { NotPermitted, VersionMissing } from "../Domain/Errors.ts"
import type { HostNodeCreate, HostNodePage, HostNodeUpdate } from "../Domain/HostNode.ts"
import { managerRoles } from "../Domain/Publisher.ts"
import { HostNodeMissing, type HostNodeQuery, HostNodeRepo, quoteSome } from "./Repo.ts"
import { traced } from "../Tracing.ts"

/** A bulk record names one host-node more than once. */
export class HostNodeNamesRepeated extends Data.TaggedError("HostNodeNamesRepeated")<{ readonly names: ReadonlyArray<string> }> {
  override get message() {
    return `The body names ${quoteSome(this.names)} more than once`
  }
}

/** No listed node's latest active version provides the host-node. */
export class HostNodeProviderMissing extends Data.TaggedError("HostNodeProviderMissing")<{ readonly name: string }> {
  override get message() {
    return `No node provides the host-node '${this.name}'`
  }
}

/** Names that occur more than once, each once. */
const repeatedNames = (names: ReadonlyArray<string>): Array<string> => {
  const seen = new Set<string>()
  const repeated = new Set<string>()
  for (const name of names) (seen.has(name) ? repeated : seen).add(name)
  return [...repeated]
}

export class HostNodes extends Context.Service<HostNodes>()("HostNodes", {
  make: Effect.gen(function*() {
    const repo = yield* HostNodeRepo
    const nodes = yield* NodeRepo
    const policy = yield* Policy

    /** The node and its version `version` (its version string), one read; a deleted node, or none, is missing. */
    const locate = (nodeId: string, version: string) =>
      Effect.flatMap(nodes.namedVersion(nodeId, version), (found) =>
        Option.isSome(found) && found.value.node.status !== "NodeStatusDeleted"
          ? Effect.succeed(found.value)
          : Effect.fail(new VersionMissing({ nodeId, version })))

    /** The version's id, unless it is deleted or there is none. */
    const versionIdOf = (nodeId: string, version: string, found: NamedVersion) =>
      Option.isSome(found.version) && found.version.value.status !== "NodeVersionStatusDeleted"
        ? Effect.succeed(found.version.value.id)
        : Effect.fail(new VersionMissing({ nodeId, version }))

    return {
      /** One record of an active version of a node clients may see. */
      get: traced("HostNodes.get")(function*(nodeId: string, version: string, name: string) {
        const found = yield* locate(nodeId, version)
        yield* requireVisible(nodeId, found.node)
        const versionId = Option.isSome(found.version) && found.version.value.status === "NodeVersionStatusActive"
          ? found.version.value.id
          : yield* new VersionMissing({ nodeId, version })
        const record = yield* repo.find(versionId, name)
        if (Option.isNone(record)) return yield* new HostNodeMissing({ name })
        return record.value
      }),

      /** A page of the records the public may see. */
      listAll: traced("HostNodes.listAll")(function*(query: HostNodeQuery) {
        const { records, total } = yield* repo.listPage(query)
        const page: HostNodePage = {
          host_nodes: records,
          page: query.page,
          pageSize: query.pageSize,
          total,
          totalPages: Math.ceil(total / query.pageSize)
        }
        return page
      }),

      /** The node that provides the host-node, with its latest version. */
      provider: traced("HostNodes.provider")(function*(name: string) {
        const nodeId = yield* repo.provider(name)
        if (Option.isNone(nodeId)) return yield* new HostNodeProviderMissing({ name })
        const node = yield* nodes.findNode(nodeId.value)
        // it was listed a statement ago: a change in between leaves nobody to name
        if (Option.isNone(node)) return yield* new HostNodeProviderMissing({ name })
        return node.value
      }),

      list: traced("HostNodes.list")(function*(nodeId: string, version: string) {
        const found = yield* locate(nodeId, version)
        // as for the version itself: a banned node (or publisher) is refused, whatever the version
        yield* requireVisible(nodeId, found.node)
        return yield* repo.list(yield* versionIdOf(nodeId, version, found))
      }),

      create: traced("HostNodes.create")(function*(nodeId: string, version: string, records: ReadonlyArray<HostNodeCreate>) {
        yield* policy.requireSiteAdmin
        const versionId = yield* versionIdOf(nodeId, version, yield* locate(nodeId, version))
        const repeated = repeatedNames(records.map((r) => r.host_node_name))
        if (repeated.length > 0) return yield* new HostNodeNamesRepeated({ names: repeated })
        return yield* repo.create(versionId, records)
      }),

      /** The extraction job reports that it could not extract the version's host-nodes. */
      extractionFailed: traced("HostNodes.extractionFailed")(function*(nodeId: string, version: string, reason: string | undefined) {
        yield* policy.requireSiteAdmin
        const versionId = yield* versionIdOf(nodeId, version, yield* locate(nodeId, version))
        yield* repo.extractionFailed(versionId)
        // the reason is the operators' to read: the answers carry the status alone
        yield* Effect.logInfo("host-node extraction failed").pipe(
          Effect.annotateLogs({ nodeId, version, reason: reason ?? "" })
        )
      }),

      update: traced("HostNodes.update")(
        function*(nodeId: string, version: string, name: string, patch: HostNodeUpdate) {
          const found = yield* locate(nodeId, version)
          const { user } = yield* policy.requireRole(found.node.publisherId, managerRoles, { siteAdmin: true })
          if (patch.policy !== undefined && !user.isSiteAdmin) {
            return yield* new NotPermitted({ reason: "Only site admins may change a host-node's policy" })
          }
          return yield* repo.update(yield* versionIdOf(nodeId, version, found), name, patch)
        }
      )
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(HostNodes, HostNodes.make)
  static readonly layer = HostNodes.layerWithoutDependencies.pipe(Layer.provide([HostNodeRepo.layer, NodeRepo.layer, Policy.layer]))
}
