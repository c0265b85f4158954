/**
 * Temporary files a crash left behind: partial uploads in the store's `.incoming` folder and
 * spooled videos in `DATA_DIR/tmp`. Their owner removes them when a request ends; a killed
 * process never does. They are swept at start-up and then periodically.
 *
 * Several instances may share the store, so "at start-up" does not mean "nobody's": only an
 * entry untouched for `TEMP_FILE_MAX_AGE_SECONDS` goes. A live upload writes as it goes (its
 * mtime moves) and one that stalls is cut by the upload idle timeout, which removes its file;
 * an hour of silence is far past both.
 *
 * Under STORAGE=s3 the uploads' leftovers are in the bucket instead: temporary objects under
 * `.incoming/` and unfinished multipart uploads, which the store sweeps with its own client
 * (`sweepStale`) on the same age and schedule (a bucket lifecycle rule may do it too: docs/operating.md,
 * "Object storage").
 */
import { FileSystem } from "effect"
import type { PlatformError } from "effect/PlatformError"
import { Context, Effect, Layer, Option, Schedule } from "effect"
import * as path from "node:path"
import { AppConfig } from "../Config.ts"
import { spoolDirOf } from "../Music/Form.ts"
import { incomingDirOf } from "../Storage/Storage.ts"
import { Storage } from "../Storage/Store.ts"
import { traced } from "../Tracing.ts"

const isNotFound = (e: PlatformError) => e.reason._tag === "NotFound"

export class Leftovers extends Context.Service<Leftovers>()("Leftovers", {
  make: Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const config = yield* AppConfig
    const { maxAgeMillis, sweepIntervalMillis } = config.leftovers
    const storage = yield* Storage
    // under s3 the uploads go to the bucket, which the store sweeps: only the spools are on this disk
    const folders = config.storage.backend._tag === "s3" ? [spoolDirOf(config.dataDir)] : [incomingDirOf(config.storage.dir), spoolDirOf(config.dataDir)]
    /** When anything under `target` last changed: a spool is a folder whose file is written, not the folder. */
    const lastChange = (target: string): Effect.Effect<number, PlatformError> =>
      Effect.flatMap(fs.stat(target), (info) => {
        const own = Option.match(info.mtime, { onNone: () => 0, onSome: (d) => d.getTime() })
        return info.type !== "Directory"
          ? Effect.succeed(own)
          : fs.readDirectory(target).pipe(
            Effect.flatMap((names) => Effect.forEach(names, (name) => lastChange(path.join(target, name)))),
            Effect.map((times) => Math.max(own, ...times))
          )
      })

    /** Removes `target` when stale; one that vanished meanwhile was finished by its owner. */
    const sweepEntry = (target: string, now: number) =>
      lastChange(target).pipe(
        Effect.flatMap((changed) =>
          now - changed < maxAgeMillis ? Effect.succeed(0) : Effect.as(fs.remove(target, { recursive: true }), 1)
        ),
        Effect.catchIf(isNotFound, () => Effect.succeed(0))
      )

    const sweepFolder = (folder: string, now: number) =>
      fs.readDirectory(folder).pipe(
        Effect.flatMap((names) => Effect.forEach(names, (name) => sweepEntry(path.join(folder, name), now))),
        Effect.map((removed) => removed.reduce((a, b) => a + b, 0)),
        Effect.catchIf(isNotFound, () => Effect.succeed(0))
      )

    /** Removes every stale entry of the folders and the bucket; answers how many went. */
    const sweep = traced("Leftovers.sweep")(function*() {
      const now = Date.now()
      const removed = yield* Effect.forEach(folders, (folder) => sweepFolder(folder, now))
      const total = removed.reduce((a, b) => a + b, 0) + (yield* storage.sweepStale(new Date(now - maxAgeMillis)))
      if (total > 0) yield* Effect.logInfo(`removed ${total} temporary file(s) left by an earlier run`)
      return total
    })

    const logged = sweep().pipe(Effect.catchCause((cause) => Effect.logWarning("temporary file sweep failed", cause)))
    // before the service serves: a crash's leftovers go at once
    yield* logged
    yield* logged.pipe(Effect.repeat(Schedule.spaced(sweepIntervalMillis)), Effect.delay(sweepIntervalMillis), Effect.forkScoped)
    return { sweep }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(Leftovers, Leftovers.make)
  static readonly layer = Leftovers.layerWithoutDependencies.pipe(Layer.provide(Storage.layer))
}
