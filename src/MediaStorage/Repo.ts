/**
 * Media files: one row each, from creation (URLs handed out) through upload (size and hash
 * known) to expiry. Times are PostgreSQL's `now()`, so every instance agrees on what has expired.
 */
import { SqlClient, SqlSchema } from "effect/sql"
import { Context, Data, Effect, Layer, Schema } from "effect"
import { randomBytes } from "node:crypto"
import { traced } from "../Tracing.ts"

/** A file's URLs name it by 256 random bits: knowing one file's URL tells nothing of another's. */
const mintToken = () => randomBytes(32).toString("base64url")

/** No live file has this token (never made, expired, or swept). */
export class MediaFileMissing extends Data.TaggedError("MediaFileMissing")<{}> {
  override get message() {
    return "No such file: it never existed or it has expired"
  }
}

/** The user's live files would hold more than the limit with this one. */
export class MediaQuotaExceeded extends Data.TaggedError("MediaQuotaExceeded")<{ readonly maxBytes: number }> {
  override get message() {
    return `Your live files may hold at most ${this.maxBytes} bytes together; wait for some of them to expire`
  }
}

const LiveFile = Schema.Struct({
  id: Schema.String,
  owner_id: Schema.String,
  token: Schema.String,
  file_name: Schema.String,
  content_type: Schema.String,
  /** The type its bytes told, when none was declared (Sniff.ts); served in place of `content_type`. */
  sniffed_type: Schema.NullOr(Schema.String),
  size_bytes: Schema.NullOr(Schema.NumberFromString),
  expires_at: Schema.Date
})
export type LiveFile = typeof LiveFile.Type

export interface NewFile {
  readonly ownerId: string
  readonly fileName: string
  readonly contentType: string
  readonly ttlSeconds: number
}

const fileColumns = (sql: SqlClient.SqlClient) =>
  sql`id::text, owner_id, token, file_name, content_type, sniffed_type, size_bytes::text, expires_at`

export class MediaFileRepo extends Context.Service<MediaFileRepo>()("MediaFileRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insert = SqlSchema.findOne({
      Request: Schema.Struct({ ownerId: Schema.String, fileName: Schema.String, contentType: Schema.String, ttlSeconds: Schema.Number }),
      Result: LiveFile,
      execute: (f) =>
        sql`INSERT INTO media_files (owner_id, token, file_name, content_type, expires_at)
            VALUES (${f.ownerId}, ${mintToken()}, ${f.fileName}, ${f.contentType}, now() + make_interval(secs => ${f.ttlSeconds}))
            RETURNING ${fileColumns(sql)}`
    })

    const liveByToken = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: LiveFile,
      execute: (token) => sql`SELECT ${fileColumns(sql)} FROM media_files WHERE token = ${token} AND expires_at > now()`
    })

    const liveByHash = SqlSchema.findOneOption({
      Request: Schema.Struct({ ownerId: Schema.String, sha256: Schema.String }),
      Result: LiveFile,
      execute: ({ ownerId, sha256 }) =>
        sql`SELECT ${fileColumns(sql)} FROM media_files
            WHERE owner_id = ${ownerId} AND sha256 = ${sha256} AND expires_at > now()
            ORDER BY expires_at DESC LIMIT 1`
    })

    /** What the owner's live files hold, leaving out `exceptId` (a file being uploaded again). */
    const usedBytes = (ownerId: string, exceptId: string) =>
      sql<{ used: string }>`SELECT coalesce(sum(size_bytes), 0)::text AS used FROM media_files
        WHERE owner_id = ${ownerId} AND id <> ${exceptId}::uuid AND expires_at > now()`.pipe(
        Effect.map((rows) => Number(rows[0]!.used))
      )

    return {
      create: traced("MediaFileRepo.create")(function*(file: NewFile) {
        return yield* Effect.orDie(insert(file))
      }),

      /** The live file of this token, uploaded or not. */
      live: traced("MediaFileRepo.live")(function*(token: string) {
        return yield* Effect.orDie(liveByToken(token))
      }),

      /** The owner's live, uploaded file whose bytes have this SHA-256 (hex, lower-case). */
      withHash: traced("MediaFileRepo.withHash")(function*(ownerId: string, sha256: string) {
        return yield* Effect.orDie(liveByHash({ ownerId, sha256 }))
      }),

      /** How many bytes the owner may still store in `fileId`, after their other live files. */
      room: traced("MediaFileRepo.room")(function*(ownerId: string, fileId: string, maxUserBytes: number) {
        return maxUserBytes - (yield* Effect.orDie(usedBytes(ownerId, fileId)))
      }),

      /**
       * Records the bytes of an upload, unless the owner's live files would then hold more than
       * `maxUserBytes`, with the type its bytes told (none: served as declared). Uploads of one owner take turns here (a transaction lock on the owner),
       * so two that each fit alone cannot both pass.
       */
      recordUpload: traced("MediaFileRepo.recordUpload")(
        function*(
          file: LiveFile,
          stored: { readonly bytes: number; readonly sha256: string; readonly sniffedType: string | undefined },
          maxUserBytes: number
        ) {
          return yield* Effect.gen(function*() {
            yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${`media:${file.owner_id}`}, 0))`
            if ((yield* usedBytes(file.owner_id, file.id)) + stored.bytes > maxUserBytes) {
              return yield* new MediaQuotaExceeded({ maxBytes: maxUserBytes })
            }
            const rows = yield* sql`UPDATE media_files
              SET size_bytes = ${stored.bytes}, sha256 = ${stored.sha256}, sniffed_type = ${stored.sniffedType ?? null}
              WHERE id = ${file.id}::uuid AND expires_at > now() RETURNING id`
            if (rows.length === 0) return yield* new MediaFileMissing()
          }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
        }
      ),

      /** Up to `limit` expired files: what the sweep deletes next. */
      expired: traced("MediaFileRepo.expired")(function*(limit: number) {
        return yield* sql<{ id: string }>`SELECT id::text FROM media_files WHERE expires_at <= now()
          ORDER BY expires_at LIMIT ${limit}`.pipe(Effect.map((rows) => rows.map((r) => r.id)), Effect.orDie)
      }),

      /** Deletes the rows of swept files. */
      delete: traced("MediaFileRepo.delete")(function*(ids: ReadonlyArray<string>) {
        yield* sql`DELETE FROM media_files WHERE id = ANY(${ids as Array<string>}::uuid[])`.pipe(Effect.orDie)
      })
    }
  })
}) {
  static readonly layer = Layer.effect(MediaFileRepo, MediaFileRepo.make)
}
