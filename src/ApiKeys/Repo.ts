/**
 * User API keys. A key's value is shown once, when it is created; the table keeps its SHA-256 (to
 * recognise it) and a hint (to tell keys apart in listings), never the value itself.
 */
import { SqlClient, SqlSchema } from "effect/sql"
import { Context, Data, Effect, Layer, Option, Redacted, Schema } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { ApiKey, ApiKeyWithPlaintext } from "../Domain/ApiKey.ts"
import { isUuid } from "../Domain/Schemas.ts"
import { DbTime, nullable, rowsOf } from "../Db/Rows.ts"
import { traced } from "../Tracing.ts"

/** Marks a value as one of this registry's API keys (in logs, secret scanners, support requests). */
const keyPrefix = "rgak_"

/** 32 random bytes: 256 bits. */
const keyBytes = 32

/** A fresh value: the prefix, then 256 random bits in base64url (43 characters). */
const mintKeyValue = (): Redacted.Redacted => Redacted.make(keyPrefix + randomBytes(keyBytes).toString("base64url"))

const hashKey = (value: string): Buffer => createHash("sha256").update(value, "utf8").digest()

/** What listings show of a value: the prefix and its last 4 characters (16 of its 256 bits). */
const keyHint = (value: string): string => `${keyPrefix}…${value.slice(-4)}`

export class ApiKeyMissing extends Data.TaggedError("ApiKeyMissing")<{ readonly keyId: string }> {
  override get message() {
    return `You have no API key '${this.keyId}'`
  }
}

export interface NewApiKey {
  readonly userId: string
  readonly name: string
  readonly description: string | undefined
}

/** Who a key belongs to, as the users table knows them. */
export interface KeyOwner {
  readonly id: string
  readonly email: string | undefined
  readonly name: string | undefined
  /** The key's own id, for the usage events of what it authenticated. */
  readonly apiKeyId: string
}

const keyColumns = {
  id: Schema.String,
  name: Schema.String,
  description: nullable(Schema.String),
  key_hint: Schema.String,
  created_at: DbTime
}

const KeyRow = rowsOf(keyColumns, ApiKey, ({ key_hint, ...fields }) => new ApiKey({ ...fields, key_prefix: key_hint }, { disableChecks: true }))

const OwnerRow = Schema.Struct({ key_id: Schema.String, user_id: Schema.String, email: Schema.NullOr(Schema.String), name: Schema.NullOr(Schema.String) })

export class ApiKeyRepo extends Context.Service<ApiKeyRepo>()("ApiKeyRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const findAll = SqlSchema.findAll({
      Request: Schema.String,
      Result: KeyRow,
      execute: (userId) =>
        sql`SELECT id::text, name, description, key_hint, created_at FROM api_keys
            WHERE user_id = ${userId} AND revoked_at IS NULL
            ORDER BY created_at, id`
    })

    const findOwner = SqlSchema.findOneOption({
      Request: Schema.Uint8Array,
      Result: OwnerRow,
      execute: (hash) =>
        sql`SELECT k.id AS key_id, k.user_id, u.email, u.name FROM api_keys k JOIN users u ON u.id = k.user_id
            WHERE k.key_hash = ${hash} AND k.revoked_at IS NULL`
    })

    return {
      /** Stores a new key of the user (already recorded) and answers it with its value, which exists nowhere else afterwards. */
      create: traced("ApiKeyRepo.create")(function*(key: NewApiKey) {
        const value = Redacted.value(mintKeyValue())
        const rows = yield* sql<{ id: string; created_at: Date }>`INSERT INTO api_keys ${
          sql.insert({
            user_id: key.userId,
            name: key.name,
            description: key.description ?? null,
            key_hash: hashKey(value),
            key_hint: keyHint(value)
          })
        } RETURNING id::text, created_at`.pipe(Effect.orDie)
        const row = rows[0]!
        return new ApiKeyWithPlaintext({
          id: row.id,
          name: key.name,
          ...(key.description === undefined ? {} : { description: key.description }),
          key_prefix: keyHint(value),
          created_at: row.created_at,
          plaintext_key: value
        }, { disableChecks: true })
      }),

      /** The user's unrevoked keys, oldest first, values masked. */
      list: traced("ApiKeyRepo.list")(function*(userId: string) {
        return yield* Effect.orDie(findAll(userId))
      }),

      /** Revokes at once an unrevoked key of the user. */
      revoke: traced("ApiKeyRepo.revoke")(function*(userId: string, keyId: string) {
        // an id that is not a UUID names no key (and must not reach the ::uuid cast)
        const rows = isUuid(keyId)
          ? yield* sql`UPDATE api_keys SET revoked_at = now()
              WHERE id = ${keyId}::uuid AND user_id = ${userId} AND revoked_at IS NULL
              RETURNING id`.pipe(Effect.orDie)
          : []
        if (rows.length === 0) return yield* new ApiKeyMissing({ keyId })
      }),

      /**
       * The owner of the unrevoked key with this value, `None` for any other value: one lookup
       * of the hash's unique index. Nothing is written, so a key's use costs no commit.
       */
      verify: traced("ApiKeyRepo.verify")(function*(value: Redacted.Redacted) {
        const text = Redacted.value(value)
        if (!text.startsWith(keyPrefix)) return Option.none<KeyOwner>()
        const row = yield* Effect.orDie(findOwner(hashKey(text)))
        return Option.map(row, (r): KeyOwner => ({ id: r.user_id, email: r.email ?? undefined, name: r.name ?? undefined, apiKeyId: r.key_id }))
      })
    }
  })
}) {
  static readonly layer = Layer.effect(ApiKeyRepo, ApiKeyRepo.make)
}
