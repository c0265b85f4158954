/**
 * A real S3-compatible server for the storage tests: s3rver on a free loopback port, its objects
 * in a temporary folder, with one empty bucket; stopped and removed when the scope closes.
 *
 * What s3rver does not check, and how the tests make up for it:
 * - It does not verify SigV4 signatures (it only looks up the access key, `S3RVER`, and checks a
 *   presigned URL's expiry). The flow test re-signs each presigned URL with the SDK and expects
 *   the same URL (S3Flow.test.ts, `expectSignedFor`); a wrong access key is refused
 *   (InvalidAccessKeyId), which a test checks.
 * - It enforces neither the 5 MiB minimum of a multipart part nor a bucket policy: the tests use
 *   small parts to exercise several parts cheaply, and production keeps `defaultPartBytes`.
 * - It has no lifecycle rules: what a crash leaves under `.incoming/` is checked by listing.
 * - It implements neither ListMultipartUploads (501), ListParts nor AbortMultipartUpload (405):
 *   the tests check those calls as the client sends them, with a middleware.
 */
import { Effect, Option, Redacted } from "effect"
import { S3Client } from "@aws-sdk/client-s3"
import S3rver from "s3rver"
import type { S3Settings } from "../../src/Config.ts"
import { makeS3Client } from "../../src/Storage/S3Storage.ts"
import { tempDir } from "./TempDir.ts"

/** s3rver's built-in account: the only key it accepts. */
export const objectStoreCredentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" } as const

export interface ObjectStore {
  readonly endpoint: string
  readonly bucket: string
  /** Where s3rver keeps the objects (a test may look at what is left on disk). */
  readonly directory: string
  /** The settings STORAGE=s3 would read for this server. */
  readonly settings: S3Settings
  /** A client of its own, for what a test checks beside the service. */
  readonly client: S3Client
}

/** Starts s3rver on 127.0.0.1 with the bucket `bucket`; it stops when the scope closes. */
export const startObjectStore = (bucket = "registry-test") =>
  Effect.gen(function*() {
    const directory = yield* tempDir("registry-s3-")
    const server = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory, configureBuckets: [{ name: bucket }] })
    const address = yield* Effect.acquireRelease(
      Effect.promise(() => server.run()),
      () => Effect.promise(() => server.close())
    )
    const endpoint = `http://127.0.0.1:${address.port}`
    const settings: S3Settings = {
      endpoint: Option.some(endpoint),
      bucket,
      region: "us-east-1",
      forcePathStyle: true,
      credentials: Option.some({
        accessKeyId: objectStoreCredentials.accessKeyId,
        secretAccessKey: Redacted.make(objectStoreCredentials.secretAccessKey)
      }),
      publicBaseUrl: Option.none()
    }
    const client = yield* Effect.acquireRelease(Effect.sync(() => makeS3Client(settings)), (c) => Effect.sync(() => c.destroy()))
    return { endpoint, bucket, directory, settings, client } satisfies ObjectStore
  })
