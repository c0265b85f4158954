/**
 * Host-node records of a node version: anyone reads them; the extraction job (a site admin) records
 * them in bulk; the node's managers and site admins update one, and only site admins its policy.
 */
import { Data, Effect, Option } from "effect"
import { Policy } from "../Auth/Policy.ts"
import { NodeIsBanned, NotPermitted, VersionMissing } from "../Domain/Errors.ts"
import type { HostNodeCreate, HostNodeUpdate } from "../Domain/HostNode.ts"
import { managerRoles } from "../Domain/Publisher.ts"
import { HostNodeRepo, quoteSome, type VersionLocation } from "./Repo.ts"

/** A bulk record names one host-node more than once. */
export class HostNodeNamesRepeated extends Data.TaggedError("HostNodeNamesRepeated")<{ readonly names: ReadonlyArray<string> }> {
  override get message() {
    return `The body names ${quoteSome(this.names)} more than once`
  }
}

/** Names that occur more than once, each once. */
const repeatedNames = (names: ReadonlyArray<string>): Array<string> => {
  const seen = new Set<string>()
  const repeated = new Set<string>()
  for (const name of names) (seen.has(name) ? repeated : seen).add(name)
  return [...repeated]
}

export class HostNodes extends Effect.Service<HostNodes>()("HostNodes", {
  effect: Effect.gen(function*() {
    const repo = yield* HostNodeRepo
    const policy = yield* Policy

    /** The version's id: missing for an unknown or deleted node or version. */
    const versionOf = (nodeId: string, version: string, at: Option.Option<VersionLocation>) =>
      Option.match(Option.flatMap(at, (l) => l.versionId), {
        onNone: () => Effect.fail(new VersionMissing({ nodeId, version })),
        onSome: Effect.succeed
      })

    return {
      list: Effect.fn("HostNodes.list")(function*(nodeId: string, version: string) {
        const at = yield* repo.locate(nodeId, version)
        // as for the version itself: a banned node (or publisher) is refused, whatever the version
        if (Option.exists(at, (l) => l.banned)) return yield* new NodeIsBanned({ nodeId })
        return yield* repo.list(yield* versionOf(nodeId, version, at))
      }),

      create: Effect.fn("HostNodes.create")(function*(nodeId: string, version: string, records: ReadonlyArray<HostNodeCreate>) {
        yield* policy.requireSiteAdmin
        const versionId = yield* versionOf(nodeId, version, yield* repo.locate(nodeId, version))
        const repeated = repeatedNames(records.map((r) => r.host_node_name))
        if (repeated.length > 0) return yield* new HostNodeNamesRepeated({ names: repeated })
        return yield* repo.create(versionId, records)
      }),

      update: Effect.fn("HostNodes.update")(
        function*(nodeId: string, version: string, name: string, patch: HostNodeUpdate) {
          const at = yield* repo.locate(nodeId, version)
          if (Option.isNone(at)) return yield* new VersionMissing({ nodeId, version })
          const { user } = yield* policy.requireRole(at.value.publisherId, managerRoles, { siteAdmin: true })
          if (patch.policy !== undefined && !user.isSiteAdmin) {
            return yield* new NotPermitted({ reason: "Only site admins may change a host-node's policy" })
          }
          return yield* repo.update(yield* versionOf(nodeId, version, at), name, patch)
        }
      )
    }
  }),
  dependencies: [HostNodeRepo.Default, Policy.Default]
}) {}
