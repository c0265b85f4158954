/**
 * The digests of archives stored before digests were kept (migration 0013 added the column): a
 * job reads each such archive from the store once and records its SHA-256 beside its size, so that
 * every version answer, install and download can give one. Queued at every start under one key
 * (instances starting together queue one job); each run takes a batch in id order and queues the
 * next from where it stopped, until none is left. An archive missing from the store, or not of
 * its recorded size, is skipped with a warning: the start-up repair of lost archives owns those.
 */
import { SqlClient } from "effect/sql"
import { Effect, Option, Schema, Stream } from "effect"
import { createHash } from "node:crypto"
import { catalogueChannel } from "../Catalog/PageCache.ts"
import { defineTask, type JobTask } from "../Jobs/Task.ts"
import { archiveKey } from "../Storage/Keys.ts"
import { Storage } from "../Storage/Store.ts"

const Batch = Schema.Struct({
  /** Versions after this id (in uuid order) are left to do. */
  after: Schema.String
})

/** Archives read per run: a run is short, and a restart in the middle loses at most this much work. */
export const digestBatchSize = 50

const before = "00000000-0000-0000-0000-000000000000"

/** The SHA-256 and size of the content under `key`, read once; `None` when the store has none. */
const digestOf = (storage: Storage["Service"], key: string) =>
  Effect.flatMap(storage.open(key), (opened) =>
    Option.match(opened, {
      onNone: () => Effect.succeed(Option.none<{ readonly sha256: Buffer; readonly bytes: number }>()),
      onSome: ({ stream }) => {
        const hash = createHash("sha256")
        let bytes = 0
        return Stream.runForEach(stream, (piece) =>
          Effect.sync(() => {
            hash.update(piece)
            bytes += piece.length
          })).pipe(Effect.map(() => Option.some({ sha256: hash.digest(), bytes })))
      }
    }))

export const archiveDigestTask: JobTask<typeof Batch.Type, SqlClient.SqlClient | Storage> = defineTask("archive-digest-backfill", Batch, ({ after }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const storage = yield* Storage
    const rows = yield* sql<{ id: string; archive_bytes: string }>`
      SELECT id::text, archive_bytes FROM node_versions
      WHERE archive_bytes IS NOT NULL AND archive_sha256 IS NULL AND id > ${after}::uuid
      ORDER BY id LIMIT ${digestBatchSize}`
    for (const row of rows) {
      const found = yield* digestOf(storage, archiveKey(row.id))
      if (Option.isNone(found) || found.value.bytes !== Number(row.archive_bytes)) {
        yield* Effect.logWarning(`archive digests: the archive of version ${row.id} is not in the store as recorded; skipped`)
        continue
      }
      // an upload that replaced the archive meanwhile wrote its own digest: this one is not written over it
      yield* sql`UPDATE node_versions SET archive_sha256 = ${found.value.sha256}
        WHERE id = ${row.id}::uuid AND archive_sha256 IS NULL AND archive_bytes = ${found.value.bytes}`
    }
    // versions are shown in cached pages: every instance drops its own (a payload no instance sends)
    if (rows.length > 0) yield* sql`SELECT pg_notify(${catalogueChannel}, 'archive-digest-backfill')`
    if (rows.length === digestBatchSize) yield* archiveDigestTask.enqueue({ after: rows[rows.length - 1]!.id })
  }))

/** Queues the backfill from the start, under one key: queued again at every start, it runs once at a time. */
export const queueDigestBackfill = archiveDigestTask.enqueue({ after: before }, { jobKey: archiveDigestTask.identifier })
