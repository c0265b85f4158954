/**
 * Where node archives live. The interface speaks of keys and byte streams only, so an
 * S3-compatible store can replace the local one; the local one keeps each archive as one file
 * under the storage folder, written to a temporary file first and renamed into place, so a
 * reader never sees half an archive and an aborted upload leaves nothing behind.
 */
import { Context, Effect, Layer, Option, Stream } from "effect"
import { randomBytes } from "node:crypto"
import { createReadStream } from "node:fs"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { AppConfig } from "../Config.ts"

/** The body went past the byte limit; nothing was stored. */
export class TooLarge {
  readonly _tag = "TooLarge"
  constructor(readonly maxBytes: number) {}
}

/** The body stream failed (a client that went away mid-upload); nothing was stored. */
export class BodyFailed {
  readonly _tag = "BodyFailed"
  constructor(readonly cause: unknown) {}
}

export interface Stored<A> {
  readonly bytes: number
  /** What `inspect` said of the complete content. */
  readonly inspection: A
}

export class Storage extends Context.Tag("Storage")<Storage, {
  /**
   * Streams `body` into the store under `key`, refusing it as soon as it passes `maxBytes`.
   * `inspect` reads the complete content from a local file before it becomes visible under the
   * key (a remote store stages it locally too). The write is atomic: either the whole content
   * replaces what the key held, or nothing changes.
   */
  readonly put: <A, E, R>(
    key: string,
    body: Stream.Stream<Uint8Array, unknown>,
    options: { readonly maxBytes: number; readonly inspect: (file: string) => Effect.Effect<A, E, R> }
  ) => Effect.Effect<Stored<A>, TooLarge | BodyFailed | E, R>
  /** The content under `key` as a stream, with its size; `None` when the key holds nothing. */
  readonly open: (key: string) => Effect.Effect<Option.Option<{ readonly bytes: number; readonly stream: Stream.Stream<Uint8Array> }>>
  readonly exists: (key: string) => Effect.Effect<boolean>
  readonly remove: (key: string) => Effect.Effect<void>
}>() {}

/** Keys are made by the service (`<version id>.zip`); anything else is a bug, not a path. */
const safeKey = (key: string) => {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(key)) throw new Error(`not a storage key: ${JSON.stringify(key)}`)
  return key
}

export const makeLocalStorage = (dir: string) =>
  Effect.gen(function*() {
    const tmpDir = path.join(dir, ".incoming")
    yield* Effect.promise(() => fs.mkdir(tmpDir, { recursive: true }))
    const fileOf = (key: string) => path.join(dir, safeKey(key))

    const put = <A, E, R>(
      key: string,
      body: Stream.Stream<Uint8Array, unknown>,
      options: { readonly maxBytes: number; readonly inspect: (file: string) => Effect.Effect<A, E, R> }
    ): Effect.Effect<Stored<A>, TooLarge | BodyFailed | E, R> => {
      const target = fileOf(key)
      const tmp = path.join(tmpDir, `${safeKey(key)}.${randomBytes(8).toString("hex")}`)
      return Effect.acquireUseRelease(
        Effect.promise(() => fs.open(tmp, "wx")),
        (handle) =>
          Effect.gen(function*() {
            let bytes = 0
            yield* body.pipe(
              Stream.mapError((cause) => new BodyFailed(cause)),
              Stream.runForEach((chunk) => {
                bytes += chunk.byteLength
                if (bytes > options.maxBytes) return Effect.fail(new TooLarge(options.maxBytes))
                return Effect.promise(() => handle.write(chunk))
              })
            )
            yield* Effect.promise(() => handle.sync())
            const inspection = yield* options.inspect(tmp)
            yield* Effect.promise(() => fs.rename(tmp, target))
            return { bytes, inspection }
          }),
        // after the rename the temporary name is gone: removing it is then a no-op
        (handle) => Effect.promise(() => handle.close().finally(() => fs.rm(tmp, { force: true })))
      )
    }

    const open = (key: string) =>
      Effect.promise(async () => {
        try {
          const stat = await fs.stat(fileOf(key))
          return Option.some({
            bytes: stat.size,
            stream: Stream.fromAsyncIterable(createReadStream(fileOf(key)), (e) => e).pipe(
              Stream.map((chunk) => chunk as Uint8Array),
              Stream.orDie
            )
          })
        } catch {
          return Option.none()
        }
      })

    return Storage.of({
      put,
      open,
      exists: (key) => Effect.promise(() => fs.access(fileOf(key)).then(() => true, () => false)),
      remove: (key) => Effect.promise(() => fs.rm(fileOf(key), { force: true }))
    })
  })

/** Archives on local disk under STORAGE_DIR (by default `<DATA_DIR>/archives`). */
export const LocalStorage = Layer.effect(Storage, Effect.flatMap(AppConfig, (config) => makeLocalStorage(config.storage.dir)))
