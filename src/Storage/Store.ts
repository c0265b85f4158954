/**
 * The store the service keeps archives and media files in: the local disk (STORAGE=local, one
 * machine) or an S3-compatible bucket that every instance shares (STORAGE=s3).
 */
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../Config.ts"
import { makeLocalStorage } from "./Storage.ts"

export class Storage extends Context.Service<Storage>()("Storage", {
  make: Effect.gen(function*() {
    const { storage } = yield* AppConfig
    const backend = storage.backend
    if (backend._tag === "s3") {
      // the SDK is loaded only where a bucket is used: importing it costs every start 0.3 s
      const { makeS3Client, makeS3Storage } = yield* Effect.promise(() => import("./S3Storage.ts"))
      const client = yield* Effect.acquireRelease(
        Effect.sync(() => makeS3Client(backend)),
        (client) => Effect.sync(() => client.destroy())
      )
      return yield* makeS3Storage(client, backend.bucket, backend.publicBaseUrl)
    }
    // the local disk under STORAGE_DIR (by default `<DATA_DIR>/archives`)
    return yield* makeLocalStorage(storage.dir, storage.faultInjection)
  })
}) {
  static readonly layer = Layer.effect(Storage, Storage.make)
}
