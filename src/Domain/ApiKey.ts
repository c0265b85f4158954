/**
 * User API keys, the anchor registry's shapes (`CreateAPIKeyRequest`, `APIKey`,
 * `APIKeyWithPlaintext`): a key authenticates its user with the `X-API-KEY` header where the
 * host's API nodes send it (the media proxy, media storage).
 */
import { Schema } from "effect"
import { field, NonEmptyText, optionalField, refusingUnknownFields, Text, Timestamp, Uuid } from "./Schemas.ts"

/** Body of key creation. */
export const ApiKeyCreate = refusingUnknownFields(Schema.Struct({
  name: field(NonEmptyText(100), "Name of the key, to tell keys apart"),
  description: optionalField(Text(1000), "What the key is for")
})).annotate({ identifier: "ApiKeyCreate" })

const keyFields = {
  id: field(Uuid, "Identifier of the key"),
  name: field(Schema.String, "Name of the key"),
  description: optionalField(Schema.String, "What the key is for"),
  key_prefix: field(Schema.String, "The key masked: its prefix, '…', and its last characters"),
  created_at: field(Timestamp, "Creation time of the key")
}

/** A key as listed: never its value. */
export class ApiKey extends Schema.Class<ApiKey>("ApiKey")(keyFields) {}

/** A new key with its value, which this answer alone shows. */
export class ApiKeyWithPlaintext extends Schema.Class<ApiKeyWithPlaintext>("ApiKeyWithPlaintext")({
  ...keyFields,
  plaintext_key: field(Schema.String, "The key itself: send it as the X-API-KEY header; shown in this answer only")
}) {}

export class CreatedApiKey extends Schema.Class<CreatedApiKey>("CreatedApiKey")({
  api_key: field(ApiKeyWithPlaintext, "The new key, with its value")
}) {}

export class ApiKeyList extends Schema.Class<ApiKeyList>("ApiKeyList")({
  api_keys: field(Schema.Array(ApiKey), "The caller's unrevoked keys, oldest first")
}) {}
