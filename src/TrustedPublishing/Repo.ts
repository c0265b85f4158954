/**
 * Trusted publishers, the identity tokens already exchanged, and the publish tokens minted for
 * them (migration 0020). A publish token's value is shown once; the table keeps its SHA-256.
 */
import { SqlClient, SqlSchema } from "effect/sql"
import { Array as Arr, Context, Data, Effect, Layer, Option, Redacted, Schema } from "effect"
import { createHash, randomBytes } from "node:crypto"
import type { Provenance } from "../Domain/Node.ts"
import type { PublisherStatus } from "../Domain/Publisher.ts"
import { TrustedPublisher, type TrustedPublisherCreate } from "../Domain/TrustedPublisher.ts"
import { isUuid } from "../Domain/Schemas.ts"
import { DbTime, nullable, rowsOf } from "../Db/Rows.ts"
import { traced } from "../Tracing.ts"

/** Marks a value as a publish token of this registry (in logs, secret scanners, support requests). */
export const publishTokenPrefix = "rgtp_"

const hashToken = (value: string): Buffer => createHash("sha256").update(value, "utf8").digest()

export class TrustedPublisherMissing extends Data.TaggedError("TrustedPublisherMissing")<{
  readonly nodeId: string
  readonly trustedPublisherId: string
}> {
  override get message() {
    return `Node '${this.nodeId}' has no trusted publisher '${this.trustedPublisherId}'`
  }
}

/** The identity token was exchanged before. */
export class IdentityReplayed extends Data.TaggedError("IdentityReplayed")<{}> {
  override get message() {
    return "This identity token was already exchanged: an identity token is accepted once (its jti claim)"
  }
}

/** The claims of the run a publish token was minted for: what the versions it publishes record. */
export interface RunClaims {
  readonly issuer: string
  readonly repository: string
  readonly workflow: string
  readonly ref?: string | undefined
  readonly sha?: string | undefined
  readonly run_id?: string | undefined
  readonly environment?: string | undefined
}

/** The claims as stored: absent values left out. */
type StoredClaims = Omit<Extract<Provenance, { readonly method: "trusted_publishing" }>, "method" | "trusted_publisher_id">

/** A trusted publisher that an exchange may match, with its publisher's state. */
export interface Candidate {
  readonly id: string
  readonly publisher_id: string
  readonly node_id: string
  readonly repository_owner: string
  readonly repository_name: string
  readonly workflow: string
  readonly environment?: string | undefined
  readonly ref_pattern?: string | undefined
  readonly publisher_status: PublisherStatus
}

const columns = `id::text, publisher_id, node_id, issuer, repository_owner, repository_name, workflow, environment, ref_pattern, created_at`

const TrustedPublisherRow = rowsOf({
  id: Schema.String,
  publisher_id: Schema.String,
  node_id: Schema.String,
  issuer: Schema.String,
  repository_owner: Schema.String,
  repository_name: Schema.String,
  workflow: Schema.String,
  environment: nullable(Schema.String),
  ref_pattern: nullable(Schema.String),
  created_at: DbTime
}, TrustedPublisher, ({ created_at, ...fields }) => new TrustedPublisher({ ...fields, createdAt: created_at }, { disableChecks: true }))

/** Drops absent values: a NULL column is an absent field. */
const present = <A extends object>(record: A) =>
  Object.fromEntries(Object.entries(record).filter(([, v]) => v !== null && v !== undefined)) as A

export class TrustedPublishingRepo extends Context.Service<TrustedPublishingRepo>()("TrustedPublishingRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const findAll = SqlSchema.findAll({
      Request: Schema.Struct({ publisherId: Schema.String, nodeId: Schema.String }),
      Result: TrustedPublisherRow,
      execute: ({ nodeId, publisherId }) =>
        sql`SELECT ${sql.literal(columns)} FROM trusted_publishers
            WHERE publisher_id = ${publisherId} AND node_id = ${nodeId} AND deleted_at IS NULL
            ORDER BY created_at, id`
    })

    return {
      create: traced("TrustedPublishingRepo.create")(
        function*(publisherId: string, nodeId: string, rule: TrustedPublisherCreate, createdBy: string) {
          const rows = yield* sql`INSERT INTO trusted_publishers ${
            sql.insert({
              publisher_id: publisherId,
              node_id: nodeId,
              issuer: rule.issuer,
              repository_owner: rule.repository_owner,
              repository_name: rule.repository_name,
              workflow: rule.workflow,
              environment: rule.environment ?? null,
              ref_pattern: rule.ref_pattern ?? null,
              created_by: createdBy
            })
          } RETURNING ${sql.literal(columns)}`.pipe(Effect.orDie)
          return yield* Effect.orDie(Schema.decodeUnknownEffect(TrustedPublisherRow)(rows[0]))
        }
      ),

      list: traced("TrustedPublishingRepo.list")(function*(publisherId: string, nodeId: string) {
        return yield* Effect.orDie(findAll({ publisherId, nodeId }))
      }),

      /** Removes it at once: the publish tokens it allowed stop working for its node. */
      remove: traced("TrustedPublishingRepo.remove")(function*(publisherId: string, nodeId: string, trustedPublisherId: string) {
        const rows = isUuid(trustedPublisherId)
          ? yield* sql`UPDATE trusted_publishers SET deleted_at = now()
              WHERE id = ${trustedPublisherId}::uuid AND publisher_id = ${publisherId} AND node_id = ${nodeId} AND deleted_at IS NULL
              RETURNING id`.pipe(Effect.orDie)
          : []
        if (rows.length === 0) return yield* new TrustedPublisherMissing({ nodeId, trustedPublisherId })
      }),

      /** The issuer's trusted publishers for a repository (owner and name without regard to case), with their publishers' states; a deleted publisher's are gone. */
      candidates: traced("TrustedPublishingRepo.candidates")(function*(issuer: string, owner: string, name: string) {
        const rows = yield* sql<Candidate & { environment: string | null; ref_pattern: string | null }>`SELECT
            t.id::text, t.publisher_id, t.node_id, t.repository_owner, t.repository_name, t.workflow, t.environment,
            t.ref_pattern, p.status AS publisher_status
          FROM trusted_publishers t JOIN publishers p ON p.id = t.publisher_id AND p.deleted_at IS NULL
          WHERE t.issuer = ${issuer} AND lower(t.repository_owner) = lower(${owner})
            AND lower(t.repository_name) = lower(${name}) AND t.deleted_at IS NULL
          ORDER BY t.created_at, t.id`.pipe(Effect.orDie)
        return rows.map(present) as ReadonlyArray<Candidate>
      }),

      /**
       * Records the identity token as used and mints a publish token for the trusted publishers
       * it matched: one transaction, so a replay that races the first exchange mints nothing.
       * Answers the token's value, shown once. Expired records are swept on the way.
       */
      mint: traced("TrustedPublishingRepo.mint")(function*(
        identity: { readonly issuer: string; readonly jti: string; readonly expiresAt: Date },
        trustedPublisherIds: Arr.NonEmptyReadonlyArray<string>,
        claims: RunClaims,
        expiresAt: Date
      ) {
        const value = Redacted.make(publishTokenPrefix + randomBytes(32).toString("base64url"))
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`DELETE FROM identity_token_uses WHERE expires_at < now() - interval '1 day'`
          yield* sql`DELETE FROM publish_tokens WHERE expires_at < now() - interval '1 day'`
          const first = yield* sql`INSERT INTO identity_token_uses ${
            sql.insert({ issuer: identity.issuer, jti: identity.jti, expires_at: identity.expiresAt })
          } ON CONFLICT DO NOTHING RETURNING jti`
          if (first.length === 0) return yield* new IdentityReplayed()
          const [token] = yield* sql<{ id: string }>`INSERT INTO publish_tokens ${
            sql.insert({ token_hash: hashToken(Redacted.value(value)), claims: JSON.stringify(present(claims)), expires_at: expiresAt })
          } RETURNING id::text`
          yield* sql`INSERT INTO publish_token_scopes ${
            sql.insert(Arr.map(trustedPublisherIds, (id) => ({ token_id: token!.id, trusted_publisher_id: id })))
          }`
        })).pipe(Effect.catchTag("SqlError", Effect.die))
        return value
      }),

      /**
       * The provenance of what a publish token publishes for the node of the publisher, while it
       * works: not expired, and the trusted publisher that allowed the node still registered.
       * `None` for any other value. Only read: a guess costs no write.
       */
      verifyPublishToken: traced("TrustedPublishingRepo.verifyPublishToken")(
        function*(publisherId: string, nodeId: string, value: Redacted.Redacted) {
          const text = Redacted.value(value)
          if (!text.startsWith(publishTokenPrefix)) return Option.none<Provenance>()
          const rows = yield* sql<{ trusted_publisher_id: string; claims: StoredClaims }>`SELECT
              t.id::text AS trusted_publisher_id, k.claims
            FROM publish_tokens k
            JOIN publish_token_scopes s ON s.token_id = k.id
            JOIN trusted_publishers t ON t.id = s.trusted_publisher_id
            WHERE k.token_hash = ${hashToken(text)} AND k.expires_at > now() AND t.deleted_at IS NULL
              AND t.publisher_id = ${publisherId} AND t.node_id = ${nodeId}
            LIMIT 1`.pipe(Effect.orDie)
          const row = rows[0]
          if (row === undefined) return Option.none<Provenance>()
          return Option.some<Provenance>({ method: "trusted_publishing", trusted_publisher_id: row.trusted_publisher_id, ...row.claims })
        }
      )
    }
  })
}) {
  static readonly layer = Layer.effect(TrustedPublishingRepo, TrustedPublishingRepo.make)
}
