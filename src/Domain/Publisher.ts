import { Schema } from "effect"
import { field, ignoredOnInput, NonEmptyText, optional, optionalField, refusingUnknownFields, Text, Timestamp, withExamples } from "./Schemas.ts"

export const PublisherStatus = Schema.Literals(["PublisherStatusActive", "PublisherStatusBanned"])
  .annotate({ identifier: "PublisherStatus" })
export type PublisherStatus = typeof PublisherStatus.Type

/** Roles of CONTRACT.md: owners and admins manage a publisher, members read. */
export const PublisherRole = Schema.Literals(["owner", "admin", "member"]).annotate({ identifier: "PublisherRole" })
export type PublisherRole = typeof PublisherRole.Type

/** The roles that manage a publisher, its tokens and its nodes. */
export const managerRoles: ReadonlyArray<PublisherRole> = ["owner", "admin"]

export class PublisherUser extends Schema.Class<PublisherUser>("PublisherUser")({
  email: optionalField(Schema.String, "E-mail address of the user"),
  id: field(Schema.String, "Identifier of the user"),
  name: optionalField(Schema.String, "Name of the user")
}) {}

export class PublisherMember extends Schema.Class<PublisherMember>("PublisherMember")({
  id: field(Schema.String, "Identifier of the member: the member's user id"),
  role: field(PublisherRole, "Role of the user in the publisher"),
  user: field(PublisherUser, "The user who is a member")
}) {}

const publisherFields = {
  createdAt: field(Timestamp, "Creation time of the publisher"),
  description: optionalField(Schema.String, "Description of the publisher"),
  id: field(Schema.String, "Unique identifier of the publisher, akin to a username; lowercase"),
  logo: optionalField(Schema.String, "URL of the publisher's logo"),
  members: optionalField(
    Schema.Array(PublisherMember),
    "Members of the publisher with their roles; shown only to its members and site admins"
  ),
  name: field(Schema.String, "Display name of the publisher (its id when none was given)"),
  source_code_repo: optionalField(Schema.String, "URL where the publisher's source code is hosted"),
  status: field(PublisherStatus, "Status of the publisher"),
  support: optionalField(Schema.String, "Where users of the publisher's nodes get support"),
  website: optionalField(Schema.String, "URL of the publisher's website")
}

/** The document's example of a publisher, as anyone reads it (members are shown to members only). */
export const publisherExample: Schema.Struct.Encoded<typeof publisherFields> = {
  createdAt: "2024-02-12T09:30:00.000Z",
  description: "Nodes for colour grading and film emulation",
  id: "lumen-lab",
  logo: "https://lumenlab.example.com/logo.png",
  name: "Lumen Lab",
  source_code_repo: "https://git.example.com/lumen-lab",
  status: "PublisherStatusActive",
  support: "https://lumenlab.example.com/support",
  website: "https://lumenlab.example.com"
}

export class Publisher extends Schema.Class<Publisher>("Publisher")(withExamples(publisherFields, publisherExample)) {}

/** Publisher ids are lowercase handles; some are reserved for the registry itself. */
export const PublisherId = Schema.String.check(
  Schema.isPattern(/^[a-z][a-z0-9-]{1,63}$/u, {
    message: "expected 2 to 64 characters: a lowercase letter, then lowercase letters, digits or '-'"
  })
)
/** The reserved publisher that holds nodes until their authors claim them (created by the first migration). */
export const unclaimedPublisherId = "unclaimed"

/** Reserved ids: the registry's own words, and `validate`, which `GET /publishers/validate` would shadow. */
export const reservedPublisherIds: ReadonlySet<string> = new Set([
  unclaimedPublisherId, "admin", "admins", "api", "registry", "system", "root", "support", "security", "publisher", "publishers",
  "node", "nodes", "user", "users", "me", "new", "validate"
])

const writableFields = {
  description: optionalField(Text(5000), "Description of the publisher"),
  logo: optionalField(Text(2000), "URL of the publisher's logo"),
  name: optionalField(Text(200), "Display name of the publisher"),
  source_code_repo: optionalField(Text(2000), "URL where the publisher's source code is hosted"),
  support: optionalField(Text(2000), "Where users of the publisher's nodes get support"),
  website: optionalField(Text(2000), "URL of the publisher's website")
}

/** Body of `POST /publishers`. */
export const PublisherCreate = refusingUnknownFields(Schema.Struct({
  id: field(PublisherId, "Unique identifier of the publisher, akin to a username: lowercase letters, digits and '-'"),
  ...writableFields
})).annotate({ identifier: "PublisherCreate" })

/**
 * Body of `PUT /publishers/{publisherId}`: a Publisher, every field optional. `members` and
 * `createdAt` are read-only and ignored, so a client may send back what it read.
 */
export const PublisherUpdate = refusingUnknownFields(Schema.Struct({
  ...writableFields,
  id: optionalField(Schema.String, "Identifier of the publisher; if sent, it must be the path's"),
  status: optionalField(PublisherStatus, "New status of the publisher (site admins only)"),
  members: optional(ignoredOnInput(
    { type: "array", items: { $ref: "#/components/schemas/PublisherMember" } },
    "Members of the publisher with their roles"
  )),
  createdAt: optional(ignoredOnInput({ type: "string", format: "date-time" }, "Creation time of the publisher"))
})).annotate({ identifier: "PublisherUpdate" })
export type PublisherUpdate = typeof PublisherUpdate.Type

/** Body of `POST /publishers/{publisherId}/members`. */
export const MemberAdd = refusingUnknownFields(Schema.Struct({
  user_id: field(NonEmptyText(200), "Identifier of the user to add, or whose role to change"),
  role: field(PublisherRole, "Role to give the user in the publisher")
})).annotate({ identifier: "MemberAdd" })

/** Answer of `GET /publishers/validate`. */
export class PublisherAvailability extends Schema.Class<PublisherAvailability>("PublisherAvailability")({
  isAvailable: field(Schema.Boolean, "True when the id is well-formed, not reserved and not taken (deleted publishers keep theirs)")
}) {}

/** Answer of the permission endpoints: what the caller's writes would be allowed. */
export class EditPermission extends Schema.Class<EditPermission>("EditPermission")({
  canEdit: field(Schema.Boolean, "True when the caller may change it: an owner or admin of the publisher, or a site admin")
}) {}
