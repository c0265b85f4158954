import { Schema } from "effect"
import { DateTimeString, optional } from "./Schemas.ts"

/** A personal access token record (2.5); `createdAt`, `id` and `token` are output only. */
export const PersonalAccessToken = Schema.Struct({
  createdAt: optional(DateTimeString),
  description: optional(Schema.String),
  id: optional(Schema.UUID),
  name: Schema.String,
  token: optional(Schema.String)
}).annotations({ identifier: "PersonalAccessToken" })
export type PersonalAccessToken = typeof PersonalAccessToken.Type
