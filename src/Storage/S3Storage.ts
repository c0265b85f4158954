/**
 * Archives and media files in an S3-compatible bucket (STORAGE=s3), shared by every instance.
 *
 * An upload streams into a multipart upload under a temporary key (`.incoming/<key>.<random>`),
 * one part filled while the one before it is sent. Once complete, its record reads it there by
 * ranged GETs (the zip checks) and runs `place`: a server-side copy to the final key, inside the
 * record's transaction, before its status commits. So, as on the local disk, a crash leaves
 * either no record, or a record whose content is under its key. Whatever happens to an upload,
 * its multipart upload is aborted or its temporary object deleted; what a crash leaves between
 * the two (a temporary object, an unfinished multipart upload) is swept (System/Leftovers.ts),
 * and a lifecycle rule on `.incoming/` can back the sweep up (docs/operating.md, "Object storage").
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand
} from "@aws-sdk/client-s3"
import { getSignedUrl } from "@aws-sdk/s3-request-presigner"
import { type Array as Arr, Effect, Fiber, Option, Redacted, Stream } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { PassThrough, Readable } from "node:stream"
import type { S3Settings } from "../Config.ts"
import { span, traced } from "../Tracing.ts"
import { BodyBroken, BodyTooLarge, failed, type Opened, type PutOptions, type RangedContent, safeKey, type Served, type StorageFailed, type StorageShape, type Stored, type Written } from "./Storage.ts"
import { collectYoungGarbage } from "./Garbage.ts"

/** Where uploads are written until placed; a lifecycle rule on this prefix expires a crash's leftovers. */
export const incomingPrefix = ".incoming/"

/** Every part but the last: S3 wants at least 5 MiB. */
export const defaultPartBytes = 8 * 1024 * 1024

/**
 * Parts an upload sends at once. Its memory is one part buffer more than this: the one filled from
 * the body while the others are sent.
 */
export const partsInFlight = 2

/**
 * How long a presigned download URL lives: long enough for a client that follows the redirect at
 * once and resumes a broken download, short enough that a handed-out URL is not a permanent link.
 */
export const downloadUrlTtlSeconds = 15 * 60

/** The client for `settings`: credentials from the SDK's default chain unless fixed. */
export const makeS3Client = (settings: S3Settings) =>
  new S3Client({
    region: settings.region,
    forcePathStyle: settings.forcePathStyle,
    ...Option.match(settings.endpoint, { onNone: () => ({}), onSome: (endpoint) => ({ endpoint }) }),
    ...Option.match(settings.credentials, {
      onNone: () => ({}),
      onSome: (c) => ({ credentials: { accessKeyId: c.accessKeyId, secretAccessKey: Redacted.value(c.secretAccessKey) } })
    }),
    // checksums only where S3 requires them: the parts are not re-read to hash them, and
    // S3-compatible stores do not all know the newer checksum headers
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED"
  })

const isNotFound = (e: unknown) =>
  e instanceof S3ServiceException && (e.name === "NotFound" || e.name === "NoSuchKey" || e.$metadata.httpStatusCode === 404)

/** A byte range of `key` as a Node stream (yauzl's reader wants a stream at once; the GET follows). */
const rangeStream = (client: S3Client, bucket: string, key: string, start: number, end: number): Readable => {
  const out = new PassThrough()
  if (end <= start) return out.end() as PassThrough
  client.send(new GetObjectCommand({ Bucket: bucket, Key: key, Range: `bytes=${start}-${end - 1}` }))
    .then((answer) => (answer.Body as Readable).on("error", (e) => out.destroy(e)).pipe(out))
    .catch((e: unknown) => out.destroy(e instanceof Error ? e : new Error(String(e))))
  return out
}

/** The most bytes a small ranged read of an upload fetches: what it asked and what follows. */
export const readAheadBytes = 1024 * 1024

/**
 * `key` (of `bytes` bytes) by ranges, for the zip checks: they walk the central directory in
 * reads of a few dozen bytes, which as one GET each took 2 s for 100 entries on loopback. A read
 * of at most `readAheadBytes` is served from the one block held, or fetches the block that starts
 * where it does; a larger read is a GET of its own.
 */
const readingAhead = (client: S3Client, bucket: string, key: string, bytes: number): RangedContent["range"] => {
  let block: { readonly start: number; readonly end: number; readonly data: Promise<Buffer> } | undefined
  return (start, end) => {
    if (end <= start || end - start > readAheadBytes) return rangeStream(client, bucket, key, start, end)
    if (block === undefined || start < block.start || end > block.end) {
      const fetched = { start, end: Math.min(bytes, start + readAheadBytes) }
      const data = rangeStream(client, bucket, key, fetched.start, fetched.end).toArray().then((parts: Array<Buffer>) => Buffer.concat(parts))
      // a failed block is fetched again by the next read
      data.catch(() => (block = block?.data === data ? undefined : block))
      block = { ...fetched, data }
    }
    const { start: from, data } = block
    const out = new PassThrough()
    data.then((held) => out.end(held.subarray(start - from, end - from)), (e: unknown) => out.destroy(e instanceof Error ? e : new Error(String(e))))
    return out
  }
}

/**
 * Archives in `bucket` through `client`; downloads go to `publicBaseUrl` when set (a CDN in front
 * of the bucket), else to presigned URLs. `partBytes` is the multipart part size (tests make it small).
 */
export const makeS3Storage = (
  client: S3Client,
  bucket: string,
  publicBaseUrl: Option.Option<string> = Option.none(),
  partBytes = defaultPartBytes
): Effect.Effect<StorageShape> =>
  Effect.gen(function*() {
    const send = <T>(what: string, run: (signal: AbortSignal) => Promise<T>) =>
      Effect.tryPromise({ try: run, catch: (cause) => cause }).pipe(
        Effect.catch(failed),
        Effect.withSpan(`S3.${what}`)
      )

    /**
     * One part's `UploadPart`. Interrupted, it aborts the request and ends only once the request
     * has (`send` would end at once): the multipart upload's abort that follows finds no part
     * still being sent.
     */
    const sendPart = (command: UploadPartCommand) =>
      Effect.callback<string | undefined, unknown>((resume) => {
        const controller = new AbortController()
        const sent = client.send(command, { abortSignal: controller.signal }).then(
          ({ ETag }) => resume(Effect.succeed(ETag)),
          (cause: unknown) => resume(Effect.fail(cause))
        )
        return Effect.promise(() => {
          controller.abort()
          return sent
        })
      }).pipe(
        Effect.catch(failed),
        Effect.withSpan("S3.uploadPart")
      )

    /**
     * Part buffers no upload is using, kept for the next one (as many as one upload uses): a new
     * set per upload would be memory only a full collection frees, 24 MiB each time.
     */
    const idleBuffers: Array<Buffer> = []

    /**
     * The parts of the multipart upload `UploadId`, cut from a body as it arrives: one part is
     * filled while up to `partsInFlight` before it are sent, so reading waits for a send only
     * when every buffer is full. Its `partsInFlight + 1` buffers serve the whole upload, and
     * then the next (`idleBuffers`); a buffer is filled again only after its own send has ended.
     */
    const partWriter = (tmp: string, UploadId: string | undefined) => {
      const etags: Array<string | undefined> = []
      const buffers: Array<Buffer | undefined> = Array.from({ length: partsInFlight + 1 })
      /** The send of each buffer's last part, until joined. */
      const sends: Array<Fiber.Fiber<void, StorageFailed> | undefined> = Array.from({ length: partsInFlight + 1 })
      let current = 0
      let filled = 0

      /** Waits for the send of buffer `i`'s last part, failing as it did. */
      const settle = (i: number) =>
        Effect.suspend(() => {
          const fiber = sends[i]
          sends[i] = undefined
          return fiber === undefined ? Effect.void : Fiber.join(fiber)
        })

      /**
       * Sends the filled part and moves to the next buffer: the one whose send is the oldest, so
       * waiting for that send to end keeps at most `partsInFlight` sends going.
       */
      const sendFilled = Effect.gen(function*() {
        collectYoungGarbage()
        const next = (current + 1) % buffers.length
        yield* settle(next)
        const PartNumber = etags.push(undefined)
        const Body = (buffers[current] ?? Buffer.alloc(0)).subarray(0, filled)
        // a daemon: the stream that runs this would interrupt a child when it ends; `stop` ends it on failure
        sends[current] = yield* Effect.forkDetach(
          Effect.map(
            sendPart(new UploadPartCommand({ Bucket: bucket, Key: tmp, UploadId, PartNumber, Body })),
            (ETag) => void (etags[PartNumber - 1] = ETag)
          )
        )
        current = next
        filled = 0
      })

      /**
       * Copies `chunks` into the part being filled, sending each part that fills up. Synchronous
       * but for the sends: a body arrives in thousands of chunks.
       */
      const write = (pending: Arr.NonEmptyReadonlyArray<Uint8Array>): Effect.Effect<void, StorageFailed> => {
        let i = 0
        let at = 0
        const copy = (): Effect.Effect<void, StorageFailed> => {
          for (; i < pending.length; i++, at = 0) {
            const chunk = pending[i]!
            while (at < chunk.byteLength) {
              const buffer = buffers[current] ??= idleBuffers.pop() ?? Buffer.allocUnsafeSlow(partBytes)
              const copied = Math.min(partBytes - filled, chunk.byteLength - at)
              buffer.set(chunk.subarray(at, at + copied), filled)
              filled += copied
              at += copied
              if (filled === partBytes) return Effect.andThen(sendFilled, Effect.suspend(copy))
            }
          }
          return Effect.void
        }
        return Effect.suspend(copy)
      }

      /**
       * Sends the last part (an empty one when the body was empty: an upload needs one), waits for
       * every part and leaves the buffers to the next upload. (A failed upload's buffers are not
       * kept: an aborted send may not be done with its buffer.)
       */
      const finish = Effect.gen(function*() {
        if (filled > 0 || etags.length === 0) yield* sendFilled
        for (let i = 0; i < sends.length; i++) yield* settle(i)
        for (const buffer of buffers) if (buffer !== undefined && idleBuffers.length < buffers.length) idleBuffers.push(buffer)
        return etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 }))
      })

      /** Ends the parts being sent, if any (their requests are aborted): the upload failed. */
      const stop = Effect.suspend(() => Effect.forEach(sends, (fiber) => (fiber === undefined ? Effect.void : Fiber.interrupt(fiber)), { discard: true }))

      return { write, finish, stop }
    }

    /** Streams `body` into a new multipart upload under `tmp`; answers its size and digest once complete. */
    const upload = (tmp: string, body: Stream.Stream<Uint8Array, unknown>, maxBytes: number) =>
      Effect.acquireUseRelease(
        send("createMultipartUpload", () => client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: tmp }))),
        ({ UploadId }) =>
          Effect.gen(function*() {
            const writer = partWriter(tmp, UploadId)
            let bytes = 0
            const hash = createHash("sha256")
            const parts = yield* body.pipe(
              Stream.mapError((cause) => new BodyBroken({ cause })),
              Stream.runForEachArray((chunks): Effect.Effect<void, BodyTooLarge | StorageFailed> => {
                for (const chunk of chunks) {
                  bytes += chunk.byteLength
                  hash.update(chunk)
                }
                return bytes > maxBytes ? new BodyTooLarge({ maxBytes }) : writer.write(chunks)
              }),
              Effect.andThen(writer.finish),
              // a part still being sent when the upload fails is ended before the release aborts the upload
              Effect.onError(() => writer.stop)
            )
            yield* send("completeMultipartUpload", () =>
              client.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: tmp, UploadId, MultipartUpload: { Parts: parts } })))
            return { bytes, sha256: hash.digest() } satisfies Written
          }),
        // after completion the upload is gone and the abort answers NoSuchUpload: ignored
        ({ UploadId }, exit) =>
          exit._tag === "Success"
            ? Effect.void
            : Effect.ignore(send("abortMultipartUpload", () => client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: tmp, UploadId }))))
      )

    const remove = (key: string) => send("deleteObject", () => client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key })))

    /** Makes the content under `tmp` the key's: a server-side copy (at most 5 GiB, far above the archive limit). */
    const placeAt = (tmp: string, key: string) =>
      send("copyObject", () => client.send(new CopyObjectCommand({ Bucket: bucket, Key: key, CopySource: `${bucket}/${tmp}` })))
        .pipe(Effect.asVoid)

    /**
     * Streams `body` into the bucket, refusing it as soon as it passes `maxBytes`, and lets its
     * record read it and place it (see `PutOptions.record`). Either the whole content replaces
     * what the key held, or nothing changes; the temporary object never outlives the call.
     */
    const put = <A, E, R>(key: string, body: Stream.Stream<Uint8Array, unknown>, options: PutOptions<A, E, R>) =>
      Effect.gen(function*() {
        const tmp = `${incomingPrefix}${safeKey(key)}.${randomBytes(8).toString("hex")}`
        const written = yield* upload(tmp, body, options.maxBytes)
        const { bytes } = written
        const content: RangedContent = { bytes, range: readingAhead(client, bucket, tmp, bytes) }
        const recorded = yield* options.record(content, written, placeAt(tmp, key)).pipe(
          Effect.ensuring(Effect.ignore(remove(tmp)))
        )
        return { bytes, recorded } satisfies Stored<A>
      }) as Effect.Effect<Stored<A>, BodyTooLarge | BodyBroken | StorageFailed | E, R>

    /** A readable web stream of `key` (whole, or `range`) as an Effect stream. */
    const read = (key: string, range?: string) =>
      Stream.unwrap(
        Effect.map(
          send("getObject", () => client.send(new GetObjectCommand({ Bucket: bucket, Key: key, Range: range }))),
          (answer) =>
            Stream.fromReadableStream({
              evaluate: () => answer.Body!.transformToWebStream(),
              onError: (cause) => cause
            }).pipe(Stream.catch((cause) => Stream.fromEffect(failed(cause))))
        )
      )

    /** The content under `key` with its size; `None` when the key holds nothing. */
    const open = (key: string) =>
      Effect.tryPromise({
        try: () => client.send(new HeadObjectCommand({ Bucket: bucket, Key: safeKey(key) })),
        catch: (cause) => cause
      }).pipe(
        Effect.map((head): Option.Option<Opened> =>
          Option.some({
            bytes: head.ContentLength ?? 0,
            modified: head.LastModified ?? new Date(0),
            stream: read(key),
            slice: (offset, length) => length <= 0 ? Stream.empty : read(key, `bytes=${offset}-${offset + length - 1}`)
          })
        ),
        Effect.catchIf(isNotFound, () => Effect.succeed(Option.none<Opened>())),
        Effect.catch(failed)
      )

    /** Which of `keys` hold nothing: the bucket's top level is listed once, page by page. */
    const missing = (keys: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const present = new Set<string>()
        let token: string | undefined
        do {
          const page = yield* send("listObjectsV2", () =>
            client.send(new ListObjectsV2Command({ Bucket: bucket, Delimiter: "/", ContinuationToken: token })))
          for (const object of page.Contents ?? []) if (object.Key !== undefined) present.add(object.Key)
          token = page.IsTruncated === true ? page.NextContinuationToken : undefined
        } while (token !== undefined)
        return keys.filter((key) => !present.has(safeKey(key)))
      })

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
        yield* remove(safeKey(key))
      }),
      /**
       * Where clients fetch `key` from the bucket (or, for public content, its CDN) directly,
       * served as `served` says. A presigned URL is signed for one method: a HEAD gets a URL of its own.
       */
      downloadUrl: traced("Storage.downloadUrl")(function*(key: string, method: "GET" | "HEAD", served: Served) {
        if (served.public && Option.isSome(publicBaseUrl)) return Option.some(`${publicBaseUrl.value}/${safeKey(key)}`)
        const target = { Bucket: bucket, Key: safeKey(key) }
        const command = method === "HEAD"
          ? new HeadObjectCommand(target)
          : new GetObjectCommand({
            ...target,
            ResponseContentDisposition: served.contentDisposition,
            ...(served.contentType === undefined ? {} : { ResponseContentType: served.contentType })
          })
        return Option.some(yield* send("presign", () => getSignedUrl(client, command, { expiresIn: downloadUrlTtlSeconds })))
      }),
      /** Removes the temporary objects and multipart uploads crashed uploads left before `before` (System/Leftovers.ts). */
      sweepStale: traced("Storage.sweepStale")(function*(before: Date) {
        return (yield* sweepIncomingObjects(client, bucket, before)) + (yield* abortStaleUploads(client, bucket, before))
      })
    }
  })

// --- crash leftovers (System/Leftovers.ts) ---------------------------------------------------------

/** One call to the bucket outside a store: its failure is the store's, logged once. */
const sweepCall = <T>(what: string, run: () => Promise<T>) =>
  Effect.tryPromise({ try: run, catch: (cause) => cause }).pipe(Effect.withSpan(`S3.${what}`))

/**
 * The store does not offer the call: s3rver and some S3-compatible stores answer HTTP 501 to
 * ListMultipartUploads. Such a store keeps no unfinished uploads to sweep.
 */
const isUnsupportedCall = (e: unknown) => e instanceof S3ServiceException && e.$metadata.httpStatusCode === 501

/**
 * Deletes the temporary objects under `.incoming/` last written before `before`: a crash between
 * the upload's completion and its `put`'s cleanup leaves one. A live upload's object lives for its
 * checks and copy only, seconds after its LastModified. Answers how many went.
 */
export const sweepIncomingObjects = (client: S3Client, bucket: string, before: Date) =>
  Effect.gen(function*() {
    let removed = 0
    let token: string | undefined
    do {
      const page = yield* sweepCall("listObjectsV2", () =>
        client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: incomingPrefix, ContinuationToken: token })))
      const stale = (page.Contents ?? []).filter((o) => o.Key !== undefined && o.LastModified !== undefined && o.LastModified < before)
      yield* Effect.forEach(stale, (o) => sweepCall("deleteObject", () => client.send(new DeleteObjectCommand({ Bucket: bucket, Key: o.Key }))), {
        concurrency: 8,
        discard: true
      })
      removed += stale.length
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined
    } while (token !== undefined)
    return removed
  }).pipe(Effect.catch(failed))

/** When an upload last received a part (`undefined`: none yet), its parts listed page by page. */
const lastPartAt = (client: S3Client, bucket: string, key: string, uploadId: string) =>
  Effect.gen(function*() {
    let latest: Date | undefined
    let marker: string | undefined
    do {
      const page = yield* sweepCall("listParts", () =>
        client.send(new ListPartsCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumberMarker: marker })))
      for (const part of page.Parts ?? []) if (part.LastModified !== undefined && (latest === undefined || part.LastModified > latest)) latest = part.LastModified
      marker = page.IsTruncated === true ? page.NextPartNumberMarker : undefined
    } while (marker !== undefined)
    return latest
  })

/**
 * Aborts the multipart uploads under `.incoming/` untouched since `before`: initiated before it,
 * with no part received since (as the local sweep goes by a file's last change, so that a slow
 * upload that keeps moving is kept, however long it lasts). A crashed upload's parts are kept,
 * and billed, until aborted. A store that cannot list the uploads is left to its own expiry (or
 * a lifecycle rule): nothing to abort. Answers how many went.
 */
export const abortStaleUploads = (client: S3Client, bucket: string, before: Date) =>
  Effect.gen(function*() {
    let aborted = 0
    let markers: { KeyMarker?: string; UploadIdMarker?: string } = {}
    for (;;) {
      const page = yield* sweepCall("listMultipartUploads", () =>
        client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: incomingPrefix, ...markers })))
      const old = (page.Uploads ?? []).filter((u) => u.Key !== undefined && u.UploadId !== undefined && u.Initiated !== undefined && u.Initiated < before)
      yield* Effect.forEach(old, (u) =>
        Effect.gen(function*() {
          const moved = yield* lastPartAt(client, bucket, u.Key!, u.UploadId!)
          if (moved !== undefined && moved >= before) return
          yield* sweepCall("abortMultipartUpload", () => client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: u.Key, UploadId: u.UploadId })))
          aborted += 1
        }), { concurrency: 8, discard: true })
      if (page.IsTruncated !== true) return aborted
      markers = {
        ...(page.NextKeyMarker === undefined ? {} : { KeyMarker: page.NextKeyMarker }),
        ...(page.NextUploadIdMarker === undefined ? {} : { UploadIdMarker: page.NextUploadIdMarker })
      }
    }
  }).pipe(
    Effect.catchIf(isUnsupportedCall, () => Effect.succeed(0)),
    Effect.catch(failed)
  )
