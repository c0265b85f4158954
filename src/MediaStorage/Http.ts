import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest, NodeStream } from "@effect/platform-node"
import { Effect } from "effect"
import { Api } from "../Api.ts"
import { answer } from "../Errors.ts"
import { declaredLength, mediaType } from "../Publishing/Http.ts"
import { MediaStorage } from "./Service.ts"

export const MediaStorageLive = HttpApiBuilder.group(Api, "mediaStorage", (handlers) =>
  Effect.map(MediaStorage, (media) => handlers.handle("createStorageResource", ({ payload }) => answer(media.create(payload)))))

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

export const MediaFilesLive = HttpApiBuilder.group(Api, "mediaFiles", (handlers) =>
  Effect.map(MediaStorage, (media) =>
    handlers
      .handle("uploadMediaFile", ({ path, request, urlParams }) =>
        media.upload({
          token: path.token,
          expires: urlParams.expires,
          signature: urlParams.signature,
          contentType: request.headers["content-type"] === undefined ? undefined : mediaType(request),
          declaredBytes: declaredLength(request),
          // read from the socket without destroying it when reading stops early: the answer still has to
          // go out on it, and the rest is drained first (RefusedBodies.ts)
          body: NodeStream.fromReadable(() => NodeHttpServerRequest.toIncomingMessage(request), (e) => e, { closeOnDone: false })
        }).pipe(answer))
      .handle("downloadMediaFile", ({ path }) =>
        media.download(path.token).pipe(
          answer,
          Effect.map((file) =>
            HttpServerResponse.stream(file.stream, {
              contentType: file.contentType,
              contentLength: file.bytes,
              headers: {
                "x-content-type-options": "nosniff",
                "content-disposition": contentDisposition(file.contentType, file.fileName),
                // nothing served here may run scripts or load anything, whatever a browser makes of it
                "content-security-policy": "default-src 'none'; sandbox"
              }
            })
          )
        ))))
