import { HttpApiBuilder } from "effect/http-api"
import { HttpEffect, HttpServerResponse } from "effect/http"
import { NodeHttpServerRequest, NodeStream } from "@effect/platform-node"
import { Effect, Layer, Option } from "effect"
import { ArchivesApi, PublishApi, PublishingApi, UploadUrlResponse, withDependencyProblems } from "./Api.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
import { AuthFailures } from "../Auth/Failures.ts"
import { offerDownload } from "../Http/Ranges.ts"
import {
  ArchiveRejected,
  BadRequest,
  Conflict,
  InternalError,
  InvalidSignature,
  InvalidToken,
  NodeDeleted,
  NodeExists,
  NotFound,
  PayloadTooLarge,
  RateLimited,
  Unauthorized,
  UnsupportedMediaType,
  UrlExpired,
  VersionExists,
  VersionImmutable
} from "../Domain/ApiErrors.ts"
import { Archives } from "./Archives.ts"
import type { Opened } from "../Storage/Storage.ts"
import { Publishing } from "./Service.ts"
import { declaredLength, downloadMethod, mediaType, redirectToStore } from "../Storage/Http.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({
  ...sharedAnswers,
  NodeIdTaken: NodeExists,
  NodeIsDeleted: NodeDeleted,
  VersionTaken: VersionExists,
  VersionLocked: VersionImmutable,
  NodeBannedForOwner: Conflict,
  NodesPublisherDeleted: Conflict,
  TokenRejected: InvalidToken,
  NoCredentials: Unauthorized,
  TooManyFailures: RateLimited,
  BadSignature: InvalidSignature,
  SignatureExpired: UrlExpired,
  NotAZip: UnsupportedMediaType,
  ArchiveTooLarge: PayloadTooLarge,
  UploadBroken: BadRequest,
  NotDownloadable: NotFound,
  ArchiveNotStored: NotFound,
  StorageFailed: InternalError,
  ArchiveChecksFailed: ArchiveRejected
})

/**
 * The header that tells a replay from a first success: a retried write whose work was done before
 * (its first answer lost) answers as the first did, with `Idempotent-Replayed: true` besides.
 */
export const replayedHeader = "idempotent-replayed"

/** `value` as the answer, marked as a replay when it is one. */
const answerMarked = <A>(replayed: boolean, value: A) =>
  replayed
    ? Effect.as(
      HttpEffect.appendPreResponseHandler((_request, response) => Effect.succeed(HttpServerResponse.setHeader(response, replayedHeader, "true"))),
      value
    )
    : Effect.succeed(value)

/** This folder's groups, under what every endpoint shares: its handlers are built against these alone. */
const api = registryApi(PublishingApi, PublishApi, ArchivesApi)

const PublishingLive = HttpApiBuilder.group(api, "publishing", (handlers) =>
  Effect.map(Publishing, (publishing) =>
    handlers
      .handle("createNode", ({ params, payload }) => answer(publishing.createNode(params.publisherId, payload)))
      .handle("updateNode", ({ params, payload }) => answer(publishing.updateNode(params.publisherId, params.nodeId, payload)))
      .handle("deleteNode", ({ params }) => answer(publishing.deleteNode(params.publisherId, params.nodeId)))
      .handle("updateVersion", ({ params, payload }) =>
        answer(publishing.updateVersion(params.publisherId, params.nodeId, params.versionId, payload)))
      .handle("deleteVersion", ({ params }) => answer(publishing.deleteVersion(params.publisherId, params.nodeId, params.versionId)))
      .handle("yankNodeVersion", ({ params, payload }) =>
        answer(publishing.yankVersion(params.publisherId, params.nodeId, params.versionId, payload.reason)))
      .handle("unyankNodeVersion", ({ params }) =>
        answer(publishing.yankVersion(params.publisherId, params.nodeId, params.versionId, undefined)))))

/** The publish call and CreateUploadUrl: a token in the body, or a bearer token. */
const PublishLive = HttpApiBuilder.group(api, "publish", (handlers) =>
  Effect.gen(function*() {
    const publishing = yield* Publishing
    const failures = yield* AuthFailures
    /** A call with a token in its body counts a refused token against the caller's address. */
    const guarded = <A, E extends { readonly _tag: string }, R>(token: string | undefined, call: Effect.Effect<A, E, R>) =>
      token === undefined ? call : failures.guard(call, (e) => e._tag === "TokenRejected")
    return handlers
      .handle("publishVersion", ({ params, payload }) =>
        answer(guarded(payload.personal_access_token, publishing.publish(params.publisherId, params.nodeId, payload))).pipe(
          Effect.flatMap(({ published, replayed }) => answerMarked(replayed, withDependencyProblems(published)))
        ))
      .handle("createUploadUrl", ({ params, payload }) =>
        answer(guarded(
          payload.personal_access_token,
          publishing.createUploadUrl(params.publisherId, params.nodeId, params.versionId, payload.personal_access_token)
        )).pipe(Effect.map((fresh) => new UploadUrlResponse(fresh))))
  }))

const ArchivesLive = HttpApiBuilder.group(api, "archives", (handlers) =>
  Effect.map(Archives, (archives) =>
    handlers
      .handle("uploadArchive", ({ params, query, request }) =>
        archives.upload({
          nodeId: params.nodeId,
          version: params.version,
          expires: query.expires,
          signature: query.signature,
          contentType: mediaType(request),
          declaredBytes: declaredLength(request),
          // read from the socket without destroying it when reading stops early: the answer still has to
          // go out on it, and the rest is drained first (RefusedBodies.ts)
          body: NodeStream.fromReadable({
            evaluate: () => NodeHttpServerRequest.toIncomingMessage(request),
            onError: (e) => e,
            closeOnDone: false
          })
        }).pipe(answer, Effect.flatMap(({ replayed, version }) => answerMarked(replayed, version))))
      .handle("downloadArchive", ({ params, request }) =>
        archives.download(params.nodeId, params.version, downloadMethod(request)).pipe(
          answer,
          Effect.map((download) =>
            download._tag === "Here"
              ? downloadAnswer(download, `${params.nodeId}-${params.version}.zip`)
              : redirectToStore(download.url, reprDigest(download.sha256))
          )
        ))))

/**
 * The archive's digest as RFC 9530's `Repr-Digest` (`sha-256=:<base64>:`): of the whole archive,
 * so that a range or a resumed download is checked too. A redirect to the store carries it as
 * well: the store's own answer does not, and the client checks what it fetched there.
 */
const reprDigest = (sha256: Option.Option<Uint8Array>): Record<string, string> =>
  Option.match(sha256, {
    onNone: () => ({}),
    onSome: (digest) => ({ "repr-digest": `sha-256=:${Buffer.from(digest).toString("base64")}:` })
  })

/** An Active version's archive never changes: caches may keep it for good. */
const immutable = "public, max-age=31536000, immutable"

/**
 * A download of `archive`: the edge answers 304 when the client has it, one range as 206, a range
 * past the end as 416, else the whole archive (Http/Ranges.ts). The bytes stream from the store;
 * a HEAD gets the same headers and none of them (the platform sends no body). Downloads are
 * counted by install (`GET /nodes/{id}/install`), never here, so neither a HEAD nor the parts of a
 * resumed download count twice.
 */
const downloadAnswer = (
  archive: Opened & { readonly etag: string; readonly sha256: Option.Option<Uint8Array> },
  fileName: string
): HttpServerResponse.HttpServerResponse =>
  offerDownload({
    noun: "archive",
    bytes: archive.bytes,
    contentType: "application/zip",
    etag: archive.etag,
    lastModified: archive.modified,
    cacheControl: immutable,
    stream: archive.stream,
    slice: archive.slice,
    headers: { "content-disposition": `attachment; filename="${fileName}"`, ...reprDigest(archive.sha256) }
  })

/** This folder's handlers, with the services they use (src/App.ts provides what every feature shares). */
export const PublishingHttp = Layer.mergeAll(PublishingLive, PublishLive, ArchivesLive).pipe(Layer.provide([Publishing.layer, Archives.layer]))
