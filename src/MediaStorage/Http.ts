import { HttpApiBuilder } from "effect/http-api"
import { HttpServerResponse } from "effect/http"
import { NodeHttpServerRequest, NodeStream } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { MediaStorageApi, MediaFilesApi } from "./Api.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
import { MediaStorage } from "./Service.ts"
import { declaredLength, downloadMethod, mediaType, redirectToStore } from "../Storage/Http.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import {
  BadRequest,
  InternalError,
  InvalidSignature,
  NotFound,
  PayloadTooLarge,
  QuotaExceeded,
  UnsupportedMediaType,
  UrlExpired
} from "../Domain/ApiErrors.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({
  ...sharedAnswers,
  MediaFileMissing: NotFound,
  MediaUrlExpired: UrlExpired,
  MediaTypeMismatch: UnsupportedMediaType,
  MediaFileTooLarge: PayloadTooLarge,
  MediaQuotaExceeded: PayloadTooLarge,
  MediaUploadBroken: BadRequest,
  BadSignature: InvalidSignature,
  StorageFailed: InternalError,
  OverQuota: QuotaExceeded
})

/** This folder's groups, under what every endpoint shares: its handlers are built against these alone. */
const api = registryApi(MediaStorageApi, MediaFilesApi)

const MediaStorageLive = HttpApiBuilder.group(api, "mediaStorage", (handlers) =>
  Effect.map(MediaStorage, (media) => handlers.handle("createStorageResource", ({ payload }) => answer(media.create(payload)))))

const MediaFilesLive = HttpApiBuilder.group(api, "mediaFiles", (handlers) =>
  Effect.map(MediaStorage, (media) =>
    handlers
      .handle("uploadMediaFile", ({ params, query, request }) =>
        media.upload({
          token: params.token,
          expires: query.expires,
          signature: query.signature,
          contentType: request.headers["content-type"] === undefined ? undefined : mediaType(request),
          declaredBytes: declaredLength(request),
          // read from the socket without destroying it when reading stops early: the answer still has to
          // go out on it, and the rest is drained first (RefusedBodies.ts)
          body: NodeStream.fromReadable({
            evaluate: () => NodeHttpServerRequest.toIncomingMessage(request),
            onError: (e) => e,
            closeOnDone: false
          })
        }).pipe(answer))
      .handle("downloadMediaFile", ({ params, request }) =>
        media.download(params.token, downloadMethod(request)).pipe(
          answer,
          Effect.map((file) =>
            file._tag === "Elsewhere"
              ? redirectToStore(file.url)
              : HttpServerResponse.stream(file.stream, {
                contentType: file.contentType,
                contentLength: file.bytes,
                headers: {
                  "x-content-type-options": "nosniff",
                  "content-disposition": file.contentDisposition,
                  // nothing served here may run scripts or load anything, whatever a browser makes of it
                  "content-security-policy": "default-src 'none'; sandbox"
                }
              })
          )
        ))))

/** This folder's handlers, with the services they use (src/App.ts provides what every feature shares). */
export const MediaStorageHttp = Layer.mergeAll(MediaStorageLive, MediaFilesLive).pipe(Layer.provide(MediaStorage.layer))
