import { Schema } from "effect"
import { NonEmptyText, optional, Text, Timestamp } from "./Schemas.ts"

/** Body of token creation: the record's input fields; output-only ones are ignored. */
export const TokenCreate = Schema.Struct({
  name: NonEmptyText(100),
  description: optional(Text(1000)),
  createdAt: optional(Schema.Unknown),
  id: optional(Schema.Unknown),
  token: optional(Schema.Unknown)
}).annotations({ identifier: "TokenCreate" })

/** Answer of token creation: the value, shown this once. */
export class CreatedToken extends Schema.Class<CreatedToken>("CreatedToken")({ token: Schema.String }) {}

/** A token as listed: its value masked to a recognisable prefix, and when it was last used. */
export class TokenSummary extends Schema.Class<TokenSummary>("TokenSummary")({
  createdAt: Timestamp,
  description: optional(Schema.String),
  id: Schema.UUID,
  name: Schema.String,
  token: Schema.String.annotations({ description: "masked: the first characters, then '…'" }),
  lastUsedAt: optional(Timestamp)
}) {}
