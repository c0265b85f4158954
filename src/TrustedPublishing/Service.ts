/**
 * Trusted publishing: a publisher's owners and admins register the CI workflows that may publish
 * a node; such a workflow's OIDC identity token is exchanged for a publish token that works 15
 * minutes, for the nodes whose trusted publishers its claims match, wherever a personal access
 * token works (Publishing/Service.ts).
 */
import { Array as Arr, Clock, Context, Data, Effect, Layer, Option, Redacted, Schema } from "effect"
import { Policy } from "../Auth/Policy.ts"
import { NodeRepo } from "../Catalog/Repo.ts"
import { PublisherIsBanned, NotPublishersNode } from "../Domain/Errors.ts"
import { NodeId } from "../Domain/Node.ts"
import { managerRoles } from "../Domain/Publisher.ts"
import { PublishToken, type TrustedPublisherCreate } from "../Domain/TrustedPublisher.ts"
import { AppConfig } from "../Config.ts"
import { traced } from "../Tracing.ts"
import { matching, runOf } from "./Claims.ts"
import { IdentityRefused, OidcVerifier } from "./Oidc.ts"
import { TrustedPublishingRepo } from "./Repo.ts"

/** Trusted publishers one node may have: more is a mistake, not a workflow. */
export const trustedPublishersPerNode = 20

/** The registration cannot be taken as it is; the message says why. */
export class TrustedPublisherRefused extends Data.TaggedError("TrustedPublisherRefused")<{ readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

export class TooManyTrustedPublishers extends Data.TaggedError("TooManyTrustedPublishers")<{ readonly nodeId: string }> {
  override get message() {
    return `Node '${this.nodeId}' has ${trustedPublishersPerNode} trusted publishers, the most it may have: delete one first`
  }
}

const isNodeId = Schema.is(NodeId)

export class TrustedPublishing extends Context.Service<TrustedPublishing>()("TrustedPublishing", {
  make: Effect.gen(function*() {
    const repo = yield* TrustedPublishingRepo
    const verifier = yield* OidcVerifier
    const nodes = yield* NodeRepo
    const policy = yield* Policy
    const { tokenLifetimeMillis } = (yield* AppConfig).trustedPublishing
    const { clockSkewSeconds } = (yield* AppConfig).auth
    /** Owners and admins of the publisher, as for its personal access tokens. */
    const requireManager = (publisherId: string) => policy.requireRole(publisherId, managerRoles, { siteAdmin: false })

    /** The publisher's node, or a node id no one has taken yet (its first publish creates it). */
    const ownOrFree = (publisherId: string, nodeId: string) =>
      Effect.gen(function*() {
        if (!isNodeId(nodeId)) return yield* new NotPublishersNode({ publisherId, nodeId })
        const state = yield* nodes.nodeState(nodeId)
        if (Option.isSome(state) && (state.value.publisherId !== publisherId || state.value.status === "NodeStatusDeleted")) {
          return yield* new NotPublishersNode({ publisherId, nodeId })
        }
      })

    return {
      audience: { audience: verifier.audience, issuers: verifier.issuers },

      create: traced("TrustedPublishing.create")(function*(publisherId: string, nodeId: string, rule: TrustedPublisherCreate) {
        const { status, user } = yield* requireManager(publisherId)
        if (status === "PublisherStatusBanned") return yield* new PublisherIsBanned({ publisherId })
        yield* ownOrFree(publisherId, nodeId)
        if (!verifier.issuers.includes(rule.issuer)) {
          return yield* new TrustedPublisherRefused({
            reason: verifier.issuers.length === 0
              ? "This registry trusts no issuer: its operator has not set TRUSTED_PUBLISHING_ISSUERS"
              : `issuer must be one this registry trusts, exactly as written: ${verifier.issuers.join(", ")}`
          })
        }
        if ((yield* repo.list(publisherId, nodeId)).length >= trustedPublishersPerNode) {
          return yield* new TooManyTrustedPublishers({ nodeId })
        }
        return yield* repo.create(publisherId, nodeId, rule, user.id)
      }),

      list: traced("TrustedPublishing.list")(function*(publisherId: string, nodeId: string) {
        yield* requireManager(publisherId)
        return yield* repo.list(publisherId, nodeId)
      }),

      remove: traced("TrustedPublishing.remove")(function*(publisherId: string, nodeId: string, trustedPublisherId: string) {
        yield* requireManager(publisherId)
        yield* repo.remove(publisherId, nodeId, trustedPublisherId)
      }),

      /**
       * Verifies the identity token, matches its claims against the trusted publishers of its
       * repository, records its `jti`, and mints a publish token for the matched nodes whose
       * publishers are not banned.
       */
      exchange: traced("TrustedPublishing.exchange")(function*(token: Redacted.Redacted) {
        const identity = yield* verifier.verify(Redacted.value(token))
        const read = runOf(identity.claims)
        if ("refusal" in read) return yield* new IdentityRefused(read.refusal)
        const { run } = read
        const candidates = yield* repo.candidates(identity.issuer, run.repositoryOwner, run.repositoryName)
        const matched = matching(candidates, run)
        if ("refusal" in matched) return yield* new IdentityRefused(matched.refusal)
        const allowed = matched.matched.filter((c) => c.publisher_status !== "PublisherStatusBanned")
        if (!Arr.isReadonlyArrayNonEmpty(allowed)) return yield* new PublisherIsBanned({ publisherId: matched.matched[0]!.publisher_id })
        const now = yield* Clock.currentTimeMillis
        const expiresAt = new Date(now + tokenLifetimeMillis)
        const repository = `${run.repositoryOwner}/${run.repositoryName}`
        const value = yield* repo.mint(
          // kept past the token's own expiry by the skew its verification allows
          { issuer: identity.issuer, jti: identity.jti, expiresAt: new Date((identity.exp + clockSkewSeconds) * 1000) },
          Arr.map(allowed, (c) => c.id),
          {
            issuer: identity.issuer,
            repository,
            workflow: run.workflow,
            ref: run.ref,
            sha: run.sha,
            run_id: run.runId,
            environment: run.environment
          },
          expiresAt
        ).pipe(
          Effect.mapError((replayed) => new IdentityRefused({ claim: "jti", reason: replayed.message }))
        )
        yield* Effect.logInfo(
          `trusted publishing: ${repository} (${run.workflow}, run ${run.runId ?? "unknown"}) may publish ${
            allowed.map((c) => `${c.publisher_id}/${c.node_id}`).join(", ")
          } until ${expiresAt.toISOString()}`
        )
        return new PublishToken({
          token: Redacted.value(value),
          expires_at: expiresAt,
          nodes: allowed.map((c) => ({ publisher_id: c.publisher_id, node_id: c.node_id, trusted_publisher_id: c.id }))
        })
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(TrustedPublishing, TrustedPublishing.make)
  static readonly layer = TrustedPublishing.layerWithoutDependencies.pipe(
    Layer.provide([TrustedPublishingRepo.layer, OidcVerifier.layer, NodeRepo.layer, Policy.layer])
  )
}
