/**
 * Moderation (issue 29): the scanner's rules, what it found in a version's archive, and the
 * version's pipeline, as the publisher's members and site admins read them.
 */
import { Schema } from "effect"
import { NodeVersionStatus } from "./Node.ts"
import { field, optionalField, Timestamp } from "./Schemas.ts"

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
  outcome: field(Schema.Literals(["passed", "held"]), "What the scan decided: held when a high finding holds the version for a review"),
  scanned_at: field(Timestamp, "When the scan ran"),
  files_scanned: field(Schema.Int, "Source and metadata files read"),
  findings: field(Schema.Array(ScanFinding), "What the rules found, at most 200"),
  findings_not_kept: field(Schema.Int, "Findings past the 200 kept, counted only")
}) {}

export const PipelineStage = Schema.Struct({
  stage: field(Schema.Literals(["uploaded", "checked", "scanned", "reviewed", "listed"]), "The stage"),
  outcome: field(Schema.String, "How it went: stored, passed, held, active, approved, rejected"),
  detail: optionalField(Schema.String, "What it found or why"),
  at: field(Timestamp, "When")
}).annotate({ identifier: "PipelineStage" })

export class VersionReview extends Schema.Class<VersionReview>("VersionReview")({
  node_id: field(Schema.String, "Identifier of the node"),
  version: field(Schema.String, "The version"),
  version_id: field(Schema.String, "Identifier of the version"),
  status: field(NodeVersionStatus, "The version's status"),
  status_reason: optionalField(Schema.String, "Why it has its status"),
  scan: optionalField(ScanReport, "The latest scan of its archive; absent before its archive was scanned"),
  pipeline: field(Schema.Array(PipelineStage), "The stages the version passed, oldest first (recorded since the scanner runs)")
}) {}
