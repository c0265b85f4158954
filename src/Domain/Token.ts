import { Schema } from "effect"
import { DateTimeString, NonEmptyText, optional, Text } from "./Schemas.ts"

/** A personal access token record (2.5); `createdAt`, `id` and `token` are output only. */
export const PersonalAccessToken = Schema.Struct({
  createdAt: optional(DateTimeString),
  description: optional(Schema.String),
  id: optional(Schema.UUID),
  name: Schema.String,
  token: optional(Schema.String)
}).annotations({ identifier: "PersonalAccessToken" })
export type PersonalAccessToken = typeof PersonalAccessToken.Type

/** Body of token creation: the record's input fields; output-only ones are ignored. */
export const TokenCreate = Schema.Struct({
  name: NonEmptyText(100),
  description: optional(Text(1000)),
  createdAt: optional(Schema.Unknown),
  id: optional(Schema.Unknown),
  token: optional(Schema.Unknown)
}).annotations({ identifier: "TokenCreate" })

/** Answer of token creation: the value, shown this once. */
export const CreatedToken = Schema.Struct({ token: Schema.String }).annotations({ identifier: "CreatedToken" })

/** A token as listed: its value masked to a recognisable prefix, and when it was last used. */
export const TokenSummary = Schema.Struct({
  createdAt: DateTimeString,
  description: optional(Schema.String),
  id: Schema.UUID,
  name: Schema.String,
  token: Schema.String.annotations({ description: "masked: the first characters, then '…'" }),
  lastUsedAt: optional(DateTimeString)
}).annotations({ identifier: "TokenSummary" })
export type TokenSummary = typeof TokenSummary.Type
