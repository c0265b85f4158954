/**
 * Where node archives live. The interface speaks of keys and byte streams only, so an
 * S3-compatible store can replace the local one; the local one keeps each archive as one file
 * under the storage folder, written to a temporary file first and renamed into place, so a
 * reader never sees half an archive and an aborted upload leaves nothing behind.
 */
import { FileSystem } from "@effect/platform"
import { isPlatformError, type PlatformError } from "@effect/platform/Error"
import { Data, Effect, Option, Stream } from "effect"
import { randomBytes } from "node:crypto"
import * as path from "node:path"
import { AppConfig } from "../Config.ts"
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

/** The store itself failed (a full disk, a permission): the service's fault, logged where it happened. */
export class StorageFailed extends Data.TaggedError("StorageFailed")<{ readonly cause: PlatformError }> {
  override get message() {
    return "The archive store failed"
  }
}

export interface Stored<A> {
  readonly bytes: number
  /** What `inspect` said of the complete content. */
  readonly inspection: A
}

export interface PutOptions<A, E, R> {
  readonly maxBytes: number
  /** Reads the complete content (`bytes` long) from a local file before it becomes visible under the key. */
  readonly inspect: (file: string, bytes: number) => Effect.Effect<A, E, R>
}

/** An archive as stored: its size and its bytes. */
export interface Opened {
  readonly bytes: number
  readonly stream: Stream.Stream<Uint8Array, StorageFailed>
}

/** Keys are made by the service (`<version id>.zip`); anything else is a bug, not a path. */
const safeKey = (key: string) => {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(key)) throw new Error(`not a storage key: ${JSON.stringify(key)}`)
  return key
}

const failed = (cause: PlatformError) =>
  Effect.zipRight(Effect.logError("archive store failed", cause), Effect.fail(new StorageFailed({ cause })))

/** Where uploads to the store under `dir` are written until complete (swept of crash leftovers: System/Leftovers.ts). */
export const incomingDirOf = (dir: string) => path.join(dir, ".incoming")

/** Archives on the local disk under `dir`. */
export const makeLocalStorage = (dir: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const tmpDir = incomingDirOf(dir)
    yield* fs.makeDirectory(tmpDir, { recursive: true })
    const fileOf = (key: string) => path.join(dir, safeKey(key))

    /**
     * Streams `body` into the store under `key`, refusing it as soon as it passes `maxBytes`. The
     * write is atomic: either the whole content replaces what the key held, or nothing changes.
     */
    const put = <A, E, R>(key: string, body: Stream.Stream<Uint8Array, unknown>, options: PutOptions<A, E, R>) =>
      Effect.gen(function*() {
        const tmp = path.join(tmpDir, `${safeKey(key)}.${randomBytes(8).toString("hex")}`)
        // after the rename the temporary name is gone: removing it is then a no-op
        yield* Effect.addFinalizer(() => Effect.ignore(fs.remove(tmp, { force: true })))
        const file = yield* fs.open(tmp, { flag: "wx" })
        let bytes = 0
        yield* body.pipe(
          Stream.mapError((cause) => new BodyBroken({ cause })),
          Stream.runForEach((chunk): Effect.Effect<void, PlatformError | BodyTooLarge> => {
            bytes += chunk.byteLength
            return bytes > options.maxBytes ? new BodyTooLarge({ maxBytes: options.maxBytes }) : file.writeAll(chunk)
          })
        )
        yield* file.sync
        const inspection = yield* options.inspect(tmp, bytes)
        yield* fs.rename(tmp, fileOf(key))
        return { bytes, inspection } satisfies Stored<A>
      }).pipe(
        Effect.scoped,
        Effect.catchIf(isPlatformError, failed)
      ) as Effect.Effect<Stored<A>, BodyTooLarge | BodyBroken | StorageFailed | E, R>

    /** The content under `key` with its size; `None` when the key holds nothing. */
    const open = (key: string) =>
      fs.stat(fileOf(key)).pipe(
        Effect.map((info): Option.Option<Opened> =>
          Option.some({
            bytes: Number(info.size),
            stream: fs.stream(fileOf(key)).pipe(Stream.catchAll((cause) => Stream.fromEffect(failed(cause))))
          })
        ),
        Effect.catchIf((e) => e._tag === "SystemError" && e.reason === "NotFound", () => Effect.succeed(Option.none<Opened>())),
        Effect.catchTags({ SystemError: failed, BadArgument: failed })
      )

    return {
      put: (<A, E, R>(key: string, body: Stream.Stream<Uint8Array, unknown>, options: PutOptions<A, E, R>) =>
        put(key, body, options).pipe(span("Storage.put"))),
      open: traced("Storage.open")(function*(key: string) {
        return yield* open(key)
      }),
      /** Deletes the content under `key`; a key that holds nothing is no failure. */
      remove: traced("Storage.remove")(function*(key: string) {
        yield* fs.remove(fileOf(key), { force: true }).pipe(Effect.catchIf(isPlatformError, failed))
      })
    }
  })

/** The archive store: the local disk under STORAGE_DIR (by default `<DATA_DIR>/archives`). */
export class Storage extends Effect.Service<Storage>()("Storage", {
  effect: Effect.flatMap(AppConfig, (config) => makeLocalStorage(config.storage.dir))
}) {}
