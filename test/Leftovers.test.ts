/**
 * Crash leftovers (System/Leftovers.ts): partial uploads in `STORAGE_DIR/.incoming` and spooled
 * videos in `DATA_DIR/tmp` untouched for TEMP_FILE_MAX_AGE_SECONDS are removed at start-up and by
 * the periodic sweep; a live upload's file, however old the upload, is kept. Under STORAGE=s3 the
 * bucket's `.incoming/` objects and multipart uploads of that age go too.
 */
import { ListObjectsV2Command, PutObjectCommand, S3Client } from "@aws-sdk/client-s3"
import { expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Option, Redacted, References } from "effect"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { abortStaleUploads, incomingPrefix, makeS3Client } from "../src/Storage/S3Storage.ts"
import { mediaUploadTarget, piecesOf, putHead } from "./support/MediaUpload.ts"
import { slowRequestPromise } from "./support/RawHttp.ts"
import { type ObjectStore, startObjectStore } from "./support/ObjectStore.ts"
import { type ConfigOverrides, serviceOnFreshDatabase } from "./support/Service.ts"

const anHourAgo = () => new Date(Date.now() - 60 * 60 * 1000)

/** Writes `file` (and its folders) with its times set to `when`. */
const place = (file: string, when: Date) =>
  Effect.promise(async () => {
    await fs.mkdir(path.dirname(file), { recursive: true })
    await fs.writeFile(file, randomBytes(1024))
    await fs.utimes(file, when, when)
  })

const exists = (file: string) => Effect.promise(() => fs.access(file).then(() => true, () => false))

/** A data folder of the test's own, so that files can be placed before the service starts. */
const dataFolder = Effect.acquireRelease(
  Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "registry-leftovers-"))),
  (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
)

const inFolder = (dataDir: string, leftovers: { maxAgeMillis: number; sweepIntervalMillis: number }): ConfigOverrides => (c) => ({
  ...c,
  dataDir,
  leftovers,
  storage: {
    ...c.storage,
    dir: path.join(dataDir, "archives"),
    signingSecret: Option.some(Redacted.make("leftovers-signing-secret-of-this-test"))
  }
})

it.live("leftovers of a crash are gone once the service has started; a recent file stays", () =>
  Effect.gen(function*() {
    const dataDir = yield* dataFolder
    const partialArchive = path.join(dataDir, "archives", ".incoming", "0b3c.zip.1f2e3d4c5b6a7980")
    const spoolFolder = path.join(dataDir, "tmp", "video-a1b2c3")
    const spooledVideo = path.join(spoolFolder, "9f8e7d")
    // another instance's upload in progress, in a shared store
    const recentUpload = path.join(dataDir, "archives", ".incoming", "media-77.0011223344556677")
    yield* place(partialArchive, anHourAgo())
    yield* place(spooledVideo, anHourAgo())
    yield* Effect.promise(() => fs.utimes(spoolFolder, anHourAgo(), anHourAgo()))
    yield* place(recentUpload, new Date())

    yield* serviceOnFreshDatabase(inFolder(dataDir, { maxAgeMillis: 10 * 60 * 1000, sweepIntervalMillis: 10 * 60 * 1000 }))

    expect(yield* exists(partialArchive)).toBe(false)
    expect(yield* exists(spoolFolder)).toBe(false)
    expect(yield* exists(recentUpload)).toBe(true)
    // the folders themselves stay, ready for the next upload
    expect(yield* exists(path.join(dataDir, "tmp"))).toBe(true)
  }).pipe(Effect.scoped), 30_000)

it.live("the periodic sweep removes an old leftover and keeps a live upload's file, older than the limit", () =>
  Effect.gen(function*() {
    const dataDir = yield* dataFolder
    const maxAgeMillis = 1_500
    const service = yield* serviceOnFreshDatabase(inFolder(dataDir, { maxAgeMillis, sweepIntervalMillis: 100 }))
    const incoming = path.join(dataDir, "archives", ".incoming")

    const target = yield* mediaUploadTarget(service, "uploader", "slow.bin")
    // 12 pieces, 250 ms apart: the upload lasts twice the age limit, its file written all along
    const bytes = randomBytes(12 * 256)
    const upload = yield* Effect.forkChild(
      Effect.promise(() => slowRequestPromise(service.baseUrl, putHead(target, bytes.length), piecesOf(bytes, 12), 250))
    )

    // a crash's leftover appears meanwhile (as a second instance's would in a shared store)
    const leftover = path.join(incoming, "0c4d.zip.8899aabbccddeeff")
    yield* place(leftover, anHourAgo())
    yield* Effect.sleep(maxAgeMillis + 500)
    expect(yield* exists(leftover)).toBe(false)
    // the live upload's file is still there, older than the limit but written to
    const live = yield* Effect.promise(() => fs.readdir(incoming))
    expect(live.filter((name) => name.startsWith("media-"))).toHaveLength(1)

    const answer = yield* Fiber.join(upload)
    expect(answer.status).toBe(204)
    const stored = yield* Effect.promise(async () => Buffer.from(await (await fetch(service.baseUrl + target.pathname)).arrayBuffer()))
    expect(stored.equals(bytes)).toBe(true)
  }).pipe(Effect.scoped), 30_000)

/** Writes `key` to the bucket, last modified at `when` (s3rver answers its file's mtime as LastModified). */
const putObject = (store: ObjectStore, key: string, when: Date) =>
  Effect.promise(async () => {
    await store.client.send(new PutObjectCommand({ Bucket: store.bucket, Key: key, Body: randomBytes(1024) }))
    const parts = key.split("/")
    const file = path.join(store.directory, store.bucket, ...parts.slice(0, -1), `${parts.at(-1)}._S3rver_object`)
    await fs.utimes(file, when, when)
  })

const bucketKeys = (store: ObjectStore) =>
  Effect.promise(async () =>
    ((await store.client.send(new ListObjectsV2Command({ Bucket: store.bucket }))).Contents ?? []).map((o) => o.Key!).sort()
  )

it.live("under STORAGE=s3, stale temporary objects of the bucket are gone once the service has started; the rest stays", () =>
  Effect.gen(function*() {
    const store = yield* startObjectStore()
    const dataDir = yield* dataFolder
    const crashed = `${incomingPrefix}0b3c.zip.1f2e3d4c5b6a7980`
    const recent = `${incomingPrefix}media-77.0011223344556677`
    // an archive is old too, but it is no leftover
    const archive = "0b3c.zip"
    yield* putObject(store, crashed, anHourAgo())
    yield* putObject(store, recent, new Date())
    yield* putObject(store, archive, anHourAgo())
    const spooledVideo = path.join(dataDir, "tmp", "video-a1b2c3", "9f8e7d")
    yield* place(spooledVideo, anHourAgo())
    yield* Effect.promise(() => fs.utimes(path.dirname(spooledVideo), anHourAgo(), anHourAgo()))

    const onBucket: ConfigOverrides = (c) => {
      const local = inFolder(dataDir, { maxAgeMillis: 10 * 60 * 1000, sweepIntervalMillis: 10 * 60 * 1000 })(c)
      return { ...local, storage: { ...local.storage, backend: { _tag: "s3", ...store.settings } } }
    }
    yield* serviceOnFreshDatabase(onBucket)

    expect(yield* bucketKeys(store)).toEqual([recent, archive].sort())
    // the spools, still on this disk, are swept there
    expect(yield* exists(path.dirname(spooledVideo))).toBe(false)
  }).pipe(Effect.scoped), 30_000)

/**
 * A client of `store` whose ListMultipartUploads answers `uploads` in turn, whose ListParts
 * answers an upload's pages of `parts` in turn, and whose AbortMultipartUpload is recorded and
 * answered: s3rver implements none of them (it answers 501 or 405), so the calls are checked as
 * the client sends them.
 */
const withUploads = (
  store: ObjectStore,
  uploads: ReadonlyArray<Record<string, unknown>>,
  parts: Readonly<Record<string, ReadonlyArray<Record<string, unknown>>>>
) => {
  const client: S3Client = makeS3Client(store.settings)
  const sent: Array<{ readonly command: string; readonly input: Record<string, unknown> }> = []
  const answer = (output: Record<string, unknown> | undefined) => ({ output: { $metadata: {}, ...output }, response: {} })
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Record<string, unknown>
      const command = context.commandName ?? ""
      const asked = sent.filter((c) => c.command === command)
      sent.push({ command, input })
      if (command === "ListMultipartUploadsCommand") return answer(uploads[asked.length])
      if (command === "ListPartsCommand") return answer(parts[input.UploadId as string]?.[asked.filter((c) => c.input.UploadId === input.UploadId).length])
      if (command === "AbortMultipartUploadCommand") return answer({})
      return next(args)
    },
    { step: "initialize", name: "fakeMultipartUploads" }
  )
  const inputs = (command: string) => sent.filter((c) => c.command === command).map((c) => c.input)
  return { client, inputs }
}

it.live("the bucket sweep aborts the multipart uploads under .incoming/ untouched since the limit, page by page", () =>
  Effect.gen(function*() {
    const store = yield* startObjectStore()
    const before = new Date("2026-01-01T12:00:00Z")
    const earlier = new Date("2026-01-01T10:00:00Z")
    const later = new Date("2026-01-01T12:30:00Z")
    const upload = (name: string, UploadId: string, Initiated: Date) => ({ Key: `${incomingPrefix}${name}`, UploadId, Initiated })
    const { client, inputs } = withUploads(
      store,
      [
        // a crashed upload without parts; a recent one
        { IsTruncated: true, NextKeyMarker: `${incomingPrefix}b`, NextUploadIdMarker: "u2", Uploads: [upload("a", "u1", earlier), upload("b", "u2", later)] },
        // a slow one still receiving parts; a crashed one with two pages of old parts
        { IsTruncated: false, Uploads: [upload("c", "u3", earlier), upload("d", "u4", earlier)] }
      ],
      {
        u3: [{ IsTruncated: false, Parts: [{ PartNumber: 1, LastModified: earlier }, { PartNumber: 2, LastModified: later }] }],
        u4: [
          { IsTruncated: true, NextPartNumberMarker: "1", Parts: [{ PartNumber: 1, LastModified: earlier }] },
          { IsTruncated: false, Parts: [{ PartNumber: 2, LastModified: earlier }] }
        ]
      }
    )
    yield* Effect.addFinalizer(() => Effect.sync(() => client.destroy()))

    expect(yield* abortStaleUploads(client, store.bucket, before)).toBe(2)
    expect(inputs("ListMultipartUploadsCommand")).toEqual([
      { Bucket: store.bucket, Prefix: incomingPrefix },
      { Bucket: store.bucket, Prefix: incomingPrefix, KeyMarker: `${incomingPrefix}b`, UploadIdMarker: "u2" }
    ])
    // the recent upload's parts are not even asked for
    expect(inputs("ListPartsCommand").map((i) => [i.UploadId, i.PartNumberMarker])).toEqual([
      ["u1", undefined],
      ["u3", undefined],
      ["u4", undefined],
      ["u4", "1"]
    ])
    expect(inputs("AbortMultipartUploadCommand")).toEqual([
      { Bucket: store.bucket, Key: `${incomingPrefix}a`, UploadId: "u1" },
      { Bucket: store.bucket, Key: `${incomingPrefix}d`, UploadId: "u4" }
    ])
  }))

it.live("a store that cannot list multipart uploads (s3rver answers 501) has none to abort; any other failure is the store's", () =>
  Effect.gen(function*() {
    const store = yield* startObjectStore()
    expect(yield* abortStaleUploads(store.client, store.bucket, new Date())).toBe(0)
    // its "archive store failed" line is expected here
    const missing = yield* Effect.exit(abortStaleUploads(store.client, "no-such-bucket", new Date()).pipe(Effect.provideService(References.MinimumLogLevel, "None")))
    expect(Exit.isFailure(missing)).toBe(true)
  }))
