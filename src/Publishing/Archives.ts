/**
 * Archives: the zip of a version, uploaded to its signed URL while the version is Pending, checked
 * before its status commits, and served for download once the version is installable.
 */
import { SqlClient } from "effect/sql"
import { Context, Data, Effect, Layer, Option, Stream } from "effect"
import { createHash } from "node:crypto"
import { NodeRepo, requireVisible } from "../Catalog/Repo.ts"
import { AppConfig } from "../Config.ts"
import { NodeIsBanned, VersionMissing } from "../Domain/Errors.ts"
import type { NodeVersionStatus } from "../Domain/Node.ts"
import { ArchiveVerdict, type CheckFailure, checkArchive } from "./Checks.ts"
import { PublishingRepo, VersionLocked } from "./Repo.ts"
import { BadSignature, UrlSigner } from "../Storage/Signing.ts"
import { Storage } from "../Storage/Store.ts"
import type { Opened, StorageFailed, StoredContent, Written } from "../Storage/Storage.ts"
import { traced } from "../Tracing.ts"
import { recordUpload } from "../Observability/Metrics.ts"
import { archiveKey, archiveServed } from "../Storage/Keys.ts"
import { decide, ModerationRepo, unfinished } from "../Moderation/Repo.ts"
import { scanRetryTask } from "../Moderation/Rescan.ts"
import { scanArchive } from "../Moderation/Scanner.ts"

export class NotAZip extends Data.TaggedError("NotAZip")<{}> {
  override get message() {
    return "An archive is uploaded as Content-Type: application/zip"
  }
}

export class ArchiveTooLarge extends Data.TaggedError("ArchiveTooLarge")<{ readonly maxBytes: number }> {
  override get message() {
    return `An archive may hold at most ${this.maxBytes} bytes`
  }
}

/**
 * The archive failed the automated checks: nothing is stored, and the version stays Pending for a
 * corrected upload. `answerDetails` is what the 422 lists (Answers.ts).
 */
export class ArchiveChecksFailed extends Data.TaggedError("ArchiveChecksFailed")<{ readonly failures: ReadonlyArray<CheckFailure> }> {
  override get message() {
    const n = this.failures.length
    // a message may end with its own full stop (the zip reader's do)
    const found = this.failures.map((f) => f.message.replace(/\.+$/, "")).join("; ")
    return `The archive failed ${n} automated check${n === 1 ? "" : "s"}: ${found}. ` +
      "Nothing was stored; the version is still Pending: upload a corrected archive"
  }
  get answerDetails() {
    return this.failures
  }
}

export class UploadBroken extends Data.TaggedError("UploadBroken")<{}> {
  override get message() {
    return "The upload was interrupted before the archive was complete"
  }
}

/** The version exists but has no archive to serve (not installable, or its node deleted). */
export class NotDownloadable extends Data.TaggedError("NotDownloadable")<{ readonly nodeId: string; readonly version: string }> {
  override get message() {
    return `Node '${this.nodeId}' has no downloadable version '${this.version}'`
  }
}

/** The version is installable, but its archive is not in the store. */
export class ArchiveNotStored extends Data.TaggedError("ArchiveNotStored")<{ readonly nodeId: string; readonly version: string }> {
  override get message() {
    return `The archive of '${this.nodeId}' ${this.version} is not in storage`
  }
}

/**
 * How an archive is downloaded: from the service (`Here`), or from where the store serves it
 * (`Elsewhere`); either way with its SHA-256 once known.
 */
export type Download = Data.TaggedEnum<{
  Here: Opened & { readonly etag: string; readonly sha256: Option.Option<Uint8Array> }
  Elsewhere: { readonly url: string; readonly sha256: Option.Option<Uint8Array> }
}>
export const Download = Data.taggedEnum<Download>()

export { archiveKey }

/** An archive's entries may declare at most this many times the size limit once uncompressed (zip bombs). */
const uncompressedPerArchiveByte = 20
const maxEntries = 100_000

/** Why a version whose archive a crash lost is Pending again. */
export const archiveLostReason =
  "The archive was lost in a crash after the upload was accepted; upload it again to make the version installable"

const zipTypes: ReadonlySet<string> = new Set(["application/zip", "application/x-zip-compressed"])

/** An upload as its request brings it. */
export interface Upload {
  readonly nodeId: string
  readonly version: string
  readonly expires: string | undefined
  readonly signature: string | undefined
  /** The media type of `Content-Type`, lowercase, without parameters. */
  readonly contentType: string
  /** `Content-Length`, when the client declared one. */
  readonly declaredBytes: number | undefined
  readonly body: Stream.Stream<Uint8Array, unknown>
}

/**
 * Whether so many archives are missing that the store, not a crash, is at fault: a crash loses
 * only the uploads in flight, so two or more lost, half of all or more, means a wrong folder, and
 * sending them all back to Pending would undo a catalogue's releases for a typo.
 */
export const looksMisplaced = (lost: number, installable: number) => lost > 1 && lost * 2 >= installable

export class Archives extends Context.Service<Archives>()("Archives", {
  make: Effect.gen(function*() {
    const nodes = yield* NodeRepo
    const repo = yield* PublishingRepo
    const moderation = yield* ModerationRepo
    const sql = yield* SqlClient.SqlClient
    const signer = yield* UrlSigner
    const storage = yield* Storage
    const { maxArchiveBytes, backend } = (yield* AppConfig).storage
    const wrongStore = backend._tag === "s3"
      ? "a wrong bucket or endpoint (S3_BUCKET, S3_ENDPOINT)"
      : "a wrong or unmounted storage folder (STORAGE_DIR)"
    const limits = { maxUncompressedBytes: maxArchiveBytes * uncompressedPerArchiveByte, maxEntries }

    /**
     * Installable versions whose archive is not in the store (lost in a crash, by a release that
     * committed the status before the file) go back to Pending, so that install never hands out a
     * URL that answers 404 and the publisher can upload again. One query, one look per archive.
     */
    const recoverLost = traced("Archives.recoverLost")(function*() {
      const installable = yield* repo.installableWithArchive()
      const lostKeys = new Set(yield* storage.missing(installable.map((v) => archiveKey(v.id))))
      const lost = installable.filter((v) => lostKeys.has(archiveKey(v.id))).map((v) => v.id)
      if (lost.length === 0) return
      if (looksMisplaced(lost.length, installable.length)) {
        return yield* Effect.logError(
          `${lost.length} of ${installable.length} installable archives are missing from storage: that is ${wrongStore}, ` +
            "not a crash, which loses at most the uploads in flight. " +
            "No version was changed; install answers 404 for them until the store is right."
        )
      }
      const moved = yield* repo.archiveLost(lost, archiveLostReason)
      yield* Effect.forEach(moved, (v) =>
        Effect.logWarning(`archive of ${v.node_id} ${v.version} missing from storage: version returned to Pending for a new upload`).pipe(
          Effect.annotateLogs({ nodeId: v.node_id, version: v.version })
        ), { discard: true })
    })
    // before the service serves: no install hands out a lost archive's URL
    yield* recoverLost()

    /** The version as it is now (it exists: its absence is a defect). */
    const versionNow = (versionId: string) =>
      Effect.flatMap(nodes.versionById(versionId), (version) => Effect.orDie(Effect.fromOption(version)))

    /**
     * An upload to a version that left Pending: a retry of the upload that gave it its archive
     * (the same bytes, its answer lost) is answered as done, with the version as it is now; other
     * bytes are refused as before. The body is read only while it may still be those bytes (never
     * past their length), hashed as it streams, and not stored.
     */
    const replayOrLocked = (versionId: string, status: NodeVersionStatus, upload: Upload) =>
      Effect.gen(function*() {
        const locked = new VersionLocked({ status })
        const stored = yield* repo.storedArchive(versionId)
        if (Option.isNone(stored)) return yield* locked
        const { bytes: storedBytes, sha256: storedSha256 } = stored.value
        if (upload.declaredBytes !== undefined && upload.declaredBytes !== storedBytes) return yield* locked
        const hash = createHash("sha256")
        let bytes = 0
        yield* upload.body.pipe(
          Stream.mapError(() => new UploadBroken()),
          Stream.runForEach((chunk): Effect.Effect<void, VersionLocked> => {
            bytes += chunk.byteLength
            if (bytes > storedBytes) return locked
            hash.update(chunk)
            return Effect.void
          })
        )
        if (bytes !== storedBytes || !hash.digest().equals(storedSha256)) return yield* locked
        return { version: yield* versionNow(versionId), replayed: true }
      })

    return {
      /**
       * Stores the archive of a Pending version that passes the checks: the version becomes Active.
       * One that fails them is refused (ArchiveChecksFailed) and not stored: the version stays
       * Pending, without an archive, for a corrected upload. Answers the version as it then is, and whether the
       * upload was a replay: the version held these very bytes already, and nothing was written.
       */
      upload: traced("Archives.upload")(function*(upload: Upload) {
        const { nodeId, version } = upload
        if (upload.expires === undefined || upload.signature === undefined) return yield* new BadSignature()
        // a version that does not exist answers like a bad signature: the URL names nothing
        const found = yield* nodes.namedVersion(nodeId, version)
        if (Option.isNone(found) || Option.isNone(found.value.version)) return yield* new BadSignature()
        const { node, version: { value: state } } = found.value
        yield* signer.verify({ nodeId, version, versionId: state.id }, upload.expires, upload.signature)
        if (!zipTypes.has(upload.contentType)) return yield* new NotAZip()
        // the version may take an upload: its node visible to clients, the version still Pending
        yield* requireVisible(nodeId, node)
        if (state.status !== "NodeVersionStatusPending") return yield* replayOrLocked(state.id, state.status, upload)
        if ((upload.declaredBytes ?? 0) > maxArchiveBytes) return yield* new ArchiveTooLarge({ maxBytes: maxArchiveBytes })

        // the archive is durable in its place before its status commits; another upload of this
        // version that finished first stays, and this one is dropped; so is one that fails the checks
        const record = (content: StoredContent, written: Written, place: Effect.Effect<void, StorageFailed>) =>
          Effect.flatMap(checkArchive(content, limits), (verdict) =>
            ArchiveVerdict.$match(verdict, {
              Passed: ({ files }) =>
                Effect.flatMap(
                  // a scan that did not finish holds the version while a job retries it
                  scanArchive(content).pipe(
                    Effect.map((scan) => ({ scan, decision: decide(scan) })),
                    Effect.catchTag("ScanFailed", (failure) => Effect.succeed(unfinished(failure)))
                  ),
                  ({ decision, scan }) =>
                    repo.recordArchive(state.id, written, place, {
                      status: decision.status,
                      statusReason: decision.statusReason,
                      alongside: Effect.andThen(
                        moderation.recordUpload(state.id, { bytes: written.bytes, files }, scan, decision),
                        decision.outcome === "failed"
                          ? Effect.provideService(scanRetryTask.enqueue({ versionId: state.id }), SqlClient.SqlClient, sql)
                          : Effect.void
                      )
                    })
                ),
              Failed: ({ failures }) => Effect.fail(new ArchiveChecksFailed({ failures }))
            }))
        const { recorded } = yield* storage.put(archiveKey(state.id), upload.body, { maxBytes: maxArchiveBytes, record }).pipe(
          Effect.catchTags({
            BodyTooLarge: () => new ArchiveTooLarge({ maxBytes: maxArchiveBytes }),
            BodyBroken: () => new UploadBroken()
          }),
          Effect.tap((stored) => recordUpload("archive", stored.bytes))
        )
        return { version: yield* versionNow(state.id), replayed: recorded.replayed }
      }),

      /**
       * The archive of an installable version: where the store serves it, or its content, with its
       * size and a strong ETag: the version's id and the time its content was written (an archive
       * a crash lost is uploaded again under the same id, and is then another content).
       */
      download: traced("Archives.download")(function*(nodeId: string, version: string, method: "GET" | "HEAD") {
        const found = yield* nodes.namedVersion(nodeId, version)
        if (Option.isNone(found) || Option.isNone(found.value.version)) return yield* new VersionMissing({ nodeId, version })
        const { node, version: { value: state } } = found.value
        if (node.status === "NodeStatusBanned" || node.publisherStatus === "PublisherStatusBanned") {
          return yield* new NodeIsBanned({ nodeId })
        }
        if (node.status === "NodeStatusDeleted" || state.status !== "NodeVersionStatusActive" || !state.hasArchive) {
          return yield* new NotDownloadable({ nodeId, version })
        }
        // a bucket serves its objects itself: the client is sent there, and the service streams nothing
        const elsewhere = yield* storage.downloadUrl(archiveKey(state.id), method, archiveServed(nodeId, version))
        if (Option.isSome(elsewhere)) return Download.Elsewhere({ url: elsewhere.value, sha256: state.sha256 })
        const archive = yield* storage.open(archiveKey(state.id))
        if (Option.isNone(archive)) return yield* new ArchiveNotStored({ nodeId, version })
        return Download.Here({
          ...archive.value,
          etag: `"${state.id}.${archive.value.modified.getTime().toString(36)}"`,
          sha256: state.sha256
        })
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(Archives, Archives.make)
  static readonly layer = Archives.layerWithoutDependencies.pipe(
    Layer.provide([NodeRepo.layer, PublishingRepo.layer, ModerationRepo.layer, UrlSigner.layer, Storage.layer])
  )
}
