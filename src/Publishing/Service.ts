/**
 * Publishing: publishers' own nodes and versions (created, changed, deleted by owners, admins and
 * site admins), and the publish call of publishing CLIs, which authenticates with a personal
 * access token (or a publish token of trusted publishing) in the body or a bearer JWT of a
 * manager, and records which in the version's provenance.
 */
import { Context, Data, Effect, Layer, Option, Redacted } from "effect"
import { Policy } from "../Auth/Policy.ts"
import { NodeRepo } from "../Catalog/Repo.ts"
import { CurrentUser, Viewer } from "../Domain/Auth.ts"
import type { Provenance } from "../Domain/Node.ts"
import {
  IdMismatch,
  NodeIsBanned,
  NodeMissing,
  NotPublishersNode,
  PublisherIsBanned,
  PublisherMissing,
  VersionMissing
} from "../Domain/Errors.ts"
import { nodeVersionStatusMoves, statesReaching } from "../Domain/Transitions.ts"
import { PublisherRepo } from "../Publishers/Repo.ts"
import { TokenRepo } from "../Tokens/Repo.ts"
import { publishTokenPrefix, TrustedPublishingRepo } from "../TrustedPublishing/Repo.ts"
import { noteToken } from "../Http/Exchange.ts"
import { manifestDigest, type VersionManifest } from "./Manifest.ts"
import { type NodePatch, PublishingRepo, type VersionPatch, VersionLocked } from "./Repo.ts"
import { UrlSigner } from "../Storage/Signing.ts"
import { traced } from "../Tracing.ts"

/** A banned node's status is the site admins' to change. */
export class NodeBannedForOwner extends Data.TaggedError("NodeBannedForOwner")<{ readonly nodeId: string }> {
  override get message() {
    return `Node '${this.nodeId}' is banned: only a site admin can change its status`
  }
}

/** The personal access token is not one of the publisher's, or the publish token not one for the node. */
export class TokenRejected extends Data.TaggedError("TokenRejected")<{
  readonly publisherId: string
  readonly nodeId: string
  readonly publishToken: boolean
}> {
  override get message() {
    return this.publishToken
      ? `The publish token is not valid for node '${this.nodeId}' of publisher '${this.publisherId}' (expired, for other nodes, or its trusted publisher was removed)`
      : `The personal access token is not a valid token of publisher '${this.publisherId}' (wrong or revoked)`
  }
}

/** Neither a personal access token nor a bearer token came with the publish call. */
export class NoCredentials extends Data.TaggedError("NoCredentials")<{}> {
  override get message() {
    return "Send personal_access_token in the body or an Authorization: Bearer <token> header"
  }
}

/** A node as its publisher sends it: `id`, when present, must be the path's. */
export interface NodeInput extends NodePatch {
  readonly id?: string | undefined
}

/** The publish call's body, parsed. */
export interface PublishInput {
  readonly personal_access_token?: string | undefined
  readonly node?: NodeInput | undefined
  readonly node_version: VersionManifest
}

/** A node as its publisher sent it, as a patch: `id` names the node, it is not a field to set. */
const publisherFields = ({ id: _id, ...node }: NodeInput): NodePatch => node

export class Publishing extends Context.Service<Publishing>()("Publishing", {
  make: Effect.gen(function*() {
    const nodes = yield* NodeRepo
    const repo = yield* PublishingRepo
    const publishers = yield* PublisherRepo
    const tokens = yield* TokenRepo
    const trusted = yield* TrustedPublishingRepo
    const policy = yield* Policy
    const signer = yield* UrlSigner

    const managers = policy.requireManager

    const mustMatch = (field: string, given: string | undefined, expected: string) =>
      given !== undefined && given !== expected ? Effect.fail(new IdMismatch({ field, expected })) : Effect.void

    /** The publisher's node (missing when it is another's or deleted). */
    const ownNode = (publisherId: string, nodeId: string) =>
      Effect.flatMap(nodes.nodeState(nodeId), (state) =>
        Option.isSome(state) && state.value.publisherId === publisherId && state.value.status !== "NodeStatusDeleted"
          ? Effect.succeed(state.value)
          : Effect.fail(new NotPublishersNode({ publisherId, nodeId })))

    /** The version of the publisher's node, by version string or id, unless deleted. */
    const ownVersion = (publisherId: string, nodeId: string, versionOrId: string) =>
      Effect.gen(function*() {
        yield* ownNode(publisherId, nodeId)
        const state = yield* nodes.versionState(nodeId, versionOrId)
        if (Option.isNone(state) || state.value.status === "NodeVersionStatusDeleted") {
          return yield* new VersionMissing({ nodeId, version: versionOrId })
        }
        return state.value
      })

    /** The node as stored now (it was just written: its absence is a defect). */
    const current = (nodeId: string) =>
      Effect.flatMap(nodes.findNode(nodeId), Option.match({ onNone: () => Effect.die(new NodeMissing({ nodeId })), onSome: Effect.succeed }))

    const currentVersion = (versionId: string) =>
      Effect.flatMap(nodes.versionById(versionId), (version) => Effect.orDie(Effect.fromOption(version)))

    /** The provenance of what `token` publishes for the node: a personal access token's or a publish token's. */
    const tokenProvenance = (publisherId: string, nodeId: string, token: Redacted.Redacted) =>
      Effect.gen(function*() {
        if (Redacted.value(token).startsWith(publishTokenPrefix)) {
          const provenance = yield* trusted.verifyPublishToken(publisherId, nodeId, token)
          if (Option.isNone(provenance)) return yield* new TokenRejected({ publisherId, nodeId, publishToken: true })
          return provenance.value
        }
        const tokenId = yield* tokens.verify(publisherId, token)
        if (Option.isNone(tokenId)) return yield* new TokenRejected({ publisherId, nodeId, publishToken: false })
        yield* noteToken(tokenId.value)
        return { method: "personal_access_token", token_id: tokenId.value } satisfies Provenance
      })

    /**
     * A personal access token of the publisher, a publish token of trusted publishing for the
     * node, or a bearer JWT of one of the publisher's managers or a site admin; answers the
     * publisher's status and the provenance of what is published.
     */
    const authorizePublish = (publisherId: string, nodeId: string, token: string | undefined) =>
      Effect.gen(function*() {
        if (token !== undefined) {
          const status = yield* publishers.status(publisherId)
          if (Option.isNone(status)) return yield* new PublisherMissing({ publisherId })
          const provenance = yield* tokenProvenance(publisherId, nodeId, Redacted.make(token))
          return { status: status.value, provenance }
        }
        const viewer = yield* Viewer
        if (Option.isNone(viewer)) {
          // an unknown publisher is 404 whoever asks
          if (Option.isNone(yield* publishers.status(publisherId))) return yield* new PublisherMissing({ publisherId })
          return yield* new NoCredentials()
        }
        const { status } = yield* managers(publisherId).pipe(Effect.provideService(CurrentUser, viewer.value))
        return { status, provenance: { method: "user", user_id: viewer.value.id } satisfies Provenance }
      })

    return {
      createNode: traced("Publishing.createNode")(function*(publisherId: string, node: NodeInput & { readonly id: string }) {
        const { status } = yield* managers(publisherId)
        if (status === "PublisherStatusBanned") return yield* new PublisherIsBanned({ publisherId })
        yield* repo.createNode(publisherId, node.id, publisherFields(node))
        return yield* current(node.id)
      }),

      updateNode: traced("Publishing.updateNode")(function*(publisherId: string, nodeId: string, node: NodeInput) {
        yield* managers(publisherId)
        yield* mustMatch("id", node.id, nodeId)
        const state = yield* ownNode(publisherId, nodeId)
        if (state.status === "NodeStatusBanned") return yield* new NodeIsBanned({ nodeId })
        // the status is part of the statement: a ban arriving meanwhile is not overwritten
        yield* repo.updateNode(nodeId, ["NodeStatusActive"], publisherFields(node)).pipe(
          Effect.catchTags({
            // banned or deleted since the checks above: answered as if the checks had seen it
            TransitionRefused: (e) =>
              e.from === "NodeStatusDeleted" ? new NotPublishersNode({ publisherId, nodeId }) : new NodeIsBanned({ nodeId }),
            NodeMissing: () => new NotPublishersNode({ publisherId, nodeId }),
            // the publisher was deleted after the checks above
            NodesPublisherDeleted: () => new PublisherMissing({ publisherId })
          })
        )
        return yield* current(nodeId)
      }),

      deleteNode: traced("Publishing.deleteNode")(function*(publisherId: string, nodeId: string) {
        yield* managers(publisherId)
        yield* ownNode(publisherId, nodeId)
        yield* repo.updateNode(nodeId, ["NodeStatusActive"], { status: "NodeStatusDeleted" }).pipe(
          Effect.catchTags({
            // a concurrent delete came first: the node is gone, as a delete after it would find
            TransitionRefused: (e) =>
              e.from === "NodeStatusDeleted" ? new NotPublishersNode({ publisherId, nodeId }) : new NodeBannedForOwner({ nodeId }),
            NodeMissing: () => new NotPublishersNode({ publisherId, nodeId }),
            NodesPublisherDeleted: () => new PublisherMissing({ publisherId })
          })
        )
      }),

      updateVersion: traced("Publishing.updateVersion")(
        function*(publisherId: string, nodeId: string, versionOrId: string, patch: VersionPatch) {
          yield* managers(publisherId)
          const version = yield* ownVersion(publisherId, nodeId, versionOrId)
          yield* repo.updateVersion(nodeId, version.version, { changelog: patch.changelog, deprecated: patch.deprecated }).pipe(
            Effect.mapError(() => new VersionMissing({ nodeId, version: versionOrId }))
          )
          return yield* currentVersion(version.id)
        }
      ),

      /**
       * Yanks the version with `reason` (a yanked one gets the new reason), or undoes its yank
       * (`undefined`; a no-op when it is not yanked). Any version that is not deleted: the flag is
       * beside the status, which it never changes.
       */
      yankVersion: traced("Publishing.yankVersion")(
        function*(publisherId: string, nodeId: string, versionOrId: string, reason: string | undefined) {
          yield* managers(publisherId)
          const version = yield* ownVersion(publisherId, nodeId, versionOrId)
          yield* repo.yankVersion(nodeId, version.version, reason).pipe(
            Effect.mapError(() => new VersionMissing({ nodeId, version: versionOrId }))
          )
          return yield* currentVersion(version.id)
        }
      ),

      deleteVersion: traced("Publishing.deleteVersion")(function*(publisherId: string, nodeId: string, versionOrId: string) {
        yield* managers(publisherId)
        const version = yield* ownVersion(publisherId, nodeId, versionOrId)
        const deleted = "NodeVersionStatusDeleted"
        // from any state but Deleted itself: a concurrent delete that came first leaves nothing to delete
        const from = statesReaching(nodeVersionStatusMoves, deleted).filter((s) => s !== deleted)
        yield* repo.moveVersion(nodeId, version.version, from, deleted, undefined).pipe(
          Effect.catchTag("VersionMissing", () => new VersionMissing({ nodeId, version: versionOrId })),
          Effect.catchIf(
            (e) => e._tag === "TransitionRefused" && e.from === deleted,
            () => new VersionMissing({ nodeId, version: versionOrId })
          )
        )
      }),

      /**
       * A fresh upload URL for a version still Pending (never uploaded, or its upload refused by
       * the checks), authorized as the publish call is. Another status is immutable.
       */
      createUploadUrl: traced("Publishing.createUploadUrl")(
        function*(publisherId: string, nodeId: string, versionOrId: string, token: string | undefined) {
          const { status } = yield* authorizePublish(publisherId, nodeId, token)
          if (status === "PublisherStatusBanned") return yield* new PublisherIsBanned({ publisherId })
          const node = yield* ownNode(publisherId, nodeId)
          if (node.status === "NodeStatusBanned") return yield* new NodeIsBanned({ nodeId })
          const version = yield* ownVersion(publisherId, nodeId, versionOrId)
          if (version.status !== "NodeVersionStatusPending") return yield* new VersionLocked({ status: version.status })
          const signedUrl = yield* signer.uploadUrl({ nodeId, version: version.version, versionId: version.id })
          return { signedUrl, node_version: yield* currentVersion(version.id) }
        }
      ),

      /**
       * Creates the node (or updates it from `node`) and the version as Pending; answers where to
       * upload. A retry of a publish that stored the version (the same manifest) answers the
       * version as it is and a fresh URL, `replayed`.
       */
      publish: traced("Publishing.publish")(function*(publisherId: string, nodeId: string, input: PublishInput) {
        const { provenance, status } = yield* authorizePublish(publisherId, nodeId, input.personal_access_token)
        yield* mustMatch("node.id", input.node?.id, nodeId)
        if (status === "PublisherStatusBanned") return yield* new PublisherIsBanned({ publisherId })
        const version = input.node_version
        const node = publisherFields(input.node ?? {})
        const manifest_sha256 = manifestDigest(node, version)
        const { replayed, versionId } = yield* repo.publish(publisherId, nodeId, node, { ...version, manifest_sha256, provenance })
        const signedUrl = yield* signer.uploadUrl({ nodeId, version: version.version.text, versionId })
        return { replayed, published: { signedUrl, node_version: yield* currentVersion(versionId) } }
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(Publishing, Publishing.make)
  static readonly layer = Publishing.layerWithoutDependencies.pipe(
    Layer.provide([NodeRepo.layer, PublishingRepo.layer, PublisherRepo.layer, TokenRepo.layer, TrustedPublishingRepo.layer, Policy.layer, UrlSigner.layer])
  )
}
