/**
 * Moderation's reads: the public rule set, and a version's review for the members of its
 * publisher and site admins.
 */
import { Context, Effect, Layer, Option } from "effect"
import { Policy } from "../Auth/Policy.ts"
import { NodeRepo } from "../Catalog/Repo.ts"
import { NotPublishersNode, VersionMissing } from "../Domain/Errors.ts"
import { ScanReport, ScanRules, VersionReview } from "../Domain/Moderation.ts"
import { traced } from "../Tracing.ts"
import { ModerationRepo } from "./Repo.ts"
import { ruleSetVersion, ruleSummaries } from "./Rules.ts"

const rules = new ScanRules({ rule_set_version: ruleSetVersion, rules: ruleSummaries })

export class Moderation extends Context.Service<Moderation>()("Moderation", {
  make: Effect.gen(function*() {
    const repo = yield* ModerationRepo
    const nodes = yield* NodeRepo
    const policy = yield* Policy

    return {
      rules,

      /** The version's scan and pipeline: for any member of its publisher, and site admins. */
      review: traced("Moderation.review")(function*(publisherId: string, nodeId: string, versionOrId: string) {
        yield* policy.requireRole(publisherId, ["owner", "admin", "member"], { siteAdmin: true })
        const node = yield* nodes.nodeState(nodeId)
        if (Option.isNone(node) || node.value.publisherId !== publisherId || node.value.status === "NodeStatusDeleted") {
          return yield* new NotPublishersNode({ publisherId, nodeId })
        }
        const state = yield* nodes.versionState(nodeId, versionOrId)
        if (Option.isNone(state) || state.value.status === "NodeVersionStatusDeleted") {
          return yield* new VersionMissing({ nodeId, version: versionOrId })
        }
        const version = yield* Effect.flatMap(nodes.versionById(state.value.id), (v) => Effect.orDie(Effect.fromOption(v)))
        const scan = yield* repo.latestScan(state.value.id)
        const events = yield* repo.events(state.value.id)
        return new VersionReview({
          node_id: nodeId,
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
                scanned_at: s.scanned_at,
                files_scanned: s.files_scanned,
                findings: s.findings,
                findings_not_kept: s.dropped
              })
            })
          }),
          pipeline: events.map((e) => ({ stage: e.stage, outcome: e.outcome, at: e.at, ...(e.detail === null ? {} : { detail: e.detail }) }))
        })
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(Moderation, Moderation.make)
  static readonly layer = Moderation.layerWithoutDependencies.pipe(Layer.provide([ModerationRepo.layer, NodeRepo.layer, Policy.layer]))
}
