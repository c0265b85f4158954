import { HttpApiBuilder, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest, NodeStream } from "@effect/platform-node"
import { Effect } from "effect"
import { Api } from "../Api.ts"
import { AuthFailures } from "../Auth/Failures.ts"
import { answer } from "../Errors.ts"
import { Archives } from "./Archives.ts"
import { Publishing } from "./Service.ts"

/** The media type of the request's Content-Type, lowercase, without parameters. */
export const mediaType = (request: HttpServerRequest.HttpServerRequest) =>
  (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()

export const declaredLength = (request: HttpServerRequest.HttpServerRequest) => {
  const length = Number(request.headers["content-length"])
  return Number.isFinite(length) ? length : undefined
}

export const PublishingLive = HttpApiBuilder.group(Api, "publishing", (handlers) =>
  Effect.map(Publishing, (publishing) =>
    handlers
      .handle("createNode", ({ path, payload }) => answer(publishing.createNode(path.publisherId, payload)))
      .handle("updateNode", ({ path, payload }) => answer(publishing.updateNode(path.publisherId, path.nodeId, payload)))
      .handle("deleteNode", ({ path }) => answer(publishing.deleteNode(path.publisherId, path.nodeId)))
      .handle("updateVersion", ({ path, payload }) =>
        answer(publishing.updateVersion(path.publisherId, path.nodeId, path.versionId, payload)))
      .handle("deleteVersion", ({ path }) => answer(publishing.deleteVersion(path.publisherId, path.nodeId, path.versionId)))))

/** A publish with a personal access token counts a refused token against the caller's address. */
export const PublishLive = HttpApiBuilder.group(Api, "publish", (handlers) =>
  Effect.gen(function*() {
    const publishing = yield* Publishing
    const failures = yield* AuthFailures
    return handlers.handle("publishVersion", ({ path, payload }) => {
      const publish = publishing.publish(path.publisherId, path.nodeId, payload)
      return answer(
        payload.personal_access_token === undefined ? publish : failures.guard(publish, (e) => e._tag === "TokenRejected")
      )
    })
  }))

export const ArchivesLive = HttpApiBuilder.group(Api, "archives", (handlers) =>
  Effect.map(Archives, (archives) =>
    handlers
      .handle("uploadArchive", ({ path, request, urlParams }) =>
        archives.upload({
          nodeId: path.nodeId,
          version: path.version,
          expires: urlParams.expires,
          signature: urlParams.signature,
          contentType: mediaType(request),
          declaredBytes: declaredLength(request),
          // read from the socket without destroying it when reading stops early: the answer still has to
          // go out on it, and the rest is drained first (RefusedBodies.ts)
          body: NodeStream.fromReadable(() => NodeHttpServerRequest.toIncomingMessage(request), (e) => e, { closeOnDone: false })
        }).pipe(answer))
      .handle("downloadArchive", ({ path }) =>
        archives.download(path.nodeId, path.version).pipe(
          answer,
          Effect.map((archive) =>
            HttpServerResponse.stream(archive.stream, {
              contentType: "application/zip",
              contentLength: archive.bytes,
              headers: { "content-disposition": `attachment; filename="${path.nodeId}-${path.version}.zip"` }
            })
          )
        ))))
