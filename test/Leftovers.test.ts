/**
 * Crash leftovers (System/Leftovers.ts): partial uploads in `STORAGE_DIR/.incoming` and spooled
 * videos in `DATA_DIR/tmp` untouched for TEMP_FILE_MAX_AGE_SECONDS are removed at start-up and by
 * the periodic sweep; a live upload's file, however old the upload, is kept.
 */
import { expect, it } from "@effect/vitest"
import { Effect, Fiber, Option, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { mediaUploadTarget, piecesOf, putHead } from "./support/MediaUpload.ts"
import { slowRequestPromise } from "./support/RawHttp.ts"
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
    const upload = yield* Effect.fork(
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
