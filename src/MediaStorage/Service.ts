/**
 * Media storage for the host's API nodes: a signed-in caller (bearer or API key) gets a file's
 * URLs, PUTs its bytes to the signed one, and anyone holding the other reads them until the file
 * expires. Bytes live in the archives' store; a periodic sweep deletes expired files.
 */
import { Context, Data, Effect, Layer, Option, Schedule, Stream } from "effect"
import { AppConfig } from "../Config.ts"
import { CurrentUser } from "../Domain/Auth.ts"
import { StorageResource } from "../Domain/MediaFile.ts"
import { BadSignature, SignatureExpired, UrlSigner } from "../Storage/Signing.ts"
import { Storage } from "../Storage/Store.ts"
import type { StorageFailed, Written } from "../Storage/Storage.ts"
import { traced } from "../Tracing.ts"
import { recordUpload } from "../Observability/Metrics.ts"
import { type LiveFile, MediaFileMissing, MediaFileRepo, MediaQuotaExceeded } from "./Repo.ts"
import { headKeeper, sniffMediaType } from "./Sniff.ts"
import { Metering } from "../Customers/Metering.ts"
import { uploadOperation } from "../Domain/Customer.ts"

export class MediaUrlExpired extends Data.TaggedError("MediaUrlExpired")<{}> {
  override get message() {
    return "The upload URL has expired; ask POST /customers/storage for a new one"
  }
}

export class MediaTypeMismatch extends Data.TaggedError("MediaTypeMismatch")<{ readonly declared: string }> {
  override get message() {
    return `The Content-Type must be the one declared for the file (${this.declared}), or absent`
  }
}

export class MediaFileTooLarge extends Data.TaggedError("MediaFileTooLarge")<{ readonly maxBytes: number }> {
  override get message() {
    return `A file may hold at most ${this.maxBytes} bytes`
  }
}

export class MediaUploadBroken extends Data.TaggedError("MediaUploadBroken")<{}> {
  override get message() {
    return "The upload was interrupted before the file was complete"
  }
}

/** An upload as its request brings it. */
export interface MediaUpload {
  readonly token: string
  readonly expires: string | undefined
  readonly signature: string | undefined
  /** The media type of `Content-Type`, lowercase, without parameters; undefined without the header. */
  readonly contentType: string | undefined
  /** `Content-Length`, when the client declared one. */
  readonly declaredBytes: number | undefined
  readonly body: Stream.Stream<Uint8Array, unknown>
}

/** Where a file's bytes are kept in the store (beside archives, whose keys are `<uuid>.zip`). */
const storageKey = (fileId: string) => `media-${fileId}`

/**
 * Types a browser shows without running anything: they are served inline. Every other type
 * (HTML, SVG, XML, scripts, ...) is an attachment, so that nobody's upload runs on this origin.
 */
const inlineType = /^(image\/(png|jpeg|gif|webp|avif|bmp)|audio\/[a-z0-9.+-]+|video\/[a-z0-9.+-]+)$/

/** `inline` or `attachment`, with the name in ASCII and in full (RFC 6266). */
const contentDisposition = (contentType: string, fileName: string) => {
  const ascii = fileName.replace(/[^A-Za-z0-9._ -]/g, "_")
  const kind = inlineType.test(contentType) ? "inline" : "attachment"
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(fileName)}`
}

/** What a media upload URL is signed for: distinct from every archive URL's scope. */
const uploadScope = (token: string) => `PUT media\n${token}`

const filePath = (file: LiveFile) => `/media/${file.token}/${encodeURIComponent(file.file_name)}`

const sha256Hex = /^[0-9a-f]{64}$/

/** What a creation without a content type declares: the type a file's bytes may then replace (Sniff.ts). */
const undeclaredType = "application/octet-stream"

/** The type a file is served as: the one its bytes told when none was declared, else the declared one. */
const servedType = (file: LiveFile) => file.sniffed_type ?? file.content_type

/** Expired files deleted per statement by the sweep. */
const sweepBatch = 500

export class MediaStorage extends Context.Service<MediaStorage>()("MediaStorage", {
  make: Effect.gen(function*() {
    const files = yield* MediaFileRepo
    const storage = yield* Storage
    const { signed } = yield* UrlSigner
    const config = yield* AppConfig
    const metering = yield* Metering
    const { maxFileBytes, maxUserBytes, fileTtlSeconds, sweepIntervalMillis } = config.media

    const resource = (file: LiveFile, existing: boolean) =>
      new StorageResource({
        ...(existing ? {} : { upload_url: signed.url(filePath(file), uploadScope(file.token), Math.floor(file.expires_at.getTime() / 1000)) }),
        download_url: config.publicBaseUrl + filePath(file),
        existing_file: existing,
        expires_at: file.expires_at
      })

    /** Deletes expired files, bytes first: a row without bytes is harmless, bytes without a row would be lost. */
    const sweep = traced("MediaStorage.sweep")(function*() {
      let swept = 0
      while (true) {
        const ids = yield* files.expired(sweepBatch)
        yield* Effect.forEach(ids, (id) => storage.remove(storageKey(id)), { discard: true, concurrency: 8 })
        yield* files.delete(ids)
        swept += ids.length
        if (ids.length < sweepBatch) return swept
      }
    })

    // the sweep lives as long as the service; a failed round is logged and the next one tries again
    yield* sweep().pipe(
      Effect.catchCause((cause) => Effect.logWarning("media sweep failed", cause)),
      Effect.repeat(Schedule.spaced(sweepIntervalMillis)),
      Effect.forkScoped
    )

    return {
      /** A new file of the caller, or their live file with the same bytes when `file_hash` names one. */
      create: traced("MediaStorage.create")(
        function*(request: { readonly file_name: string; readonly content_type?: string; readonly file_hash?: string }) {
          const user = yield* CurrentUser
          const hash = request.file_hash?.toLowerCase()
          if (hash !== undefined && sha256Hex.test(hash)) {
            const existing = yield* files.withHash(user.id, hash)
            if (Option.isSome(existing)) return resource(existing.value, true)
          }
          const file = yield* files.create({
            ownerId: user.id,
            fileName: request.file_name,
            contentType: (request.content_type ?? undeclaredType).toLowerCase(),
            ttlSeconds: fileTtlSeconds
          })
          return resource(file, false)
        }
      ),

      /**
       * Streams an upload into the store, refused as soon as it passes the file's or the owner's
       * limit. Uploading again replaces the bytes while the file lives.
       */
      upload: traced("MediaStorage.upload")(function*(upload: MediaUpload) {
        if (upload.expires === undefined || upload.signature === undefined) return yield* new BadSignature()
        yield* signed.verify(uploadScope(upload.token), upload.expires, upload.signature).pipe(
          Effect.catchTag("SignatureExpired", (_: SignatureExpired) => new MediaUrlExpired())
        )
        const found = yield* files.live(upload.token)
        if (Option.isNone(found)) return yield* new MediaFileMissing()
        const file = found.value
        if (upload.contentType !== undefined && upload.contentType !== file.content_type) {
          return yield* new MediaTypeMismatch({ declared: file.content_type })
        }
        const room = yield* files.room(file.owner_id, file.id, maxUserBytes)
        const limit = Math.min(maxFileBytes, Math.max(0, room))
        const tooLarge = limit === maxFileBytes
          ? new MediaFileTooLarge({ maxBytes: maxFileBytes })
          : new MediaQuotaExceeded({ maxBytes: maxUserBytes })
        // a declared length over the limit is refused before a byte is read
        if ((upload.declaredBytes ?? 0) > limit) return yield* tooLarge
        // and one over what is left of the owner's upload quota today: taking it is refused, as at the end
        const caller = { customerId: file.owner_id }
        const dayRoom = yield* metering.dayRoom(file.owner_id, uploadOperation)
        if (Option.isSome(dayRoom) && (upload.declaredBytes ?? 1) > dayRoom.value) {
          const taken = yield* metering.begin(caller, uploadOperation, { amount: Math.max(1, upload.declaredBytes ?? 1), holds: false })
          // taken after all (a new day began): nothing was uploaded, so it is given back
          yield* taken.end("failed")
        }

        // an undeclared type is told by the first bytes, kept as they stream by: no second read
        const head = file.content_type === undeclaredType ? headKeeper() : undefined
        const body = head === undefined ? upload.body : Stream.map(upload.body, head.take)
        // counted against the day's upload quota, recorded, then placed: a refused upload (over
        // a quota) keeps the file's old bytes; a failed record gives the quota back
        const record = (_: unknown, { bytes, sha256 }: Written, place: Effect.Effect<void, StorageFailed>) =>
          Effect.gen(function*() {
            const meter = yield* metering.begin(caller, uploadOperation, { amount: bytes, holds: false })
            const sniffedType = head === undefined ? undefined : sniffMediaType(head.head())
            yield* files.recordUpload(file, { bytes, sha256: sha256.toString("hex"), sniffedType }, maxUserBytes).pipe(
              Effect.onError(() => meter.end("failed", { in: bytes }))
            )
            yield* place.pipe(Effect.onError(() => meter.end("failed", { in: bytes })))
            yield* meter.end("succeeded", { in: bytes })
          })
        yield* storage.put(storageKey(file.id), body, { maxBytes: limit, record }).pipe(
          Effect.catchTags({ BodyTooLarge: () => tooLarge, BodyBroken: () => new MediaUploadBroken() }),
          Effect.tap((stored) => recordUpload("media", stored.bytes))
        )
      }),

      /**
       * A live, uploaded file: where the store serves it (`GET` or `HEAD`), or its bytes, with
       * what to serve them as.
       */
      download: traced("MediaStorage.download")(function*(token: string, method: "GET" | "HEAD") {
        const found = yield* files.live(token)
        if (Option.isNone(found) || found.value.size_bytes === null) return yield* new MediaFileMissing()
        const file = found.value
        const type = servedType(file)
        const served = { contentType: type, contentDisposition: contentDisposition(type, file.file_name) }
        // a bucket serves the file itself, presigned: a public base never, the file is its owner's
        const elsewhere = yield* storage.downloadUrl(storageKey(file.id), method, { ...served, public: false })
        if (Option.isSome(elsewhere)) return { _tag: "Elsewhere", url: elsewhere.value } as const
        const opened = yield* storage.open(storageKey(file.id))
        if (Option.isNone(opened)) return yield* new MediaFileMissing()
        return { _tag: "Here", ...served, ...opened.value } as const
      }),

      sweep
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(MediaStorage, MediaStorage.make)
  static readonly layer = MediaStorage.layerWithoutDependencies.pipe(
    Layer.provide([MediaFileRepo.layer, Storage.layer, UrlSigner.layer, Metering.layer])
  )
}
