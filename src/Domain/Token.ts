import { Schema } from "effect"
import { field, ignoredOnInput, NonEmptyText, optional, optionalField, refusingUnknownFields, Text, Timestamp, Uuid } from "./Schemas.ts"

/** Body of token creation: the record's input fields; output-only ones are ignored. */
export const TokenCreate = refusingUnknownFields(Schema.Struct({
  name: field(NonEmptyText(100), "Name of the token; may be a simple description"),
  description: optionalField(Text(1000), "Detailed description of the intended use"),
  createdAt: optional(ignoredOnInput({ type: "string", format: "date-time" }, "Creation time of the token")),
  id: optional(ignoredOnInput({ type: "string", format: "uuid" }, "Identifier of the token record")),
  token: optional(ignoredOnInput({ type: "string" }, "The token value, shown once in the creation answer"))
})).annotate({ identifier: "TokenCreate" })

/** Answer of token creation: the value, shown this once. */
export class CreatedToken extends Schema.Class<CreatedToken>("CreatedToken")({
  token: field(Schema.String, "The new personal access token; shown in this answer only")
}) {}

/** A token as listed: its value masked to a recognisable prefix, and when it was last used. */
export class TokenSummary extends Schema.Class<TokenSummary>("TokenSummary")({
  createdAt: field(Timestamp, "Creation time of the token"),
  description: optionalField(Schema.String, "Detailed description of the intended use"),
  id: field(Uuid, "Identifier of the token record"),
  name: field(Schema.String, "Name of the token"),
  token: field(Schema.String, "The token value masked: its first characters, then '…'"),
  lastUsedAt: optionalField(Timestamp, "When the token was last used; absent when it never was")
}) {}
