/**
 * The parsed dependencies of versions stored before they were parsed (migration 0026 added the
 * column): a job reads each such version's `dependencies` as PEP 508 requirements and stores the
 * parsed form, so that every version answer carries `dependency_requirements`. Queued at every
 * start under one key (instances starting together queue one job); each run takes a batch in id
 * order and queues the next from where it stopped, until none is left. Idempotent: a version
 * parsed meanwhile (by a publish) is not written over.
 */
import { SqlClient } from "effect/sql"
import { Effect, Schema } from "effect"
import { catalogueChannel } from "../Catalog/PageCache.ts"
import { requirementRecord } from "../Domain/Requirements.ts"
import { defineTask, type JobTask } from "../Jobs/Task.ts"

const Batch = Schema.Struct({
  /** Versions after this id (in uuid order) are left to do. */
  after: Schema.String
})

/** Versions parsed per run: parsing is cheap, and one run stays one short transaction's worth. */
export const dependencyBatchSize = 500

const before = "00000000-0000-0000-0000-000000000000"

export const dependencyParseTask: JobTask<typeof Batch.Type, SqlClient.SqlClient> = defineTask("dependency-parse-backfill", Batch, ({ after }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ id: string; dependencies: ReadonlyArray<string> }>`
      SELECT id::text, dependencies FROM node_versions
      WHERE dependency_requirements IS NULL AND id > ${after}::uuid
      ORDER BY id LIMIT ${dependencyBatchSize}`
    if (rows.length > 0) {
      const parsed = JSON.stringify(rows.map((row) => ({ id: row.id, parsed: row.dependencies.map(requirementRecord) })))
      // one statement for the batch; a version parsed meanwhile keeps its own
      yield* sql`UPDATE node_versions v SET dependency_requirements = b.parsed
        FROM jsonb_to_recordset(${parsed}::jsonb) AS b(id uuid, parsed jsonb)
        WHERE v.id = b.id AND v.dependency_requirements IS NULL`
      // versions are shown in cached pages: every instance drops its own (a payload no instance sends)
      yield* sql`SELECT pg_notify(${catalogueChannel}, 'dependency-parse-backfill')`
    }
    if (rows.length === dependencyBatchSize) yield* dependencyParseTask.enqueue({ after: rows[rows.length - 1]!.id })
  }))

/** Queues the backfill from the start, under one key: queued again at every start, it runs once at a time. */
export const queueDependencyBackfill = dependencyParseTask.enqueue({ after: before }, { jobKey: dependencyParseTask.identifier })
