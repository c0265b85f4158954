/**
 * What moderation keeps (migration 0021): each scan of a version's archive with its findings, and
 * the stages each version passed. The writes run inside the transaction of the change they
 * record (an upload's), so a version is never Active or held without the scan that decided it.
 */
import { SqlClient } from "effect/sql"
import { Array as Arr, Context, Effect, Layer, Option } from "effect"
import type { NodeVersionStatus } from "../Domain/Node.ts"
import { orDieOnDatabase } from "../Db/Rows.ts"
import { traced } from "../Tracing.ts"
import type { Finding } from "./Rules.ts"
import type { ScanResult } from "./Scanner.ts"

export type Stage = "uploaded" | "checked" | "scanned" | "reviewed" | "listed"

export interface StageEvent {
  readonly stage: Stage
  readonly outcome: string
  readonly detail?: string | undefined
}

/** What a scan decides: the version's status once its archive is stored, and why. */
export interface ScanDecision {
  readonly outcome: "passed" | "held"
  readonly status: NodeVersionStatus
  readonly statusReason: string | undefined
}

/** A high finding holds the version (Flagged) for a review; anything less lets it go Active. */
export const decide = (scan: ScanResult): ScanDecision => {
  const high = scan.findings.filter((f) => f.severity === "high")
  if (high.length === 0) return { outcome: "passed", status: "NodeVersionStatusActive", statusReason: undefined }
  const rules = [...new Set(high.map((f) => f.rule))].join(", ")
  return {
    outcome: "held",
    status: "NodeVersionStatusFlagged",
    statusReason: `Held for review: the archive scan found ${high.length} high-severity finding${high.length === 1 ? "" : "s"} (${rules}); ` +
      "the publisher's members see them in the version's review"
  }
}

/** One line about a scan, for its stage. */
const scanSummary = (scan: ScanResult) => {
  const count = (severity: Finding["severity"]) => scan.findings.filter((f) => f.severity === severity).length
  return `rule set ${scan.ruleSetVersion}: ${scan.filesScanned} files read; ${count("high")} high, ${count("medium")} medium, ${count("low")} low`
}

export interface StoredScan {
  readonly rule_set_version: string
  readonly outcome: "passed" | "held"
  readonly findings: ReadonlyArray<Finding>
  readonly dropped: number
  readonly files_scanned: number
  readonly scanned_at: Date
}

export class ModerationRepo extends Context.Service<ModerationRepo>()("ModerationRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const addEvents = (versionId: string, events: Arr.NonEmptyReadonlyArray<StageEvent>) =>
      sql`INSERT INTO version_events ${
        sql.insert(Arr.map(events, (e) => ({ version_id: versionId, stage: e.stage, outcome: e.outcome, detail: e.detail ?? null })))
      }`.pipe(Effect.asVoid)

    return {
      /**
       * The upload's record: the scan, and the stages it passed (uploaded, checked, scanned, and
       * listed when it went Active). Run inside the upload's transaction.
       */
      recordUpload: (versionId: string, upload: { readonly bytes: number; readonly files: number }, scan: ScanResult, decision: ScanDecision) =>
        Effect.gen(function*() {
          yield* sql`INSERT INTO version_scans ${
            sql.insert({
              version_id: versionId,
              rule_set_version: scan.ruleSetVersion,
              outcome: decision.outcome,
              findings: JSON.stringify(scan.findings),
              dropped: scan.dropped,
              files_scanned: scan.filesScanned
            })
          }`
          yield* addEvents(versionId, [
            { stage: "uploaded", outcome: "stored", detail: `${upload.bytes} bytes` },
            { stage: "checked", outcome: "passed", detail: `${upload.files} files` },
            { stage: "scanned", outcome: decision.outcome, detail: scanSummary(scan) },
            ...(decision.status === "NodeVersionStatusActive" ? [{ stage: "listed" as const, outcome: "active" }] : [])
          ])
        }),

      /** The version's latest scan, if it was scanned. */
      latestScan: traced("ModerationRepo.latestScan")(function*(versionId: string) {
        const rows = yield* sql<StoredScan>`SELECT rule_set_version, outcome, findings, dropped, files_scanned, scanned_at
          FROM version_scans WHERE version_id = ${versionId}::uuid ORDER BY scanned_at DESC, id LIMIT 1`.pipe(orDieOnDatabase)
        return Option.fromNullishOr(rows[0])
      }),

      /** The stages the version passed, in order. */
      events: traced("ModerationRepo.events")(function*(versionId: string) {
        return yield* sql<StageEvent & { readonly at: Date; readonly detail: string | null }>`SELECT stage, outcome, detail, at
          FROM version_events WHERE version_id = ${versionId}::uuid ORDER BY id`.pipe(orDieOnDatabase)
      })
    }
  })
}) {
  static readonly layer = Layer.effect(ModerationRepo, ModerationRepo.make)
}
