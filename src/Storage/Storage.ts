/**
 * Where node archives live. The interface speaks of keys and byte streams only, so an
 * S3-compatible store can replace the local one; the local one keeps each archive as one file
 * under the storage folder, written to a temporary file first and renamed into place, so a
 * reader never sees half an archive and an aborted upload leaves nothing behind.
 *
 * Crash consistency: archives are recorded (a database commit) only after `place` has made them
 * durable under their key (file synced, renamed, folder synced), so a crash at any step leaves
 * either no record, or a record whose content is on disk. (Media files record first: see
 * MediaStorage/Service.ts.)
 */
import { FileSystem } from "effect"
import { isPlatformError, type PlatformError } from "effect/PlatformError"
import { Data, Effect, Option, Stream } from "effect"
import { createHash, randomBytes } from "node:crypto"
import * as path from "node:path"
import type { Readable } from "node:stream"
import type { StorageFaultStep } from "../Config.ts"
import { span, traced } from "../Tracing.ts"

/** The body went past the byte limit; nothing was stored. */
export class BodyTooLarge extends Data.TaggedError("BodyTooLarge")<{ readonly maxBytes: number }> {
  override get message() {
    return `The body is larger than ${this.maxBytes} bytes`
  }
}

/** The body stream failed (a client that went away mid-upload); nothing was stored. */
export class BodyBroken extends Data.TaggedError("BodyBroken")<{ readonly cause: unknown }> {
  override get message() {
    return "The body broke off before it was complete"
  }
}

/** The store itself failed (a full disk, a permission, an unreachable bucket): the service's fault, logged where it happened. */
export class StorageFailed extends Data.TaggedError("StorageFailed")<{ readonly cause: unknown }> {
  override get message() {
    return "The archive store failed"
  }
}

/**
 * Stored content read by ranges (an object store's ranged GETs): the archive checks read only the
 * end record and the central directory, never the whole archive.
 */
export interface RangedContent {
  readonly bytes: number
  /** The bytes from `start` up to `end` (exclusive). */
  readonly range: (start: number, end: number) => Readable
}

/** A complete upload, read back before it is placed: a local file's path, or content read by ranges. */
export type StoredContent = string | RangedContent

/** What an upload wrote: its size, and its SHA-256 (computed as it streamed, in the same pass). */
export interface Written {
  readonly bytes: number
  readonly sha256: Buffer
}

export interface Stored<A> {
  readonly bytes: number
  /** What `record` answered. */
  readonly recorded: A
}

export interface PutOptions<A, E, R> {
  readonly maxBytes: number
  /**
   * Records the complete content (`written`, durable in the store under a temporary name and
   * readable as `content`). It runs `place` to make the content the key's, durably, before its
   * own record commits; content it does not place is dropped.
   */
  readonly record: (content: StoredContent, written: Written, place: Effect.Effect<void, StorageFailed>) => Effect.Effect<A, E, R>
}

/** How content fetched from the store directly is to be served. */
export interface Served {
  readonly contentDisposition: string
  /** The media type to answer with; absent: the store's own. */
  readonly contentType?: string
  /** Whether a public base (ARCHIVE_PUBLIC_BASE_URL) may serve it; private files are presigned only. */
  readonly public: boolean
}

/** An archive as stored: its size, when it was written, and its bytes. */
export interface Opened {
  readonly bytes: number
  /** When the content was written (a replaced content has a new time). */
  readonly modified: Date
  readonly stream: Stream.Stream<Uint8Array, StorageFailed>
  /** `length` bytes from `offset`, read from the store as they are sent. */
  readonly slice: (offset: number, length: number) => Stream.Stream<Uint8Array, StorageFailed>
}

/** Keys are made by the service (`<version id>.zip`); anything else is a bug, not a path. */
export const safeKey = (key: string) => {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(key)) throw new Error(`not a storage key: ${JSON.stringify(key)}`)
  return key
}

/** Logs a failure of the store where it happened and answers it as `StorageFailed`. */
export const failed = (cause: unknown) =>
  Effect.andThen(Effect.logError("archive store failed", cause), Effect.fail(new StorageFailed({ cause })))

/** Where uploads to the store under `dir` are written until complete (swept of crash leftovers: System/Leftovers.ts). */
export const incomingDirOf = (dir: string) => path.join(dir, ".incoming")

/**
 * Tests only (FAULT_INJECT_STORAGE): the process dies at once, as in a power cut, when an upload
 * reaches the step `faultAt` names. Unset, every step passes.
 */
const faultInjector = (faultAt: Option.Option<StorageFaultStep>) => (step: StorageFaultStep) =>
  Option.contains(faultAt, step) ? Effect.sync(() => process.kill(process.pid, "SIGKILL")) : Effect.void

/** Archives on the local disk under `dir`. */
export const makeLocalStorage = (dir: string, faultAt: Option.Option<StorageFaultStep> = Option.none()) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const tmpDir = incomingDirOf(dir)
    yield* fs.makeDirectory(tmpDir, { recursive: true })
    const fileOf = (key: string) => path.join(dir, safeKey(key))
    const reached = faultInjector(faultAt)

    /** Syncs the folder `dir`, so that a rename into it survives a power cut. */
    const syncDir = Effect.scoped(Effect.flatMap(fs.open(dir, { flag: "r" }), (folder) => folder.sync))

    /** Renames the synced temporary file over the key's file and syncs the folder. */
    const placeAt = (tmp: string, key: string) =>
      fs.rename(tmp, fileOf(key)).pipe(
        Effect.andThen(reached("after-rename")),
        Effect.andThen(syncDir),
        Effect.andThen(reached("after-dir-fsync")),
        Effect.catchIf(isPlatformError, failed)
      )

    /**
     * Streams `body` into the store under `key`, refusing it as soon as it passes `maxBytes`. The
     * write is atomic: either the whole content replaces what the key held, or nothing changes.
     * Its record commits only once the content is durable under the key (see `PutOptions.record`).
     */
    const put = <A, E, R>(key: string, body: Stream.Stream<Uint8Array, unknown>, options: PutOptions<A, E, R>) =>
      Effect.gen(function*() {
        const tmp = path.join(tmpDir, `${safeKey(key)}.${randomBytes(8).toString("hex")}`)
        // after the rename the temporary name is gone: removing it is then a no-op
        yield* Effect.addFinalizer(() => Effect.ignore(fs.remove(tmp, { force: true })))
        const file = yield* fs.open(tmp, { flag: "wx" })
        let bytes = 0
        const hash = createHash("sha256")
        yield* body.pipe(
          Stream.mapError((cause) => new BodyBroken({ cause })),
          Stream.runForEach((chunk): Effect.Effect<void, PlatformError | BodyTooLarge> => {
            bytes += chunk.byteLength
            if (bytes > options.maxBytes) return new BodyTooLarge({ maxBytes: options.maxBytes })
            hash.update(chunk)
            return file.writeAll(chunk)
          })
        )
        yield* reached("after-temp-write")
        yield* file.sync
        yield* reached("after-fsync")
        const recorded = yield* options.record(tmp, { bytes, sha256: hash.digest() }, placeAt(tmp, key))
        yield* reached("after-commit")
        return { bytes, recorded } satisfies Stored<A>
      }).pipe(
        Effect.scoped,
        Effect.catchIf(isPlatformError, failed)
      ) as Effect.Effect<Stored<A>, BodyTooLarge | BodyBroken | StorageFailed | E, R>

    /** The content under `key` with its size; `None` when the key holds nothing. */
    const open = (key: string) =>
      fs.stat(fileOf(key)).pipe(
        Effect.map((info): Option.Option<Opened> => {
          const read = (options?: { readonly offset: number; readonly bytesToRead: number }) =>
            fs.stream(fileOf(key), options).pipe(Stream.catch((cause) => Stream.fromEffect(failed(cause))))
          return Option.some({
            bytes: Number(info.size),
            modified: Option.getOrElse(info.mtime, () => new Date(0)),
            stream: read(),
            slice: (offset, length) => read({ offset, bytesToRead: length })
          })
        }),
        Effect.catchIf((e) => e.reason._tag === "NotFound", () => Effect.succeed(Option.none<Opened>())),
        Effect.catchTag("PlatformError", failed)
      )

    /**
     * Which of `keys` hold nothing (content a crash lost). The store is one folder: it is listed
     * once, rather than a stat per key (asked at start-up for every installable archive).
     */
    const missing = (keys: ReadonlyArray<string>) =>
      fs.readDirectory(dir).pipe(
        Effect.catchIf(isPlatformError, failed),
        Effect.map((names) => {
          const present = new Set(names)
          return keys.filter((key) => !present.has(safeKey(key)))
        })
      )

    return {
      put: (<A, E, R>(key: string, body: Stream.Stream<Uint8Array, unknown>, options: PutOptions<A, E, R>) =>
        put(key, body, options).pipe(span("Storage.put"))),
      open: traced("Storage.open")(function*(key: string) {
        return yield* open(key)
      }),
      missing: traced("Storage.missing")(function*(keys: ReadonlyArray<string>) {
        return yield* missing(keys)
      }),
      /** Deletes the content under `key`; a key that holds nothing is no failure. */
      remove: traced("Storage.remove")(function*(key: string) {
        yield* fs.remove(fileOf(key), { force: true }).pipe(Effect.catchIf(isPlatformError, failed))
      }),
      /**
       * Where clients fetch (`GET`) or look at (`HEAD`) `key` themselves, bypassing the service:
       * nowhere, the disk is the service's.
       */
      downloadUrl: (_key: string, _method: "GET" | "HEAD", _served: Served): Effect.Effect<Option.Option<string>, StorageFailed> =>
        Effect.succeed(Option.none()),
      /**
       * Removes what crashed uploads left in the store itself before `before`, answering how many
       * went: nothing here, since the temporary folder is on this disk and System/Leftovers.ts
       * sweeps it with the spools.
       */
      sweepStale: (_before: Date): Effect.Effect<number, StorageFailed> => Effect.succeed(0)
    }
  })

/** What every store offers (the local one is the model; S3Storage.ts the other). */
export type StorageShape = Effect.Success<ReturnType<typeof makeLocalStorage>>
