/**
 * What moderation keeps (migration 0021): each scan of a version's archive with its findings, and
 * the stages each version passed. The writes run inside the transaction of the change they
 * record (an upload's), so a version is never Active or held without the scan that decided it.
 */
import { SqlClient } from "effect/sql"
import { Array as Arr, Context, Effect, Layer, Option } from "effect"
import type { NodeVersionStatus } from "../Domain/Node.ts"
import { CatalogChanges } from "../Catalog/Changes.ts"
import { catalogueChannel } from "../Catalog/PageCache.ts"
import { latestScan } from "../Catalog/Records.ts"
import { orDieOnDatabase } from "../Db/Rows.ts"
import { traced } from "../Tracing.ts"
import { type Finding, ruleSetVersion } from "./Rules.ts"
import type { ScanFailed } from "./FileScanner.ts"
import type { ScanResult } from "./Scanner.ts"

export type Stage = "uploaded" | "checked" | "scanned" | "reviewed" | "listed"

export interface StageEvent {
  readonly stage: Stage
  readonly outcome: string
  readonly detail?: string | undefined
}

/** What a scan decides: the version's status once its archive is stored, and why. */
export interface ScanDecision {
  readonly outcome: "passed" | "held" | "failed"
  readonly status: NodeVersionStatus
  readonly statusReason: string | undefined
  /** Why the scan did not finish (outcome failed). */
  readonly failure?: string
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

/**
 * A scan that did not finish holds the version (Flagged) while a job retries it (Rescan.ts): never
 * Active unscanned, never left Pending. It is recorded as a scan with no findings.
 */
export const unfinished = (failure: ScanFailed): { readonly scan: ScanResult; readonly decision: ScanDecision } => ({
  scan: { ruleSetVersion, findings: [], dropped: 0, filesScanned: 0 },
  decision: {
    outcome: "failed",
    status: "NodeVersionStatusFlagged",
    statusReason: `Held: the archive scan did not finish (${failure.reason}); it is retried, and the version is listed once a scan passes it`,
    failure: failure.reason
  }
})

/** One line about a scan, for its stage. */
const scanSummary = (scan: ScanResult, decision: ScanDecision) => {
  if (decision.failure !== undefined) return `rule set ${scan.ruleSetVersion}: did not finish: ${decision.failure}`
  const count = (severity: Finding["severity"]) => scan.findings.filter((f) => f.severity === severity).length
  return `rule set ${scan.ruleSetVersion}: ${scan.filesScanned} files read; ${count("high")} high, ${count("medium")} medium, ${count("low")} low`
}

export interface StoredScan {
  readonly rule_set_version: string
  readonly outcome: "passed" | "held" | "failed"
  readonly failure: string | null
  readonly findings: ReadonlyArray<Finding>
  readonly dropped: number
  readonly files_scanned: number
  readonly scanned_at: Date
}

/** A site admin's decision about a version, for the audit log and the version's stages. */
export interface Decision {
  readonly actorId: string
  /** approve, reject (a review's), or set_status (a direct change of the status). */
  readonly action: "approve" | "reject" | "set_status"
  readonly nodeId: string
  readonly version: string
  readonly versionId: string
  readonly reason: string | undefined
  /** The version went Active by it. */
  readonly listed: boolean
}

export interface StoredMessage {
  readonly id: string
  readonly author_id: string
  readonly from_site_admin: boolean
  readonly body: string
  readonly created_at: Date
}

export interface HeldQuery {
  readonly publisherId?: string | undefined
  readonly rule?: string | undefined
  readonly page: number
  readonly limit: number
}

export interface HeldRow {
  readonly version_id: string
  readonly node_id: string
  readonly version: string
  readonly publisher_id: string
  readonly status_reason: string | null
  readonly held_since: Date
  readonly findings: ReadonlyArray<Finding>
  readonly review_requested_at: Date | null
  readonly messages: number
}

export interface AuditRow {
  readonly id: string
  readonly actor_id: string
  readonly action: string
  readonly node_id: string
  readonly version: string | null
  readonly version_id: string | null
  readonly reason: string | null
  readonly at: Date
}

export class ModerationRepo extends Context.Service<ModerationRepo>()("ModerationRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const changes = yield* CatalogChanges

    const addEvents = (versionId: string, events: Arr.NonEmptyReadonlyArray<StageEvent>) =>
      sql`INSERT INTO version_events ${
        sql.insert(Arr.map(events, (e) => ({ version_id: versionId, stage: e.stage, outcome: e.outcome, detail: e.detail ?? null })))
      }`.pipe(Effect.asVoid)

    /** One scan of the version's archive, with what it decided. */
    const insertScan = (versionId: string, scan: ScanResult, decision: ScanDecision) =>
      sql`INSERT INTO version_scans ${
        sql.insert({
          version_id: versionId,
          rule_set_version: scan.ruleSetVersion,
          outcome: decision.outcome,
          findings: JSON.stringify(scan.findings),
          dropped: scan.dropped,
          files_scanned: scan.filesScanned,
          failure: decision.failure ?? null
        })
      }`

    return {
      /**
       * The upload's record: the scan, and the stages it passed (uploaded, checked, scanned, and
       * listed when it went Active). Run inside the upload's transaction.
       */
      recordUpload: (versionId: string, upload: { readonly bytes: number; readonly files: number }, scan: ScanResult, decision: ScanDecision) =>
        Effect.gen(function*() {
          yield* insertScan(versionId, scan, decision)
          yield* addEvents(versionId, [
            { stage: "uploaded", outcome: "stored", detail: `${upload.bytes} bytes` },
            { stage: "checked", outcome: "passed", detail: `${upload.files} files` },
            { stage: "scanned", outcome: decision.outcome, detail: scanSummary(scan, decision) },
            ...(decision.status === "NodeVersionStatusActive" ? [{ stage: "listed" as const, outcome: "active" }] : [])
          ])
        }),

      /** A status a site admin gave a version (a review's decision, or a direct change): its stages and its audit entry. Run inside the change's transaction. */
      recordDecision: (decision: Decision) =>
        Effect.gen(function*() {
          const version = { node_id: decision.nodeId, version: decision.version, version_id: decision.versionId }
          yield* sql`INSERT INTO moderation_audit_log ${
            sql.insert({ actor_id: decision.actorId, action: decision.action, reason: decision.reason ?? null, ...version })
          }`
          const outcome = decision.action === "approve" ? "approved" : decision.action === "reject" ? "rejected" : decision.action
          yield* addEvents(decision.versionId, [
            { stage: "reviewed", outcome, detail: decision.reason },
            ...(decision.listed ? [{ stage: "listed" as const, outcome: "active" }] : [])
          ])
        }),

      /** Adds a message to the version's thread. */
      postMessage: traced("ModerationRepo.postMessage")(
        function*(versionId: string, authorId: string, fromSiteAdmin: boolean, body: string) {
          const [row] = yield* sql<StoredMessage>`INSERT INTO version_review_messages ${
            sql.insert({ version_id: versionId, author_id: authorId, from_site_admin: fromSiteAdmin, body })
          } RETURNING id::text, author_id, from_site_admin, body, created_at`.pipe(orDieOnDatabase)
          return row!
        }
      ),

      /** The version's thread, oldest first. */
      messages: traced("ModerationRepo.messages")(function*(versionId: string) {
        return yield* sql<StoredMessage>`SELECT id::text, author_id, from_site_admin, body, created_at
          FROM version_review_messages WHERE version_id = ${versionId}::uuid ORDER BY id`.pipe(orDieOnDatabase)
      }),

      /**
       * Records a request for a review of the version's current archive; false when one was made
       * for it already. A catalogue change: the node's held_version shows the request.
       */
      requestReview: traced("ModerationRepo.requestReview")(function*(versionId: string, userId: string) {
        const rows = yield* changes.change(sql`INSERT INTO version_review_requests (version_id, archive_sha256, requested_by)
          SELECT id, archive_sha256, ${userId} FROM node_versions WHERE id = ${versionId}::uuid AND archive_sha256 IS NOT NULL
          ON CONFLICT DO NOTHING RETURNING requested_at`)
        return rows.length > 0
      }),

      /** When a review of the version's current archive was asked for, if it was. */
      reviewRequested: traced("ModerationRepo.reviewRequested")(function*(versionId: string) {
        const rows = yield* sql<{ requested_at: Date }>`SELECT r.requested_at FROM version_review_requests r
          JOIN node_versions v ON v.id = r.version_id AND v.archive_sha256 = r.archive_sha256
          WHERE r.version_id = ${versionId}::uuid`.pipe(orDieOnDatabase)
        return Option.map(Option.fromNullishOr(rows[0]), (r) => r.requested_at)
      }),

      /**
       * Versions held by their scan (Flagged, the latest scan held or failed), oldest hold first, with their
       * high findings; filtered by publisher and by a rule among their findings.
       */
      heldVersions: traced("ModerationRepo.heldVersions")(function*(query: HeldQuery) {
        const filters = sql.and([
          sql`v.status = 'NodeVersionStatusFlagged'`,
          sql`s.outcome IN ('held', 'failed')`,
          ...(query.publisherId === undefined ? [] : [sql`n.publisher_id = ${query.publisherId}`]),
          ...(query.rule === undefined ? [] : [sql`s.findings @> ${JSON.stringify([{ rule: query.rule }])}::jsonb`])
        ])
        const from = sql`FROM node_versions v
          JOIN nodes n ON n.id = v.node_id
          JOIN LATERAL ${sql.literal(latestScan("v", "ls.outcome, ls.findings, ls.scanned_at"))} s ON true
          WHERE ${filters}`
        const [count] = yield* sql<{ total: number }>`SELECT count(*)::int AS total ${from}`.pipe(orDieOnDatabase)
        const rows = yield* sql<HeldRow>`SELECT v.id::text AS version_id, v.node_id, v.version, n.publisher_id, v.status_reason,
            s.scanned_at AS held_since, s.findings,
            (SELECT r.requested_at FROM version_review_requests r
              WHERE r.version_id = v.id AND r.archive_sha256 = v.archive_sha256) AS review_requested_at,
            (SELECT count(*)::int FROM version_review_messages m WHERE m.version_id = v.id) AS messages
          ${from}
          ORDER BY s.scanned_at, v.id
          LIMIT ${query.limit} OFFSET ${(query.page - 1) * query.limit}`.pipe(orDieOnDatabase)
        return { total: count?.total ?? 0, rows }
      }),

      /** The audit log, newest first. */
      auditLog: traced("ModerationRepo.auditLog")(function*(page: number, limit: number) {
        const [count] = yield* sql<{ total: number }>`SELECT count(*)::int AS total FROM moderation_audit_log`.pipe(orDieOnDatabase)
        const rows = yield* sql<AuditRow>`SELECT id::text, actor_id, action, node_id, version, version_id::text, reason, at
          FROM moderation_audit_log ORDER BY at DESC, id DESC LIMIT ${limit} OFFSET ${(page - 1) * limit}`.pipe(orDieOnDatabase)
        return { total: count?.total ?? 0, rows }
      }),

      /**
       * A rescan's record (the rule set changed): the scan, and what it changes. An Active version
       * that the new rules hold goes Flagged; a version held by its scan and not yet reviewed
       * that they pass goes Active; any other status stays (a site admin's decision stands). One
       * transaction, the version's row locked, its status checked in the statement; a catalogue
       * change only when the status moved, so that a rescan that changes nothing leaves every
       * instance's cached pages alone.
       */
      recordRescan: traced("ModerationRepo.recordRescan")(function*(versionId: string, scan: ScanResult) {
        const decision = decide(scan)
        return yield* sql.withTransaction(Effect.gen(function*() {
          const [row] = yield* sql<{ node_id: string; status: NodeVersionStatus; reviewed: boolean; held: boolean }>`SELECT v.node_id, v.status,
              EXISTS (SELECT 1 FROM version_events e WHERE e.version_id = v.id AND e.stage = 'reviewed') AS reviewed,
              coalesce(${sql.literal(latestScan("v", "ls.outcome IN ('held', 'failed')"))}, false) AS held
            FROM node_versions v WHERE v.id = ${versionId}::uuid FOR UPDATE`
          if (row === undefined) return "gone" as const
          yield* insertScan(versionId, scan, decision)
          const scanned: StageEvent = { stage: "scanned", outcome: decision.outcome, detail: `rescan, ${scanSummary(scan, decision)}` }
          let moved: "held" | "released" | "unchanged" = "unchanged"
          if (row.status === "NodeVersionStatusActive" && decision.outcome === "held") {
            yield* sql`UPDATE node_versions SET status = 'NodeVersionStatusFlagged', status_reason = ${decision.statusReason!}
              WHERE id = ${versionId}::uuid AND status = 'NodeVersionStatusActive'`
            moved = "held"
          } else if (row.status === "NodeVersionStatusFlagged" && row.held && !row.reviewed && decision.outcome === "passed") {
            yield* sql`UPDATE node_versions SET status = 'NodeVersionStatusActive', status_reason = NULL
              WHERE id = ${versionId}::uuid AND status = 'NodeVersionStatusFlagged'`
            moved = "released"
          }
          yield* addEvents(
            versionId,
            moved === "released" ? [scanned, { stage: "listed", outcome: "active", detail: "released by a rescan" }] : [scanned]
          )
          if (moved !== "unchanged") {
            yield* sql`UPDATE nodes SET updated_at = now() WHERE id = ${row.node_id}`
            // every instance drops its cached pages (a payload no instance sends as its own)
            yield* sql`SELECT pg_notify(${catalogueChannel}, 'moderation-rescan')`
          }
          return moved
        })).pipe(orDieOnDatabase)
      }),

      /** A scan that could not run (the archive not in the store): visible in the version's pipeline. */
      recordScanFailure: traced("ModerationRepo.recordScanFailure")(function*(versionId: string, reason: string) {
        yield* addEvents(versionId, [{ stage: "scanned", outcome: "failed", detail: reason }]).pipe(orDieOnDatabase)
      }),

      /** Whether the version still waits for its scan's retry: held, its latest scan failed, not reviewed. */
      awaitsScanRetry: traced("ModerationRepo.awaitsScanRetry")(function*(versionId: string) {
        const rows = yield* sql<{ due: boolean }>`SELECT v.status = 'NodeVersionStatusFlagged'
            AND coalesce(${sql.literal(latestScan("v", "ls.outcome = 'failed'"))}, false)
            AND NOT EXISTS (SELECT 1 FROM version_events e WHERE e.version_id = v.id AND e.stage = 'reviewed') AS due
          FROM node_versions v WHERE v.id = ${versionId}::uuid`.pipe(orDieOnDatabase)
        return rows[0]?.due === true
      }),

      /** A retried scan that did not finish either: recorded as one more failed scan. Answers how many of the version's scans failed. */
      recordFailedRetry: traced("ModerationRepo.recordFailedRetry")(function*(versionId: string, failure: ScanFailed) {
        const { decision, scan } = unfinished(failure)
        return yield* sql.withTransaction(Effect.gen(function*() {
          yield* insertScan(versionId, scan, decision)
          yield* addEvents(versionId, [{ stage: "scanned", outcome: "failed", detail: `retry, ${scanSummary(scan, decision)}` }])
          const [row] = yield* sql<{ failed: number }>`SELECT count(*)::int AS failed FROM version_scans
            WHERE version_id = ${versionId}::uuid AND outcome = 'failed'`
          return row?.failed ?? 0
        })).pipe(orDieOnDatabase)
      }),

      /** Versions with an archive whose latest scan is not of the current rule set (or that none scanned), after `after` in id order. */
      staleScans: traced("ModerationRepo.staleScans")(function*(after: string, limit: number) {
        return yield* sql<{ id: string }>`SELECT v.id::text FROM node_versions v
          WHERE v.id > ${after}::uuid AND v.archive_bytes IS NOT NULL
            AND v.status IN ('NodeVersionStatusActive', 'NodeVersionStatusFlagged')
            AND coalesce(${sql.literal(latestScan("v", "ls.rule_set_version"))}, '') <> ${ruleSetVersion}
          ORDER BY v.id LIMIT ${limit}`.pipe(orDieOnDatabase)
      }),

      /** The version's latest scan, if it was scanned. */
      latestScan: traced("ModerationRepo.latestScan")(function*(versionId: string) {
        const rows = yield* sql<StoredScan>`SELECT rule_set_version, outcome, failure, findings, dropped, files_scanned, scanned_at
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
  static readonly layer = Layer.effect(ModerationRepo, ModerationRepo.make).pipe(Layer.provide(CatalogChanges.layer))
}
