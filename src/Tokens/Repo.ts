/**
 * Personal access tokens of publishers. A token's value is shown once, when it is created; the
 * table keeps its SHA-256 (to recognise it) and a short hint (to tell tokens apart in listings),
 * never the value itself.
 */
import { SqlClient, SqlSchema } from "effect/sql"
import { Context, Data, Effect, Layer, Option, Redacted, Schema } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { TokenSummary } from "../Domain/Token.ts"
import { isUuid } from "../Domain/Schemas.ts"
import { DbTime, nullable, rowsOf } from "../Db/Rows.ts"
import { traced } from "../Tracing.ts"

/** Marks a value as one of this registry's tokens (in logs, secret scanners, support requests). */
const tokenPrefix = "rgpat_"

/** 32 random bytes: 256 bits. */
const tokenBytes = 32

/** A fresh value: the prefix, then 256 random bits in base64url (43 characters). */
const mintTokenValue = (): Redacted.Redacted => Redacted.make(tokenPrefix + randomBytes(tokenBytes).toString("base64url"))

const hashToken = (value: string): Buffer => createHash("sha256").update(value, "utf8").digest()

/** What listings show of a value: the prefix and the first 4 random characters. */
const tokenHint = (value: string): string => value.slice(0, tokenPrefix.length + 4)

export class TokenMissing extends Data.TaggedError("TokenMissing")<{ readonly publisherId: string; readonly tokenId: string }> {
  override get message() {
    return `Publisher '${this.publisherId}' has no token '${this.tokenId}'`
  }
}

export interface NewToken {
  readonly publisherId: string
  readonly name: string
  readonly description: string | undefined
  readonly createdBy: string
}

const SummaryRow = rowsOf({
  id: Schema.String,
  name: Schema.String,
  description: nullable(Schema.String),
  token_hint: Schema.String,
  created_at: DbTime,
  last_used_at: nullable(DbTime)
}, TokenSummary, ({ token_hint, created_at, last_used_at, ...fields }) =>
  new TokenSummary({
    ...fields,
    token: `${token_hint}…`,
    createdAt: created_at,
    ...(last_used_at === undefined ? {} : { lastUsedAt: last_used_at })
  }, { disableChecks: true }))

export class TokenRepo extends Context.Service<TokenRepo>()("TokenRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const findAll = SqlSchema.findAll({
      Request: Schema.String,
      Result: SummaryRow,
      execute: (publisherId) =>
        sql`SELECT id::text, name, description, token_hint, created_at, last_used_at
            FROM personal_access_tokens
            WHERE publisher_id = ${publisherId} AND revoked_at IS NULL
            ORDER BY created_at, id`
    })

    return {
      /** Stores a new token and answers its value, which exists nowhere else afterwards. */
      create: traced("TokenRepo.create")(function*(token: NewToken) {
        const value = mintTokenValue()
        yield* sql`INSERT INTO personal_access_tokens ${
          sql.insert({
            publisher_id: token.publisherId,
            name: token.name,
            description: token.description ?? null,
            token_hash: hashToken(Redacted.value(value)),
            token_hint: tokenHint(Redacted.value(value)),
            created_by: token.createdBy
          })
        }`.pipe(Effect.orDie)
        return value
      }),

      /** The publisher's unrevoked tokens, oldest first, values masked. */
      list: traced("TokenRepo.list")(function*(publisherId: string) {
        return yield* Effect.orDie(findAll(publisherId))
      }),

      /** Revokes at once an unrevoked token of the publisher. */
      revoke: traced("TokenRepo.revoke")(function*(publisherId: string, tokenId: string) {
        // an id that is not a UUID names no token (and must not reach the ::uuid cast)
        const rows = isUuid(tokenId)
          ? yield* sql`UPDATE personal_access_tokens SET revoked_at = now()
              WHERE id = ${tokenId}::uuid AND publisher_id = ${publisherId} AND revoked_at IS NULL
              RETURNING id`.pipe(Effect.orDie)
          : []
        if (rows.length === 0) return yield* new TokenMissing({ publisherId, tokenId })
      }),

      /**
       * The id of the publisher's unrevoked token with this value, recording the use; `None` for
       * any other value (unknown, revoked, another publisher's). A wrong value is only read: a
       * guess must not cost a write.
       */
      verify: traced("TokenRepo.verify")(function*(publisherId: string, value: Redacted.Redacted) {
        const text = Redacted.value(value)
        if (!text.startsWith(tokenPrefix)) return Option.none<string>()
        const rows = yield* sql<{ id: string }>`SELECT id::text FROM personal_access_tokens
          WHERE token_hash = ${hashToken(text)} AND publisher_id = ${publisherId} AND revoked_at IS NULL`.pipe(Effect.orDie)
        const id = rows[0]?.id
        if (id === undefined) return Option.none<string>()
        yield* sql`UPDATE personal_access_tokens SET last_used_at = now() WHERE id = ${id}::uuid`.pipe(Effect.orDie)
        return Option.some(id)
      })
    }
  })
}) {
  static readonly layer = Layer.effect(TokenRepo, TokenRepo.make)
}
