/**
 * The roll-up of install counts (issue 30, item 5): a recurring job of the one job runner, at
 * minute 7 of every hour (UTC), once across instances. Each run folds every completed hour's raw
 * rows into their days and deletes them (DownloadRepo.fold, one statement): a run that crashes
 * changes nothing, and a retry or a second run adds nothing. Runs missed while no instance was up
 * are not made up for one by one: the next run folds all that is due.
 */
import { Effect, Schema } from "effect"
import { defineTask, type JobTask } from "../Jobs/Task.ts"
import { DownloadRepo } from "./Repo.ts"

/** When the roll-up runs: minute 7 of every hour, past the repository's grace of 5 minutes. */
export const rollupSchedule = "7 * * * *"

// graphile-worker's recurring payload (`{_cron: ...}`) carries nothing the run needs
const Nothing = Schema.Struct({})

export const rollupTask: JobTask<typeof Nothing.Type, DownloadRepo> = defineTask(
  "downloads-rollup",
  Nothing,
  () =>
    Effect.gen(function*() {
      const folded = yield* (yield* DownloadRepo).fold()
      if (folded > 0) yield* Effect.logDebug(`downloads: ${folded} install rows folded into their days`)
    }),
  { schedule: rollupSchedule }
)
