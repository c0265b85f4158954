/**
 * Moderation (issue 29): the scanner's rules, what it found in a version's archive, and the
 * version's pipeline, as the publisher's members and site admins read them.
 */
import { Schema } from "effect"
import { NodeVersionStatus } from "./Node.ts"
import { field, NonEmptyText, optionalField, refusingUnknownFields, Timestamp } from "./Schemas.ts"

export const Severity = Schema.Literals(["high", "medium", "low"]).annotate({ identifier: "Severity" })

export class ScanRule extends Schema.Class<ScanRule>("ScanRule")({
  id: field(Schema.String, "Stable identifier of the rule"),
  severity: field(Severity, "What a finding of the rule does: high holds a version for a review; medium lets it go Active, shown to its publisher; low is recorded"),
  rationale: field(Schema.String, "Why the rule matters, in one line")
}) {}

export class ScanRules extends Schema.Class<ScanRules>("ScanRules")({
  rule_set_version: field(Schema.String, "The version of the rule set: every scan records the one that ran"),
  rules: field(Schema.Array(ScanRule), "Every rule of the set")
}) {}

export const ScanFinding = Schema.Struct({
  rule: field(Schema.String, "The rule that matched"),
  severity: field(Severity, "The rule's severity"),
  file: field(Schema.String, "The file in the archive"),
  line: optionalField(Schema.Int, "The line, 1-based; absent for a finding about the file itself"),
  excerpt: field(Schema.String, "A short excerpt of the line, or what was found about the file")
}).annotate({ identifier: "ScanFinding" })

export class ScanReport extends Schema.Class<ScanReport>("ScanReport")({
  rule_set_version: field(Schema.String, "The rule set that ran"),
  outcome: field(
    Schema.Literals(["passed", "held", "failed"]),
    "What the scan decided: held when a high finding holds the version for a review; failed when it did not finish (it is retried)"
  ),
  failure: optionalField(Schema.String, "Why a failed scan did not finish"),
  scanned_at: field(Timestamp, "When the scan ran"),
  files_scanned: field(Schema.Int, "Source and metadata files read"),
  findings: field(Schema.Array(ScanFinding), "What the rules found, at most 200"),
  findings_not_kept: field(Schema.Int, "Findings past the 200 kept, counted only")
}) {}

export const PipelineStage = Schema.Struct({
  stage: field(Schema.Literals(["uploaded", "checked", "scanned", "reviewed", "listed"]), "The stage"),
  outcome: field(Schema.String, "How it went: stored, passed, held, failed, active, approved, rejected"),
  detail: optionalField(Schema.String, "What it found or why"),
  at: field(Timestamp, "When")
}).annotate({ identifier: "PipelineStage" })

export class ReviewMessage extends Schema.Class<ReviewMessage>("ReviewMessage")({
  id: field(Schema.String, "Identifier of the message"),
  author_id: field(Schema.String, "Who wrote it"),
  from_site_admin: field(Schema.Boolean, "Written by a site admin; else by a member of the version's publisher"),
  body: field(Schema.String, "The message"),
  createdAt: field(Timestamp, "When it was written")
}) {}

/** Body of PostVersionReviewMessage. */
export const ReviewMessageCreate = refusingUnknownFields(Schema.Struct({
  body: field(NonEmptyText(5000), "The message, 1 to 5,000 characters")
})).annotate({ identifier: "ReviewMessageCreate" })

/** Body of DecideVersionReview. */
export const ReviewDecision = refusingUnknownFields(Schema.Struct({
  decision: field(Schema.Literals(["approve", "reject"]), "Approve: the version goes Active. Reject: it is banned, with the reason"),
  reason: field(NonEmptyText(1000), "Why: shown to the publisher as the version's status_reason and in its review")
})).annotate({ identifier: "ReviewDecision" })

export const HeldVersion = Schema.Struct({
  node_id: field(Schema.String, "Identifier of the node"),
  version: field(Schema.String, "The version"),
  version_id: field(Schema.String, "Identifier of the version"),
  publisher_id: field(Schema.String, "The node's publisher"),
  status_reason: optionalField(Schema.String, "Why it is held"),
  held_since: field(Timestamp, "When the scan that holds it ran"),
  findings: field(Schema.Array(ScanFinding), "The high findings that hold it"),
  review_requested_at: optionalField(Timestamp, "When its publisher asked for a review of this upload, if they did"),
  messages: field(Schema.Int, "Messages in its thread")
}).annotate({ identifier: "HeldVersion" })

export class HeldVersions extends Schema.Class<HeldVersions>("HeldVersions")({
  versions: field(Schema.Array(HeldVersion), "Held versions, the longest held first"),
  total: field(Schema.Int, "Held versions matching the filters"),
  page: field(Schema.Int, "This page, from 1"),
  limit: field(Schema.Int, "Versions per page")
}) {}

export const AuditEntry = Schema.Struct({
  id: field(Schema.String, "Identifier of the entry"),
  actor_id: field(Schema.String, "The site admin who decided"),
  action: field(Schema.String, "What was decided: approve or reject (a review's decision), or set_status (a version's status set directly)"),
  node_id: field(Schema.String, "The node"),
  version: optionalField(Schema.String, "The version"),
  version_id: optionalField(Schema.String, "Identifier of the version"),
  reason: optionalField(Schema.String, "Why"),
  at: field(Timestamp, "When")
}).annotate({ identifier: "AuditEntry" })

export class AuditLog extends Schema.Class<AuditLog>("AuditLog")({
  entries: field(Schema.Array(AuditEntry), "Decisions, newest first"),
  total: field(Schema.Int, "Entries in the log"),
  page: field(Schema.Int, "This page, from 1"),
  limit: field(Schema.Int, "Entries per page")
}) {}

export class VersionReview extends Schema.Class<VersionReview>("VersionReview")({
  node_id: field(Schema.String, "Identifier of the node"),
  version: field(Schema.String, "The version"),
  version_id: field(Schema.String, "Identifier of the version"),
  status: field(NodeVersionStatus, "The version's status"),
  status_reason: optionalField(Schema.String, "Why it has its status"),
  scan: optionalField(ScanReport, "The latest scan of its archive; absent before its archive was scanned"),
  pipeline: field(Schema.Array(PipelineStage), "The stages the version passed, oldest first (recorded since the scanner runs)"),
  review_requested_at: optionalField(Timestamp, "When the publisher asked for a review of the version's current archive"),
  messages: field(Schema.Array(ReviewMessage), "The thread between the publisher's members and the site admins, oldest first")
}) {}

export class RescanQueued extends Schema.Class<RescanQueued>("RescanQueued")({
  rule_set_version: field(Schema.String, "The rule set the versions are rescanned with"),
  queued_at: field(Timestamp, "When the rescan was queued")
}) {}
