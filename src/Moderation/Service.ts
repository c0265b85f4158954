/**
 * Moderation, as the publishers see it: the public rule set; a version's review (its scan, its
 * pipeline, its thread with the site admins) for the members of its publisher and site admins;
 * their messages on a held version; and their request for a review, once per uploaded archive.
 */
import { Context, Data, Effect, Layer, Option } from "effect"
import { Policy } from "../Auth/Policy.ts"
import { NodeRepo } from "../Catalog/Repo.ts"
import { NotPublishersNode, VersionMissing } from "../Domain/Errors.ts"
import { ReviewMessage, ScanReport, ScanRules, VersionReview } from "../Domain/Moderation.ts"
import type { NodeVersionStatus } from "../Domain/Node.ts"
import { traced } from "../Tracing.ts"
import { ModerationRepo, type StoredMessage } from "./Repo.ts"
import { ruleSetVersion, ruleSummaries } from "./Rules.ts"

const rules = new ScanRules({ rule_set_version: ruleSetVersion, rules: ruleSummaries })

/** Messages go on held or rejected versions, reviews are asked for held ones. */
export class ReviewClosed extends Data.TaggedError("ReviewClosed")<{ readonly status: NodeVersionStatus; readonly what: string }> {
  override get message() {
    return `${this.what} is for a held version (NodeVersionStatusFlagged${this.what === "A message" ? " or NodeVersionStatusBanned" : ""}): this one is ${this.status}`
  }
}

/** A review of this upload was asked for already. */
export class ReviewAlreadyRequested extends Data.TaggedError("ReviewAlreadyRequested")<{ readonly at: Date }> {
  override get message() {
    return `A review of this upload was asked for at ${this.at.toISOString()}: the site admins will answer in the version's review; a new upload may ask again`
  }
}

const messageOf = (m: StoredMessage) =>
  new ReviewMessage({ id: m.id, author_id: m.author_id, from_site_admin: m.from_site_admin, body: m.body, createdAt: m.created_at })

const members = ["owner", "admin", "member"] as const

export class VersionReviews extends Context.Service<VersionReviews>()("VersionReviews", {
  make: Effect.gen(function*() {
    const repo = yield* ModerationRepo
    const nodes = yield* NodeRepo
    const policy = yield* Policy

    /** The publisher's version (not deleted), once the caller is one of its members or a site admin. */
    const memberVersion = (publisherId: string, nodeId: string, versionOrId: string) =>
      Effect.gen(function*() {
        const { user } = yield* policy.requireRole(publisherId, members, { siteAdmin: true })
        const node = yield* nodes.nodeState(nodeId)
        if (Option.isNone(node) || node.value.publisherId !== publisherId || node.value.status === "NodeStatusDeleted") {
          return yield* new NotPublishersNode({ publisherId, nodeId })
        }
        const state = yield* nodes.versionState(nodeId, versionOrId)
        if (Option.isNone(state) || state.value.status === "NodeVersionStatusDeleted") {
          return yield* new VersionMissing({ nodeId, version: versionOrId })
        }
        return { user, version: state.value }
      })

    const reviewOf = (versionId: string) =>
      Effect.gen(function*() {
        // five independent reads: together, not one after another
        const [version, scan, events, requested, messages] = yield* Effect.all([
          Effect.flatMap(nodes.versionById(versionId), (v) => Effect.orDie(Effect.fromOption(v))),
          repo.latestScan(versionId),
          repo.events(versionId),
          repo.reviewRequested(versionId),
          repo.messages(versionId)
        ], { concurrency: "unbounded" })
        return new VersionReview({
          node_id: version.node_id,
          version: version.version,
          version_id: version.id,
          status: version.status,
          ...(version.status_reason === undefined ? {} : { status_reason: version.status_reason }),
          ...Option.match(scan, {
            onNone: () => ({}),
            onSome: (s) => ({
              scan: new ScanReport({
                rule_set_version: s.rule_set_version,
                outcome: s.outcome,
                ...(s.failure === null ? {} : { failure: s.failure }),
                scanned_at: s.scanned_at,
                files_scanned: s.files_scanned,
                findings: s.findings,
                findings_not_kept: s.dropped
              })
            })
          }),
          pipeline: events.map((e) => ({ stage: e.stage, outcome: e.outcome, at: e.at, ...(e.detail === null ? {} : { detail: e.detail }) })),
          ...Option.match(requested, { onNone: () => ({}), onSome: (at) => ({ review_requested_at: at }) }),
          messages: messages.map(messageOf)
        })
      })

    return {
      rules,

      review: traced("VersionReviews.review")(function*(publisherId: string, nodeId: string, versionOrId: string) {
        const { version } = yield* memberVersion(publisherId, nodeId, versionOrId)
        return yield* reviewOf(version.id)
      }),

      postMessage: traced("VersionReviews.postMessage")(function*(publisherId: string, nodeId: string, versionOrId: string, body: string) {
        const { user, version } = yield* memberVersion(publisherId, nodeId, versionOrId)
        if (version.status !== "NodeVersionStatusFlagged" && version.status !== "NodeVersionStatusBanned") {
          return yield* new ReviewClosed({ status: version.status, what: "A message" })
        }
        return messageOf(yield* repo.postMessage(version.id, user.id, user.isSiteAdmin, body))
      }),

      requestReview: traced("VersionReviews.requestReview")(function*(publisherId: string, nodeId: string, versionOrId: string) {
        const { user, version } = yield* memberVersion(publisherId, nodeId, versionOrId)
        if (version.status !== "NodeVersionStatusFlagged") return yield* new ReviewClosed({ status: version.status, what: "A review" })
        if (!(yield* repo.requestReview(version.id, user.id))) {
          const at = yield* repo.reviewRequested(version.id)
          return yield* new ReviewAlreadyRequested({ at: Option.getOrElse(at, () => new Date()) })
        }
        yield* Effect.logInfo(`review requested for ${nodeId} ${version.version} by '${user.id}'`)
        return yield* reviewOf(version.id)
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(VersionReviews, VersionReviews.make)
  static readonly layer = VersionReviews.layerWithoutDependencies.pipe(Layer.provide([ModerationRepo.layer, NodeRepo.layer, Policy.layer]))
}
