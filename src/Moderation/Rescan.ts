/**
 * Rescans after a rule change (issue 29, item 3): a durable job of the one job runner, queued by a
 * site admin (RescanAllVersions) under one key, so one runs at a time. Each run scans a batch of
 * the versions whose latest scan is not of the current rule set, in id order, and queues the next
 * batch from where it stopped; a run that fails (the store or the database away) is retried by
 * the runner with its backoff, from the same place. An archive missing from the store is recorded
 * in the version's pipeline as a failed scan and skipped: the start-up repair of lost archives
 * owns it.
 *
 * A scan that does not finish (FileScanner.ts: its thread took too long or stopped) is a failure
 * of that version only: the rescan records it in the version's pipeline and goes on; the version
 * keeps its status and stays due for the next rescan.
 *
 * Rescans share the machine with the read routes: the rules run on the scan thread, and after
 * each archive the job waits `rescanPace` times the CPU time the process spent while it was read
 * and scanned (every thread: the event loop's reading, the pool's inflating, the scan thread's
 * rules), so that rescanning takes at most 1 / (1 + rescanPace) of one core. CPU, not wall time:
 * a scan that waited (for the event loop under load, or a lock on its insert) used no core, and
 * would otherwise be paced as if it had. What the read routes spent meanwhile counts too, so a
 * rescan slows itself under load, and goes at its full pace when the service is idle.
 *
 * Retries (`scanRetryTask`): an upload whose scan did not finish is held (Flagged, the scan
 * recorded as failed) and this job, queued in the upload's transaction, scans it again. A failure
 * fails the job, which the runner retries with its backoff (about 3 s, 7 s, 20 s, 55 s); after
 * `scanAttempts` failed scans in all the version stays held for a site admin's review, and its
 * pipeline says so. A scan that finishes decides as a rescan does: passed, the version is listed.
 */
import { NodeStream } from "@effect/platform-node"
import { Effect, Option, Schema, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { defineTask, type JobTask } from "../Jobs/Task.ts"
import { archiveKey } from "../Storage/Keys.ts"
import { Storage } from "../Storage/Store.ts"
import type { ZipSource } from "../Storage/Zip.ts"
import type { FileScanner } from "./FileScanner.ts"
import { ModerationRepo } from "./Repo.ts"
import { ruleSetVersion } from "./Rules.ts"
import { scanArchive } from "./Scanner.ts"

const Batch = Schema.Struct({
  /** Versions after this id (in uuid order) are left to do. */
  after: Schema.String
})

const Retry = Schema.Struct({ versionId: Schema.String })

/** Archives scanned per run: a restart in the middle loses at most this much work. */
export const rescanBatchSize = 20

/**
 * How many times a scan's CPU time the job waits after it: rescanning takes at most a fiftieth of
 * a core. At a twentieth, 100,000 versions took 2.4 h, but the reads' p99 rose by half under a
 * steady load (`bench/rescan.ts`); at a fiftieth, 6 h, and the p99 within the target.
 */
export const rescanPace = 49

/** The CPU time (ms) every thread of the process has used so far. */
const processCpuMillis = Effect.sync(() => {
  const { system, user } = process.cpuUsage()
  return (user + system) / 1000
})

const before = "00000000-0000-0000-0000-000000000000"

/**
 * Archives up to this size are read whole, in one read, and scanned from memory. Read by ranges,
 * a small pack took some ten reads, each a stream of its own, and cost the event loop three times
 * what its scan did (6 ms against 2 ms for a four-file pack).
 */
export const wholeReadBytes = 4 * 1024 * 1024

/** The version's archive for the scanner: none when it is not in the store. */
const archiveOf = (versionId: string) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const opened = yield* storage.open(archiveKey(versionId))
    if (Option.isNone(opened)) return Option.none<ZipSource>()
    const { bytes, slice, stream } = opened.value
    if (bytes <= wholeReadBytes) return Option.some<ZipSource>(Buffer.concat(yield* Stream.runCollect(stream)))
    return Option.some<ZipSource>({ bytes, range: (start, end) => NodeStream.toReadableNever(slice(start, end - start)) })
  })

/** What the scan jobs need. */
type ScanJobNeeds = SqlClient.SqlClient | Storage | ModerationRepo | FileScanner

export const rescanTask: JobTask<typeof Batch.Type, ScanJobNeeds> = defineTask(
  "moderation-rescan",
  Batch,
  ({ after }) =>
    Effect.gen(function*() {
      const repo = yield* ModerationRepo
      const rows = yield* repo.staleScans(after, rescanBatchSize)
      for (const { id } of rows) {
        const cpuBefore = yield* processCpuMillis
        const content = yield* archiveOf(id)
        if (Option.isNone(content)) {
          yield* repo.recordScanFailure(id, "rescan: the archive is not in the store")
          yield* Effect.logWarning(`rescan: the archive of version ${id} is not in the store; skipped`)
          continue
        }
        const scan = yield* Effect.result(scanArchive(content.value))
        yield* Effect.sleep(((yield* processCpuMillis) - cpuBefore) * rescanPace)
        if (scan._tag === "Failure") {
          yield* repo.recordScanFailure(id, `rescan: ${scan.failure.reason}`)
          yield* Effect.logWarning(`rescan: the scan of version ${id} did not finish (${scan.failure.reason}); skipped`)
          continue
        }
        const moved = yield* repo.recordRescan(id, scan.success)
        if (moved === "held" || moved === "released") {
          yield* Effect.logInfo(`rescan with rule set ${ruleSetVersion}: version ${id} ${moved === "held" ? "held for review" : "released"}`)
        }
      }
      if (rows.length === rescanBatchSize) yield* rescanTask.enqueue({ after: rows[rows.length - 1]!.id }, { jobKey: rescanTask.identifier })
    })
)

/** Scans of one version that may fail before it is left held for a site admin's review. */
export const scanAttempts = 5

export const scanRetryTask: JobTask<typeof Retry.Type, ScanJobNeeds> = defineTask(
  "moderation-scan-retry",
  Retry,
  ({ versionId }) =>
    Effect.gen(function*() {
      const repo = yield* ModerationRepo
      // a site admin decided meanwhile, or the version was deleted: nothing is left to retry
      if (!(yield* repo.awaitsScanRetry(versionId))) return
      const content = yield* archiveOf(versionId)
      if (Option.isNone(content)) {
        return yield* repo.recordScanFailure(versionId, "retry: the archive is not in the store; held for a site admin's review")
      }
      const scan = yield* Effect.result(scanArchive(content.value))
      if (scan._tag === "Success") {
        const moved = yield* repo.recordRescan(versionId, scan.success)
        return yield* Effect.logInfo(`scan retry: version ${versionId} ${moved === "released" ? "passed and is listed" : "is held for review"}`)
      }
      const failed = yield* repo.recordFailedRetry(versionId, scan.failure)
      if (failed >= scanAttempts) {
        yield* repo.recordScanFailure(versionId, `gave up after ${failed} scans that did not finish; held for a site admin's review`)
        return yield* Effect.logWarning(`scan retry: version ${versionId} failed ${failed} scans; left held for review`)
      }
      // the runner retries the job with its backoff
      return yield* scan.failure
    })
)

/** Queues a rescan from the start; one already waiting is replaced (its place is the same or further). */
export const queueRescan = rescanTask.enqueue({ after: before }, { jobKey: rescanTask.identifier })
