import { Schema } from "effect"
import { NonEmptyText, optional, Text, Timestamp } from "./Schemas.ts"

export const PublisherStatus = Schema.Literal("PublisherStatusActive", "PublisherStatusBanned")
  .annotations({ identifier: "PublisherStatus" })
export type PublisherStatus = typeof PublisherStatus.Type

/** Roles of CONTRACT.md: owners and admins manage a publisher, members read. */
export const PublisherRole = Schema.Literal("owner", "admin", "member").annotations({ identifier: "PublisherRole" })
export type PublisherRole = typeof PublisherRole.Type

/** The roles that manage a publisher, its tokens and its nodes. */
export const managerRoles: ReadonlyArray<PublisherRole> = ["owner", "admin"]

export class PublisherUser extends Schema.Class<PublisherUser>("PublisherUser")({
  email: optional(Schema.String),
  id: Schema.String,
  name: optional(Schema.String)
}) {}

export class PublisherMember extends Schema.Class<PublisherMember>("PublisherMember")({
  id: Schema.String.annotations({ description: "The member's user id" }),
  role: PublisherRole,
  user: PublisherUser
}) {}

export class Publisher extends Schema.Class<Publisher>("Publisher")({
  createdAt: Timestamp,
  description: optional(Schema.String),
  id: Schema.String,
  logo: optional(Schema.String),
  members: optional(Schema.Array(PublisherMember)),
  name: optional(Schema.String),
  source_code_repo: optional(Schema.String),
  status: PublisherStatus,
  support: optional(Schema.String),
  website: optional(Schema.String)
}) {}

/** Publisher ids are lowercase handles; some are reserved for the registry itself. */
export const PublisherId = Schema.String.pipe(
  Schema.pattern(/^[a-z][a-z0-9-]{1,63}$/, {
    message: () => "expected 2 to 64 characters: a lowercase letter, then lowercase letters, digits or '-'"
  })
)
/** The reserved publisher that holds nodes until their authors claim them (created by the first migration). */
export const unclaimedPublisherId = "unclaimed"

export const reservedPublisherIds: ReadonlySet<string> = new Set([
  unclaimedPublisherId, "admin", "admins", "api", "registry", "system", "root", "support", "security", "publisher", "publishers",
  "node", "nodes", "user", "users", "me", "new"
])

const writableFields = {
  description: optional(Text(5000)),
  logo: optional(Text(2000)),
  name: optional(Text(200)),
  source_code_repo: optional(Text(2000)),
  support: optional(Text(2000)),
  website: optional(Text(2000))
}

/** Body of `POST /publishers`. */
export const PublisherCreate = Schema.Struct({ id: PublisherId, ...writableFields })
  .annotations({ identifier: "PublisherCreate" })

/**
 * Body of `PUT /publishers/{publisherId}`: a Publisher, every field optional. `members` and
 * `createdAt` are read-only and ignored, so a client may send back what it read.
 */
export const PublisherUpdate = Schema.Struct({
  ...writableFields,
  id: optional(Schema.String),
  status: optional(PublisherStatus),
  members: optional(Schema.Unknown),
  createdAt: optional(Schema.Unknown)
}).annotations({ identifier: "PublisherUpdate" })
export type PublisherUpdate = typeof PublisherUpdate.Type

/** Body of `POST /publishers/{publisherId}/members`. */
export const MemberAdd = Schema.Struct({
  user_id: NonEmptyText(200),
  role: PublisherRole
}).annotations({ identifier: "MemberAdd" })
