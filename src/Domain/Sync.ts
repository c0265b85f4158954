/**
 * Following the catalogue (issue 30): its changes after a cursor, and the snapshot a follower
 * starts from.
 */
import { Schema } from "effect"
import { Node } from "./Node.ts"
import { field, optionalField, Timestamp } from "./Schemas.ts"

export const changeKinds = [
  "node_created",
  "node_changed",
  "node_deleted",
  "version_published",
  "version_changed",
  "version_status_changed",
  "version_yanked",
  "version_unyanked",
  "version_deleted"
] as const

export const ChangeKind = Schema.Literals(changeKinds).annotate({ identifier: "ChangeKind" })

/** A place in the change feed, as the feed and the snapshot hand it out: two decimal numbers. */
export const Cursor = Schema.String.check(Schema.isPattern(/^\d{1,20}\.\d{1,20}$/)).annotate({
  identifier: "Cursor",
  description: "A place in the change feed, as a feed page's next_cursor or the snapshot's cursor gave it"
})

export class CatalogueChange extends Schema.Class<CatalogueChange>("CatalogueChange")({
  kind: field(ChangeKind, "What changed: a node (created, changed, deleted) or one of its versions"),
  node_id: field(Schema.String, "The node"),
  version: optionalField(Schema.String, "The version, for the version_* kinds"),
  status: field(Schema.String, "The node's or the version's status after the change"),
  listed: optionalField(Schema.Boolean, "For the node_* kinds: whether the node appears in public listings after the change"),
  yanked: optionalField(Schema.Boolean, "For the version_* kinds: whether the version is yanked after the change"),
  at: field(Timestamp, "When the change was written")
}) {}

export class CatalogueChanges extends Schema.Class<CatalogueChanges>("CatalogueChanges")({
  changes: field(Schema.Array(CatalogueChange), "The changes after the cursor, oldest first"),
  next_cursor: field(Cursor, "The cursor to ask with next: after the last change here (the same cursor when there was none)"),
  has_more: field(Schema.Boolean, "More changes wait after next_cursor: ask again at once")
}) {}

export class CatalogueSnapshot extends Schema.Class<CatalogueSnapshot>("CatalogueSnapshot")({
  built_at: field(Timestamp, "When the snapshot was cut"),
  cursor: field(Cursor, "The change feed's cursor it was cut at: follow GET /catalogue/changes from it"),
  nodes: field(Schema.Array(Node), "Every listed node with its latest version, as GET /nodes answers them, by id"),
  total: field(Schema.Int, "How many nodes")
}) {}
