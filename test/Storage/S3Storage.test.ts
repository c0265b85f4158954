/**
 * The S3 archive store against a real S3-compatible server (s3rver on loopback, see
 * test/support/ObjectStore.ts): a streamed multipart upload under a temporary key, read by
 * ranges while its record runs, placed under its key only by the record's `place`; no object and
 * no multipart upload left by a refused, broken or unrecorded upload; reading whole and by
 * ranges; which keys hold nothing; and the STORAGE settings, by property.
 */
import { ListObjectsV2Command, PutObjectCommand, S3Client } from "@aws-sdk/client-s3"
import { expect, it } from "@effect/vitest"
import { Cause, ConfigProvider, Effect, Exit, Option, Result, Stream } from "effect"
import * as fc from "fast-check"
import { createHash } from "node:crypto"
import * as fs from "node:fs/promises"
import type { Readable } from "node:stream"
import { appConfig } from "../../src/Config.ts"
import { checkArchive } from "../../src/Publishing/Checks.ts"
import { incomingPrefix, makeS3Client, makeS3Storage, partsInFlight } from "../../src/Storage/S3Storage.ts"
import type { StorageFailed, StoredContent, Written } from "../../src/Storage/Storage.ts"
import { type ObjectStore, startObjectStore } from "../support/ObjectStore.ts"
import { rawZip, zipOf } from "../support/Zip.ts"
import { forAll, forAllSync } from "../support/Property.ts"

/** `n` chunks of `size` bytes, one per pull, as a socket's reads come. */
const chunks = (n: number, size: number) =>
  Stream.fromIterable(Array.from({ length: n }, (_, i) => new Uint8Array(size).fill(i))).pipe(Stream.rechunk(1))

const readAll = <E>(stream: Stream.Stream<Uint8Array, E>) => Effect.map(Stream.runCollect(stream), (c) => Buffer.concat([...c]))

/**
 * `exit` as `Exit.fail` and `Exit.die` build it: Effect 4 annotates a failure's reasons with the
 * spans it passed through (stack traces), which `toEqual` would otherwise compare too.
 */
const unannotated = <A, E>(exit: Exit.Exit<A, E>): Exit.Exit<A, E> =>
  Exit.isSuccess(exit) ? exit : Exit.failCause(Cause.fromReasons(exit.cause.reasons.map((reason): Cause.Reason<E> =>
    Cause.isFailReason(reason)
      ? Cause.makeFailReason(reason.error)
      : Cause.isDieReason(reason)
      ? Cause.makeDieReason(reason.defect)
      : Cause.makeInterruptReason(reason.fiberId)
  )))

const nodeBytes = (readable: Readable) =>
  Effect.promise(async () => {
    const parts: Array<Buffer> = []
    for await (const part of readable) parts.push(part as Buffer)
    return Buffer.concat(parts)
  })

/** Every key in the bucket, temporary ones included. */
const keys = (store: ObjectStore) =>
  Effect.promise(async () => {
    const page = await store.client.send(new ListObjectsV2Command({ Bucket: store.bucket }))
    return (page.Contents ?? []).map((o) => o.Key!).sort()
  })

/** Parts s3rver keeps on disk for multipart uploads not yet completed. */
const partsOnDisk = (store: ObjectStore) =>
  Effect.promise(async () => (await fs.readdir(store.directory, { recursive: true })).filter((f) => /_uploads\/./.test(f)))

/**
 * The commands `client` sends, with their answers. s3rver implements no AbortMultipartUpload (it
 * answers 405 and keeps the parts): the tests check that the abort is sent, for the right upload.
 */
const recordCommands = (client: S3Client) => {
  const sent: Array<{ readonly command: string; readonly input: Record<string, unknown>; readonly output?: Record<string, unknown> }> = []
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const entry = { command: context.commandName ?? "", input: args.input as Record<string, unknown> }
      try {
        const answer = await next(args)
        sent.push({ ...entry, output: answer.output as unknown as Record<string, unknown> })
        return answer
      } catch (e) {
        sent.push(entry)
        throw e
      }
    },
    { step: "initialize", name: "recordCommands" }
  )
  return sent
}

/** Every multipart upload begun is completed, or aborted. */
const everyUploadFinished = (sent: ReturnType<typeof recordCommands>) => {
  const begun = sent.filter((c) => c.command === "CreateMultipartUploadCommand").map((c) => c.output?.UploadId)
  const finished = sent
    .filter((c) => c.command === "CompleteMultipartUploadCommand" || c.command === "AbortMultipartUploadCommand")
    .map((c) => c.input.UploadId)
  expect(begun.length).toBeGreaterThan(0)
  expect([...finished].sort()).toEqual([...begun].sort())
}

/** Small parts: several of them for a few kilobytes (s3rver has no 5 MiB minimum). */
const partBytes = 4096

const placeOnly = { maxBytes: 100_000, record: (_: StoredContent, __: Written, place: Effect.Effect<void, StorageFailed>) => place }

it.live("put streams in parts, the record reads the upload by ranges, and only its place makes it the key's", () =>
  Effect.gen(function*() {
    const store = yield* startObjectStore()
    const storage = yield* makeS3Storage(store.client, store.bucket, Option.none(), partBytes)
    const body = chunks(10, 1000)
    const expected = yield* readAll(body)
    const stored = yield* storage.put("a.zip", body, {
      maxBytes: 10_000,
      record: (content, { bytes, sha256 }, place) =>
        Effect.gen(function*() {
          expect(typeof content).toBe("object")
          if (typeof content === "string") return "not ranged"
          expect(content.bytes).toBe(bytes)
          // hashed as it streamed into its parts
          expect(sha256).toEqual(createHash("sha256").update(expected).digest())
          expect(yield* nodeBytes(content.range(0, bytes))).toEqual(expected)
          expect(yield* nodeBytes(content.range(2500, 4600))).toEqual(expected.subarray(2500, 4600))
          expect(yield* nodeBytes(content.range(7, 7))).toEqual(Buffer.alloc(0))
          // not under its key while it is checked
          expect(Option.isNone(yield* storage.open("a.zip"))).toBe(true)
          yield* place
          expect(Option.isSome(yield* storage.open("a.zip"))).toBe(true)
          return "checked"
        })
    })
    expect(stored).toEqual({ bytes: 10_000, recorded: "checked" })
    // the temporary object is gone, and so is every part
    expect(yield* keys(store)).toEqual(["a.zip"])
    expect(yield* partsOnDisk(store)).toEqual([])

    const opened = Option.getOrThrow(yield* storage.open("a.zip"))
    expect(opened.bytes).toBe(10_000)
    expect(Date.now() - opened.modified.getTime()).toBeLessThan(60_000)
    expect(yield* readAll(opened.stream)).toEqual(expected)
    expect(yield* readAll(opened.slice(999, 1002))).toEqual(expected.subarray(999, 2001))
    expect(yield* readAll(opened.slice(10, 0))).toEqual(Buffer.alloc(0))
    expect(Option.isNone(yield* storage.open("b.zip"))).toBe(true)
    yield* storage.remove("a.zip")
    yield* storage.remove("a.zip")
    expect(yield* keys(store)).toEqual([])
  }))

it.live("a refused, broken or unrecorded upload leaves no object and no multipart upload, and the key keeps its content", () =>
  Effect.gen(function*() {
    const store = yield* startObjectStore()
    const sent = recordCommands(store.client)
    const storage = yield* makeS3Storage(store.client, store.bucket, Option.none(), partBytes)
    yield* storage.put("b.zip", chunks(1, 100), placeOnly)
    const unchanged = Effect.gen(function*() {
      expect(yield* keys(store)).toEqual(["b.zip"])
      everyUploadFinished(sent)
      expect(Option.getOrThrow(yield* storage.open("b.zip")).bytes).toBe(100)
    })

    // past the limit after two parts were sent
    const tooLarge = yield* Effect.exit(storage.put("b.zip", chunks(11, 10_000), placeOnly))
    expect(sent.filter((c) => c.command === "UploadPartCommand").length).toBeGreaterThan(2)
    expect(unannotated(tooLarge)).toEqual(Exit.fail(expect.objectContaining({ _tag: "BodyTooLarge" })))
    yield* unchanged
    const broken = yield* Effect.exit(storage.put("b.zip", Stream.concat(chunks(3, 3000), Stream.fail(new Error("reset"))), placeOnly))
    expect(unannotated(broken)).toEqual(Exit.fail(expect.objectContaining({ _tag: "BodyBroken" })))
    yield* unchanged
    const refused = yield* Effect.exit(storage.put("b.zip", chunks(3, 3000), { maxBytes: 100_000, record: () => Effect.fail("bad" as const) }))
    expect(unannotated(refused)).toEqual(Exit.fail("bad"))
    yield* unchanged
    // a record that commits without placing drops the content
    yield* storage.put("b.zip", chunks(3, 3000), { maxBytes: 100_000, record: () => Effect.void })
    yield* unchanged
    // an empty body is one empty part
    const empty = yield* storage.put("c.zip", Stream.empty, placeOnly)
    expect(empty.bytes).toBe(0)
    expect(Option.getOrThrow(yield* storage.open("c.zip")).bytes).toBe(0)
  }))

interface PartRules {
  /** This UploadPart fails at once. */
  readonly failPart?: number
  /** This UploadPart stays open until its request is aborted (10 s at most). */
  readonly holdPart?: number
  /** Every UploadPart waits this long before it is sent. */
  readonly slowPartsMillis?: number
}

/**
 * Puts itself between `client` and the network, applying `rules` to UploadPart requests, and
 * notes how many UploadPart requests were still open whenever an AbortMultipartUpload started
 * (none may be: a part landing after the abort would outlive the upload), how many held parts
 * were aborted, and the most UploadPart requests open at once.
 */
const watchParts = (client: S3Client, rules: PartRules) => {
  type Request = { readonly method: string; readonly query?: Record<string, unknown> }
  const handler = client.config.requestHandler as unknown as {
    handle: (request: Request, options?: { abortSignal?: AbortSignal }) => Promise<unknown>
  }
  const handle = handler.handle.bind(handler)
  const seen = { openPartsAtAbort: [] as Array<number>, heldAndAborted: 0, mostOpenParts: 0 }
  let open = 0
  handler.handle = async (request, options) => {
    if (request.method === "DELETE" && request.query?.uploadId !== undefined) seen.openPartsAtAbort.push(open)
    const part = Number(request.query?.partNumber)
    if (Number.isNaN(part)) return handle(request, options)
    seen.mostOpenParts = Math.max(seen.mostOpenParts, ++open)
    try {
      if (rules.slowPartsMillis !== undefined) await new Promise((resolve) => setTimeout(resolve, rules.slowPartsMillis))
      if (part === rules.failPart) throw new Error(`part ${part} refused`)
      if (part === rules.holdPart) {
        const aborted = options?.abortSignal?.aborted === true || await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), 10_000)
          options?.abortSignal?.addEventListener("abort", () => {
            clearTimeout(timer)
            resolve(true)
          }, { once: true })
        })
        if (aborted) {
          seen.heldAndAborted++
          throw new Error(`part ${part} aborted`)
        }
      }
      return await handle(request, options)
    } finally {
      open--
    }
  }
  return seen
}

/** A store on a client of its own, whose commands are recorded and whose parts follow `rules`. */
const watchedStorage = (store: ObjectStore, rules: PartRules) =>
  Effect.gen(function*() {
    const client = yield* Effect.acquireRelease(Effect.sync(() => makeS3Client(store.settings)), (c) => Effect.sync(() => c.destroy()))
    const sent = recordCommands(client)
    const seen = watchParts(client, rules)
    return { storage: yield* makeS3Storage(client, store.bucket, Option.none(), partBytes), sent, seen }
  })

/** `n` chunks of `size` bytes, each made only when read; `read()` tells how many were. */
const countedChunks = (n: number, size: number) => {
  let read = 0
  const stream = Stream.fromAsyncIterable(
    (async function*() {
      for (let i = 0; i < n; i++) {
        read++
        yield new Uint8Array(size).fill(i)
      }
    })(),
    (e) => e
  )
  return { stream, read: () => read }
}

it.live("an upload keeps partsInFlight parts in flight while its body streams, and never more", () =>
  Effect.gen(function*() {
    const store = yield* startObjectStore()
    const slow = yield* watchedStorage(store, { slowPartsMillis: 100 })
    const body = chunks(30, 1000)
    const stored = yield* slow.storage.put("c.zip", body, placeOnly)
    expect(stored.bytes).toBe(30_000)
    expect(slow.seen.mostOpenParts).toBe(partsInFlight)
    const opened = Option.getOrThrow(yield* slow.storage.open("c.zip"))
    expect(yield* readAll(opened.stream)).toEqual(yield* readAll(body))
  }))

it.live("a part failing while the next is filled, or the body failing while a part is sent: the send ends first, nothing is left", () =>
  Effect.gen(function*() {
    const store = yield* startObjectStore()
    const original = yield* makeS3Storage(store.client, store.bucket, Option.none(), partBytes)
    yield* original.put("b.zip", chunks(1, 100), placeOnly)

    // part 2 fails while part 3 is filled: the upload stops at the next part, long before the body's end
    const failing = yield* watchedStorage(store, { failPart: 2 })
    const body = countedChunks(30, 3000)
    const failed = yield* Effect.exit(failing.storage.put("b.zip", body.stream, placeOnly))
    expect(unannotated(failed)).toEqual(Exit.fail(expect.objectContaining({ _tag: "StorageFailed" })))
    expect(body.read()).toBeLessThan(10)
    expect(failing.seen.openPartsAtAbort).toEqual([0])
    everyUploadFinished(failing.sent)
    expect(yield* keys(store)).toEqual(["b.zip"])

    // the body breaks while part 2 is being sent: that send is aborted before the upload is
    const holding = yield* watchedStorage(store, { holdPart: 2 })
    const breaking = Stream.concat(chunks(3, 3000), Stream.fromEffect(Effect.andThen(Effect.sleep("300 millis"), Effect.fail(new Error("reset")))))
    const broken = yield* Effect.exit(holding.storage.put("b.zip", breaking, placeOnly))
    expect(unannotated(broken)).toEqual(Exit.fail(expect.objectContaining({ _tag: "BodyBroken" })))
    expect(holding.seen.heldAndAborted).toBe(1)
    expect(holding.seen.openPartsAtAbort).toEqual([0])
    everyUploadFinished(holding.sent)
    expect(yield* keys(store)).toEqual(["b.zip"])
    expect(Option.getOrThrow(yield* original.open("b.zip")).bytes).toBe(100)
  }))

it.live("the zip checks read an archive in the bucket by ranges: a good one passes, a bad one fails with its reason", () =>
  Effect.gen(function*() {
    const store = yield* startObjectStore()
    const storage = yield* makeS3Storage(store.client, store.bucket, Option.none(), partBytes)
    const sent = recordCommands(store.client)
    const limits = { maxUncompressedBytes: 1_000_000, maxEntries: 1000 }
    const verdictOf = (zip: Buffer) =>
      Effect.map(
        storage.put("z.zip", Stream.make(new Uint8Array(zip)), { maxBytes: 1_000_000, record: (content) => checkArchive(content, limits) }),
        (stored) => stored.recorded
      )
    // large enough for the central directory to span parts
    const files = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`pkg/file-${i}.py`, `print(${i})\n`.repeat(20)]))
    expect(yield* verdictOf(yield* Effect.promise(() => zipOf(files)))).toEqual(
      expect.objectContaining({ _tag: "Passed", files: 200 })
    )
    // the directory's 200 entries are read from blocks read ahead, not by a GET each
    expect(sent.filter((c) => c.command === "GetObjectCommand").length).toBeLessThanOrEqual(2)
    expect(yield* verdictOf(rawZip([{ name: "../evil", content: "x" }]))).toEqual(
      expect.objectContaining({ _tag: "Failed", failures: [{ check: "entry_names", message: "entry '../evil' has a '..' segment" }] })
    )
    expect(yield* verdictOf(Buffer.from("not a zip at all"))).toEqual(expect.objectContaining({ _tag: "Failed" }))
    expect(yield* keys(store)).toEqual([])
  }))

it.effect(
  "missing answers exactly the keys that hold nothing, temporary objects aside",
  () =>
    forAll(
      [fc.uniqueArray(fc.stringMatching(/^[a-z0-9]{1,12}\.zip$/), { maxLength: 8 }), fc.array(fc.boolean(), { minLength: 8, maxLength: 8 })],
      ([names, stored]) =>
        Effect.gen(function*() {
          const store = yield* startObjectStore()
          const storage = yield* makeS3Storage(store.client, store.bucket, Option.none(), partBytes)
          for (const [i, key] of names.entries()) if (stored[i]) yield* storage.put(key, chunks(1, 1), placeOnly)
          // an upload a crash left behind is no key's content
          yield* Effect.promise(() =>
            store.client.send(new PutObjectCommand({ Bucket: store.bucket, Key: `${incomingPrefix}${names[0] ?? "x.zip"}.0`, Body: "x" })))
          expect(yield* storage.missing(names)).toEqual(names.filter((_, i) => !stored[i]))
        }),
      { numRuns: 5 }
    )
)

it.live("a client with an unknown access key is refused: s3rver checks the key, not the signature", () =>
  Effect.gen(function*() {
    const store = yield* startObjectStore()
    const stranger = new S3Client({
      endpoint: store.endpoint,
      region: "us-east-1",
      forcePathStyle: true,
      credentials: { accessKeyId: "NOBODY", secretAccessKey: "x" }
    })
    const storage = yield* makeS3Storage(stranger, store.bucket, Option.none(), partBytes)
    const exit = yield* Effect.exit(storage.put("a.zip", chunks(1, 10), placeOnly))
    stranger.destroy()
    expect(unannotated(exit)).toEqual(Exit.fail(expect.objectContaining({ _tag: "StorageFailed", cause: expect.objectContaining({ name: "InvalidAccessKeyId" }) })))
  }))

const read = (env: Record<string, string>) =>
  Effect.runSync(Effect.result(appConfig.parse(ConfigProvider.fromEnv({ env, preserveEmptyStrings: true }))))

it("STORAGE is local by default; s3 needs a bucket and takes its settings", () => {
  expect(Result.getOrThrow(read({})).storage.backend).toEqual({ _tag: "local" })
  const missing = read({ STORAGE: "s3" })
  expect(Result.isFailure(missing) && String(missing.failure)).toContain("S3_BUCKET")
  expect(Result.getOrThrow(read({ STORAGE: "s3", S3_BUCKET: "archives" })).storage.backend).toEqual({
    _tag: "s3",
    bucket: "archives",
    region: "us-east-1",
    endpoint: Option.none(),
    forcePathStyle: false,
    credentials: Option.none(),
    publicBaseUrl: Option.none()
  })
  expect(
    Result.getOrThrow(read({
      STORAGE: "s3",
      S3_BUCKET: "archives",
      S3_REGION: "eu-west-3",
      S3_ENDPOINT: "http://127.0.0.1:9000/",
      S3_FORCE_PATH_STYLE: "true",
      ARCHIVE_PUBLIC_BASE_URL: "https://cdn.example.org/archives/"
    })).storage.backend
  ).toEqual({
    _tag: "s3",
    bucket: "archives",
    region: "eu-west-3",
    endpoint: Option.some("http://127.0.0.1:9000"),
    forcePathStyle: true,
    credentials: Option.none(),
    publicBaseUrl: Option.some("https://cdn.example.org/archives")
  })
  expect(Result.getOrThrow(read({ STORAGE: "s3", S3_BUCKET: "a", AWS_REGION: "ap-south-1" })).storage.backend).toEqual(
    expect.objectContaining({ region: "ap-south-1" })
  )
})

it(
  "a STORAGE value other than local or s3, and an S3_ENDPOINT that is not an http(s) URL, are refused",
  () =>
    forAllSync(
      [fc.string({ maxLength: 12 }), fc.string({ maxLength: 30 })],
      ([kind, endpoint]) => {
        const backend = read({ STORAGE: kind })
        // s3 alone is refused too: it needs a bucket
        expect(Result.isSuccess(backend)).toBe(kind === "local")
        const url = read({ STORAGE: "s3", S3_BUCKET: "b", S3_ENDPOINT: endpoint })
        const valid = endpoint.trim() === "" ||
          (URL.canParse(endpoint.trim()) && /^https?:$/.test(new URL(endpoint.trim()).protocol))
        expect(Result.isSuccess(url)).toBe(valid)
      }
    )
)

