import { Schema } from "effect"
import { DateTimeString, optional } from "./Schemas.ts"

export const PublisherStatus = Schema.Literal("PublisherStatusActive", "PublisherStatusBanned")
  .annotations({ identifier: "PublisherStatus" })
export type PublisherStatus = typeof PublisherStatus.Type

/** Roles of CONTRACT.md: owners and admins manage a publisher, members read. */
export const PublisherRole = Schema.Literal("owner", "admin", "member").annotations({ identifier: "PublisherRole" })
export type PublisherRole = typeof PublisherRole.Type

export const PublisherUser = Schema.Struct({
  email: optional(Schema.String),
  id: optional(Schema.String),
  name: optional(Schema.String)
}).annotations({ identifier: "PublisherUser" })

export const PublisherMember = Schema.Struct({
  id: optional(Schema.String),
  role: optional(Schema.String),
  user: optional(PublisherUser)
}).annotations({ identifier: "PublisherMember" })

export const Publisher = Schema.Struct({
  createdAt: optional(DateTimeString),
  description: optional(Schema.String),
  id: optional(Schema.String),
  logo: optional(Schema.String),
  members: optional(Schema.Array(PublisherMember)),
  name: optional(Schema.String),
  source_code_repo: optional(Schema.String),
  status: optional(PublisherStatus),
  support: optional(Schema.String),
  website: optional(Schema.String)
}).annotations({ identifier: "Publisher" })
export type Publisher = typeof Publisher.Type
