/**
 * Site moderation (site admins only): unclaimed nodes for authors to claim, and the statuses of
 * nodes and versions, moved as the state machines of Domain/Transitions.ts allow.
 */
import { Data, Effect, Option } from "effect"
import { Policy } from "../Auth/Policy.ts"
import { NodeRepo } from "../Catalog/Repo.ts"
import { NodeMissing, TransitionRefused, VersionMissing } from "../Domain/Errors.ts"
import { NodeStatus, type NodeVersionStatus } from "../Domain/Node.ts"
import { unclaimedPublisherId } from "../Domain/Publisher.ts"
import { nodeStatusMoves, nodeVersionStatusMoves, statesReaching } from "../Domain/Transitions.ts"
import { type NodePatch, PublishingRepo } from "../Publishing/Repo.ts"
import { traced } from "../Tracing.ts"

/** An installable version must have an archive to serve. */
export class NoArchive extends Data.TaggedError("NoArchive")<{}> {
  override get message() {
    return "The version has no uploaded archive to make installable"
  }
}

export class Moderation extends Effect.Service<Moderation>()("Moderation", {
  effect: Effect.gen(function*() {
    const nodes = yield* NodeRepo
    const publishing = yield* PublishingRepo
    const policy = yield* Policy

    const current = (nodeId: string) =>
      Effect.flatMap(nodes.findNode(nodeId), Option.match({
        onNone: () => Effect.fail(new NodeMissing({ nodeId })),
        onSome: Effect.succeed
      }))

    return {
      /** A node waiting in the `unclaimed` publisher for its author. */
      createUnclaimedNode: traced("Moderation.createUnclaimedNode")(function*(node: NodePatch & { readonly id: string }) {
        yield* policy.requireSiteAdmin
        const { id, ...fields } = node
        // the reserved publisher is never deleted
        yield* publishing.createNode(unclaimedPublisherId, id, fields).pipe(Effect.catchTag("PublisherMissing", Effect.die))
        return yield* Effect.orDie(current(id))
      }),

      /** Moderation fields, and a status move; a refused move refuses the whole request. */
      moderateNode: traced("Moderation.moderateNode")(function*(nodeId: string, patch: NodePatch) {
        yield* policy.requireSiteAdmin
        const target = patch.status
        const from = target === undefined ? NodeStatus.literals : statesReaching(nodeStatusMoves, target)
        yield* publishing.updateNode(nodeId, from, patch)
        return yield* current(nodeId)
      }),

      moderateVersion: traced("Moderation.moderateVersion")(
        function*(nodeId: string, version: string, target: NodeVersionStatus, reason: string | undefined) {
          yield* policy.requireSiteAdmin
          const found = yield* nodes.versionState(nodeId, version)
          if (Option.isNone(found)) return yield* new VersionMissing({ nodeId, version })
          const state = found.value
          const from = statesReaching(nodeVersionStatusMoves, target)
          if (!from.includes(state.status)) return yield* new TransitionRefused({ record: "A version", from: state.status, to: target })
          if (target === "NodeVersionStatusActive" && !state.hasArchive) return yield* new NoArchive()
          // the status is checked again in the statement: a concurrent move wins or loses whole
          yield* publishing.moveVersion(nodeId, state.version, from, target, reason)
          return yield* Effect.flatMap(nodes.versionById(state.id), Effect.orDie)
        }
      )
    }
  }),
  dependencies: [NodeRepo.Default, PublishingRepo.Default, Policy.Default]
}) {}
