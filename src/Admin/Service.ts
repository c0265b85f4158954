/**
 * Site moderation (site admins only): unclaimed nodes for authors to claim, the statuses of nodes
 * and versions, moved as the state machines of Domain/Transitions.ts allow, and the compatibility
 * of versions.
 */
import { Context, Data, Effect, Layer, Option } from "effect"
import { Policy } from "../Auth/Policy.ts"
import { NodeRepo } from "../Catalog/Repo.ts"
import { NodeMissing, TransitionRefused, VersionMissing } from "../Domain/Errors.ts"
import { NodeStatus, type NodeVersionStatus } from "../Domain/Node.ts"
import { unclaimedPublisherId } from "../Domain/Publisher.ts"
import { nodeStatusMoves, nodeVersionStatusMoves, statesReaching } from "../Domain/Transitions.ts"
import { type NodePatch, PublishingRepo, type VersionCompatibility, type VersionMove } from "../Publishing/Repo.ts"
import { traced } from "../Tracing.ts"

/** An installable version must have an archive to serve. */
export class NoArchive extends Data.TaggedError("NoArchive")<{}> {
  override get message() {
    return "The version has no uploaded archive to make installable"
  }
}

/** A site admin's change of a version (absent fields: unchanged). */
export interface VersionEdit extends VersionCompatibility {
  readonly status?: NodeVersionStatus | undefined
  readonly status_reason?: string | undefined
}

export class Moderation extends Context.Service<Moderation>()("Moderation", {
  make: Effect.gen(function*() {
    const nodes = yield* NodeRepo
    const publishing = yield* PublishingRepo
    const policy = yield* Policy

    const current = (nodeId: string) =>
      Effect.flatMap(nodes.findNode(nodeId), Option.match({
        onNone: () => Effect.fail(new NodeMissing({ nodeId })),
        onSome: Effect.succeed
      }))

    /**
     * The move a request asks of a version in `state`, checked against the machine and the
     * archive; the status is checked again under the version's lock, so a concurrent move wins or
     * loses whole. A reason alone moves to the current status: it is refused if that changes meanwhile.
     */
    const moveOf = (
      state: { readonly status: NodeVersionStatus; readonly hasArchive: boolean },
      target: NodeVersionStatus | undefined,
      reason: string | undefined
    ): Effect.Effect<VersionMove | undefined, TransitionRefused | NoArchive> => {
      if (target === undefined) return Effect.succeed(reason === undefined ? undefined : { from: [state.status], to: state.status, reason })
      const from = statesReaching(nodeVersionStatusMoves, target)
      if (!from.includes(state.status)) return Effect.fail(new TransitionRefused({ record: "A version", from: state.status, to: target }))
      if (target === "NodeVersionStatusActive" && !state.hasArchive) return Effect.fail(new NoArchive())
      return Effect.succeed({ from, to: target, reason })
    }

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

      /**
       * A status move and the version's compatibility, as one change; a refused move refuses the
       * whole request. A reason without a status explains the current status.
       */
      moderateVersion: traced("Moderation.moderateVersion")(function*(nodeId: string, versionOrId: string, edit: VersionEdit) {
        yield* policy.requireSiteAdmin
        const found = yield* nodes.versionState(nodeId, versionOrId)
        if (Option.isNone(found)) return yield* new VersionMissing({ nodeId, version: versionOrId })
        const state = found.value
        const { status, status_reason, ...compatibility } = edit
        const move = yield* moveOf(state, status, status_reason)
        if (move !== undefined || Object.values(compatibility).some((v) => v !== undefined)) {
          yield* publishing.moderateVersion(nodeId, state.version, move, compatibility)
        }
        return yield* Effect.orDie(Effect.flatMap(nodes.versionById(state.id), (version) => Effect.fromOption(version)))
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(Moderation, Moderation.make)
  static readonly layer = Moderation.layerWithoutDependencies.pipe(Layer.provide([NodeRepo.layer, PublishingRepo.layer, Policy.layer]))
}
