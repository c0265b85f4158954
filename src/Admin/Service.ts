/**
 * Site moderation (site admins only): unclaimed nodes for authors to claim, the statuses of nodes
 * and versions, moved as the state machines of Domain/Transitions.ts allow, the compatibility
 * of versions, the reviews of versions their scan held (with the audit log of every decision,
 * and the rescans after a rule change: Moderation/), and the short-lived tokens the web
 * front-end sends with its moderation requests.
 */
import { Clock, Context, Data, Effect, FileSystem, Layer, Option } from "effect"
import { mintToken } from "../Auth/Jwt.ts"
import { Policy } from "../Auth/Policy.ts"
import { AppConfig } from "../Config.ts"
import { NodeRepo } from "../Catalog/Repo.ts"
import { NodeMissing, NotPublishersNode, TransitionRefused, VersionMissing } from "../Domain/Errors.ts"
import { NodeStatus, type NodeVersionStatus } from "../Domain/Node.ts"
import { unclaimedPublisherId } from "../Domain/Publisher.ts"
import { nodeStatusMoves, nodeVersionStatusMoves, statesReaching } from "../Domain/Transitions.ts"
import { type NodePatch, PublishingRepo, type VersionCompatibility, type VersionMove } from "../Publishing/Repo.ts"
import { AuditLog, HeldVersions, RescanQueued } from "../Domain/Moderation.ts"
import { queueRescan } from "../Moderation/Rescan.ts"
import { ruleSetVersion } from "../Moderation/Rules.ts"
import { SqlClient } from "effect/sql"
import { type HeldQuery, ModerationRepo } from "../Moderation/Repo.ts"
import { traced } from "../Tracing.ts"

/** An installable version must have an archive to serve. */
export class NoArchive extends Data.TaggedError("NoArchive")<{}> {
  override get message() {
    return "The version has no uploaded archive to make installable"
  }
}

/** Tokens are verified against another issuer's keys (AUTH_JWKS_URL): this service cannot sign one. */
export class TokensIssuedElsewhere extends Data.TaggedError("TokensIssuedElsewhere")<{}> {
  override get message() {
    return "This service verifies tokens of another issuer (AUTH_JWKS_URL): it cannot mint one"
  }
}

/** A review decides on held versions only. */
export class NotHeld extends Data.TaggedError("NotHeld")<{ readonly status: NodeVersionStatus }> {
  override get message() {
    return `The version is not held for review: it is ${this.status}`
  }
}

/** The longest an admin token lives, in seconds. */
export const adminTokenSeconds = 60 * 60

/** A site admin's change of a version (absent fields: unchanged). */
export interface VersionEdit extends VersionCompatibility {
  readonly status?: NodeVersionStatus | undefined
  readonly status_reason?: string | undefined
}

export class Moderation extends Context.Service<Moderation>()("Moderation", {
  make: Effect.gen(function*() {
    const nodes = yield* NodeRepo
    const publishing = yield* PublishingRepo
    const moderationRecords = yield* ModerationRepo
    const sql = yield* SqlClient.SqlClient
    const policy = yield* Policy
    const config = yield* AppConfig
    const fs = yield* FileSystem.FileSystem

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

    /** Moderation fields, and a status move; a refused move refuses the whole request. */
    const moderateNode = traced("Moderation.moderateNode")(function*(nodeId: string, patch: NodePatch) {
      yield* policy.requireSiteAdmin
      const target = patch.status
      const from = target === undefined ? NodeStatus.literals : statesReaching(nodeStatusMoves, target)
      yield* publishing.updateNode(nodeId, from, patch)
      return yield* current(nodeId)
    })

    return {
      /** A node waiting in the `unclaimed` publisher for its author. */
      createUnclaimedNode: traced("Moderation.createUnclaimedNode")(function*(node: NodePatch & { readonly id: string }) {
        yield* policy.requireSiteAdmin
        const { id, ...fields } = node
        // the reserved publisher is never deleted
        yield* publishing.createNode(unclaimedPublisherId, id, fields).pipe(Effect.catchTag("PublisherMissing", Effect.die))
        return yield* Effect.orDie(current(id))
      }),

      moderateNode,

      /**
       * A status move and the version's compatibility, as one change; a refused move refuses the
       * whole request. A reason without a status explains the current status.
       */
      moderateVersion: traced("Moderation.moderateVersion")(function*(nodeId: string, versionOrId: string, edit: VersionEdit) {
        const admin = yield* policy.requireSiteAdmin
        const found = yield* nodes.versionState(nodeId, versionOrId)
        if (Option.isNone(found)) return yield* new VersionMissing({ nodeId, version: versionOrId })
        const state = found.value
        const { status, status_reason, ...compatibility } = edit
        const move = yield* moveOf(state, status, status_reason)
        if (move !== undefined || Object.values(compatibility).some((v) => v !== undefined)) {
          // a status set directly is a decision too: the audit log and the version's stages record it
          const recorded = move === undefined || move.to === state.status
            ? Effect.void
            : moderationRecords.recordDecision({
              actorId: admin.id,
              action: "set_status",
              nodeId,
              version: state.version,
              versionId: state.id,
              reason: `${move.to}${move.reason === undefined ? "" : `: ${move.reason}`}`,
              listed: move.to === "NodeVersionStatusActive"
            })
          yield* publishing.moderateVersion(nodeId, state.version, move, compatibility, recorded)
        }
        return yield* Effect.orDie(Effect.flatMap(nodes.versionById(state.id), (version) => Effect.fromOption(version)))
      }),

      /**
       * A review's decision on a held version: approved, it goes Active; rejected, it is banned
       * with the reason. One change with its audit entry and its stages.
       */
      decideReview: traced("Moderation.decideReview")(
        function*(nodeId: string, versionOrId: string, decision: { readonly decision: "approve" | "reject"; readonly reason: string }) {
          const admin = yield* policy.requireSiteAdmin
          const found = yield* nodes.versionState(nodeId, versionOrId)
          if (Option.isNone(found) || found.value.status === "NodeVersionStatusDeleted") {
            return yield* new VersionMissing({ nodeId, version: versionOrId })
          }
          const state = found.value
          const to: NodeVersionStatus = decision.decision === "approve" ? "NodeVersionStatusActive" : "NodeVersionStatusBanned"
          const held: NodeVersionStatus = "NodeVersionStatusFlagged"
          if (state.status !== held) return yield* new NotHeld({ status: state.status })
          if (to === "NodeVersionStatusActive" && !state.hasArchive) return yield* new NoArchive()
          const recorded = moderationRecords.recordDecision({
            actorId: admin.id,
            action: decision.decision,
            nodeId,
            version: state.version,
            versionId: state.id,
            reason: decision.reason,
            listed: to === "NodeVersionStatusActive"
          })
          const reason = decision.decision === "approve" ? undefined : `Rejected on review: ${decision.reason}`
          yield* publishing.moderateVersion(nodeId, state.version, { from: [held], to, reason }, {}, recorded).pipe(
            // decided by another admin meanwhile
            Effect.catchTag("TransitionRefused", (e) => new NotHeld({ status: e.from as NodeVersionStatus }))
          )
          return yield* Effect.orDie(Effect.flatMap(nodes.versionById(state.id), (version) => Effect.fromOption(version)))
        }
      ),

      /** Versions held by their scan, for site admins. */
      heldVersions: traced("Moderation.heldVersions")(function*(query: HeldQuery) {
        yield* policy.requireSiteAdmin
        const { rows, total } = yield* moderationRecords.heldVersions(query)
        return new HeldVersions({
          page: query.page,
          limit: query.limit,
          total,
          versions: rows.map((r) => ({
            node_id: r.node_id,
            version: r.version,
            version_id: r.version_id,
            publisher_id: r.publisher_id,
            ...(r.status_reason === null ? {} : { status_reason: r.status_reason }),
            held_since: r.held_since,
            findings: r.findings.filter((f) => f.severity === "high"),
            ...(r.review_requested_at === null ? {} : { review_requested_at: r.review_requested_at }),
            messages: r.messages
          }))
        })
      }),

      /** Queues the rescan of every archive with the current rule set (Moderation/Rescan.ts). */
      rescanAll: traced("Moderation.rescanAll")(function*() {
        const admin = yield* policy.requireSiteAdmin
        yield* queueRescan.pipe(Effect.provideService(SqlClient.SqlClient, sql))
        yield* Effect.logInfo(`rescan with rule set ${ruleSetVersion} queued by site admin '${admin.id}'`)
        return new RescanQueued({ rule_set_version: ruleSetVersion, queued_at: new Date(yield* Clock.currentTimeMillis) })
      }),

      /** The moderation audit log, for site admins. */
      auditLog: traced("Moderation.auditLog")(function*(page: number, limit: number) {
        yield* policy.requireSiteAdmin
        const { rows, total } = yield* moderationRecords.auditLog(page, limit)
        return new AuditLog({
          page,
          limit,
          total,
          entries: rows.map((r) => ({
            id: r.id,
            actor_id: r.actor_id,
            action: r.action,
            node_id: r.node_id,
            at: r.at,
            ...(r.version === null ? {} : { version: r.version }),
            ...(r.version_id === null ? {} : { version_id: r.version_id }),
            ...(r.reason === null ? {} : { reason: r.reason })
          }))
        })
      }),

      /** Bans the publisher's node: the status move of `moderateNode`, for a node of that publisher only. */
      banPublisherNode: traced("Moderation.banPublisherNode")(function*(publisherId: string, nodeId: string) {
        yield* policy.requireSiteAdmin
        const node = yield* nodes.findNode(nodeId)
        if (Option.isNone(node) || node.value.publisher.id !== publisherId) return yield* new NotPublishersNode({ publisherId, nodeId })
        yield* moderateNode(nodeId, { status: "NodeStatusBanned" })
      }),

      /**
       * A bearer token for the calling site admin alone, living at most an hour (and no longer
       * than the service accepts); its minting is logged with who and until when, never its text.
       */
      generateAdminToken: traced("Moderation.generateAdminToken")(function*() {
        const admin = yield* policy.requireSiteAdmin
        if (Option.isSome(config.auth.jwksUrl)) return yield* new TokensIssuedElsewhere()
        const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
        const exp = now + Math.min(adminTokenSeconds, config.auth.maxTokenLifetimeSeconds)
        const token = yield* mintToken(config, { sub: admin.id, email: admin.email, name: admin.name, admin: true }, exp).pipe(
          Effect.provideService(FileSystem.FileSystem, fs),
          Effect.orDie
        )
        const expires_at = new Date(exp * 1000).toISOString()
        yield* Effect.logInfo(`Admin token minted for site admin '${admin.id}', expiring at ${expires_at}`)
        return { token, expires_at }
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(Moderation, Moderation.make)
  static readonly layer = Moderation.layerWithoutDependencies.pipe(Layer.provide([NodeRepo.layer, PublishingRepo.layer, ModerationRepo.layer, Policy.layer]))
}
