/**
 * Rescans after a rule change (issue 29, item 3): a durable job of the one job runner, queued by a
 * site admin (RescanAllVersions) under one key, so one runs at a time. Each run scans a batch of
 * the versions whose latest scan is not of the current rule set, in id order, and queues the next
 * batch from where it stopped; a run that fails (the store or the database away) is retried by
 * the runner with its backoff, from the same place. An archive missing from the store is recorded
 * in the version's pipeline as a failed scan and skipped: the start-up repair of lost archives
 * owns it.
 *
 * Rescans share the process with the read routes: after each archive the job waits `pace` times
 * as long as the scan took, so that scanning takes at most 1 / (1 + pace) of one core.
 */
import { NodeStream } from "@effect/platform-node"
import { Clock, Effect, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { defineTask, type JobTask } from "../Jobs/Task.ts"
import { archiveKey } from "../Storage/Keys.ts"
import { Storage } from "../Storage/Store.ts"
import type { RangedContent } from "../Storage/Storage.ts"
import { ModerationRepo } from "./Repo.ts"
import { ruleSetVersion } from "./Rules.ts"
import { scanArchive } from "./Scanner.ts"

const Batch = Schema.Struct({
  /** Versions after this id (in uuid order) are left to do. */
  after: Schema.String
})

/** Archives scanned per run: a restart in the middle loses at most this much work. */
export const rescanBatchSize = 20

/** How many times a scan's own time the job waits after it: scanning takes at most a twentieth of a core. */
export const rescanPace = 19

const before = "00000000-0000-0000-0000-000000000000"

export const rescanTask: JobTask<typeof Batch.Type, SqlClient.SqlClient | Storage | ModerationRepo> = defineTask(
  "moderation-rescan",
  Batch,
  ({ after }) =>
    Effect.gen(function*() {
      const storage = yield* Storage
      const repo = yield* ModerationRepo
      const rows = yield* repo.staleScans(after, rescanBatchSize)
      for (const { id } of rows) {
        const opened = yield* storage.open(archiveKey(id))
        if (Option.isNone(opened)) {
          yield* repo.recordScanFailure(id, "rescan: the archive is not in the store")
          yield* Effect.logWarning(`rescan: the archive of version ${id} is not in the store; skipped`)
          continue
        }
        const { bytes, slice } = opened.value
        // the scanner reads the central directory and the entries it needs, by ranges
        const content: RangedContent = { bytes, range: (start, end) => NodeStream.toReadableNever(slice(start, end - start)) }
        const started = yield* Clock.currentTimeMillis
        const scan = yield* scanArchive(content)
        const moved = yield* repo.recordRescan(id, scan)
        if (moved === "held" || moved === "released") {
          yield* Effect.logInfo(`rescan with rule set ${ruleSetVersion}: version ${id} ${moved === "held" ? "held for review" : "released"}`)
        }
        const took = (yield* Clock.currentTimeMillis) - started
        yield* Effect.sleep(took * rescanPace)
      }
      if (rows.length === rescanBatchSize) yield* rescanTask.enqueue({ after: rows[rows.length - 1]!.id }, { jobKey: rescanTask.identifier })
    })
)

/** Queues a rescan from the start; one already waiting is replaced (its place is the same or further). */
export const queueRescan = rescanTask.enqueue({ after: before }, { jobKey: rescanTask.identifier })
