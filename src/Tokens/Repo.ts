/**
 * Personal access tokens of publishers. A token's value is shown once, when it is created; the
 * table keeps its SHA-256 (to recognise it) and a short hint (to tell tokens apart in listings),
 * never the value itself.
 */
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { createHash, randomBytes } from "node:crypto"
import type { TokenSummary } from "../Domain/Token.ts"
import { isUuid } from "../Domain/Schemas.ts"

/** Marks a value as one of this registry's tokens (in logs, secret scanners, support requests). */
export const tokenPrefix = "rgpat_"

/** 32 random bytes: 256 bits. */
const tokenBytes = 32

/** A fresh value: the prefix, then 256 random bits in base64url (43 characters). */
export const mintTokenValue = (): Redacted.Redacted =>
  Redacted.make(tokenPrefix + randomBytes(tokenBytes).toString("base64url"))

export const hashToken = (value: string): Buffer => createHash("sha256").update(value, "utf8").digest()

/** What listings show of a value: the prefix and the first 4 random characters. */
export const tokenHint = (value: string): string => value.slice(0, tokenPrefix.length + 4)

export const maskedToken = (hint: string): string => `${hint}…`


export interface NewToken {
  readonly publisherId: string
  readonly name: string
  readonly description: string | undefined
  readonly createdBy: string
}

export class TokenRepo extends Context.Tag("TokenRepo")<TokenRepo, {
  /** Stores a new token and answers its value, which exists nowhere else afterwards. */
  readonly create: (token: NewToken) => Effect.Effect<Redacted.Redacted>
  /** The publisher's unrevoked tokens, oldest first, values masked. */
  readonly list: (publisherId: string) => Effect.Effect<ReadonlyArray<TokenSummary>>
  /** Revokes at once; false when the publisher has no such unrevoked token. */
  readonly revoke: (publisherId: string, tokenId: string) => Effect.Effect<boolean>
  /**
   * The id of the publisher's unrevoked token with this value, recording the use; `None` for any
   * other value (unknown, revoked, another publisher's).
   */
  readonly verify: (publisherId: string, value: Redacted.Redacted) => Effect.Effect<Option.Option<string>>
}>() {}

interface SummaryRow {
  readonly id: string
  readonly name: string
  readonly description: string | null
  readonly token_hint: string
  readonly created_at: string
  readonly last_used_at: string | null
}

const toSummary = (row: SummaryRow): TokenSummary => ({
  id: row.id,
  name: row.name,
  ...(row.description === null ? {} : { description: row.description }),
  token: maskedToken(row.token_hint),
  createdAt: row.created_at,
  ...(row.last_used_at === null ? {} : { lastUsedAt: row.last_used_at })
})

export const makeTokenRepo = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  const create = (token: NewToken) =>
    Effect.gen(function*() {
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
      }`
      return value
    }).pipe(Effect.orDie)

  const list = (publisherId: string) =>
    sql<SummaryRow>`
      SELECT id::text, name, description, token_hint,
             iso_time(created_at) AS created_at, iso_time(last_used_at) AS last_used_at
      FROM personal_access_tokens
      WHERE publisher_id = ${publisherId} AND revoked_at IS NULL
      ORDER BY created_at, id`.pipe(Effect.map((rows) => rows.map(toSummary)), Effect.orDie)

  const revoke = (publisherId: string, tokenId: string) =>
    // an id that is not a UUID names no token (and must not reach the ::uuid cast)
    isUuid(tokenId)
      ? sql`UPDATE personal_access_tokens SET revoked_at = now()
            WHERE id = ${tokenId}::uuid AND publisher_id = ${publisherId} AND revoked_at IS NULL
            RETURNING id`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)
      : Effect.succeed(false)

  const verify = (publisherId: string, value: Redacted.Redacted) => {
    const text = Redacted.value(value)
    return text.startsWith(tokenPrefix)
      ? sql<{ id: string }>`UPDATE personal_access_tokens SET last_used_at = now()
          WHERE token_hash = ${hashToken(text)} AND publisher_id = ${publisherId} AND revoked_at IS NULL
          RETURNING id::text`.pipe(Effect.map((rows) => Option.fromNullable(rows[0]?.id)), Effect.orDie)
      : Effect.succeed(Option.none<string>())
  }

  return TokenRepo.of({ create, list, revoke, verify })
})

export const TokenRepoLive = Layer.effect(TokenRepo, makeTokenRepo)
