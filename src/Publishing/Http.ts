import { HttpApiBuilder, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest, NodeStream } from "@effect/platform-node"
import { Effect, Option, Redacted } from "effect"
import * as fs from "node:fs/promises"
import { Api } from "../Api.ts"
import { Viewer } from "../Auth/Authentication.ts"
import { managerRoles, requireRole } from "../Auth/Policy.ts"
import { NodeRepo, type VersionState } from "../Catalog/Repo.ts"
import { CatalogWrites } from "../Catalog/Writes.ts"
import { AppConfig } from "../Config.ts"
import { jsonText } from "../Domain/JsonText.ts"
import { nodeVersionStatusMoves, statesReaching } from "../Domain/Transitions.ts"
import {
  BadRequest,
  Conflict,
  errorResponse,
  Forbidden,
  nodeBanned,
  NotFound,
  Unauthorized,
  UnsupportedMediaType
} from "../Errors.ts"
import { PublisherRepo } from "../Publishers/Repo.ts"
import { TokenRepo } from "../Tokens/Repo.ts"
import { checkArchive } from "./Checks.ts"
import { UrlSigner } from "./Signing.ts"
import { Storage } from "./Storage.ts"

/** An archive is stored under its version's id: never reused, and safe as a file name. */
export const archiveKey = (versionId: string) => `${versionId}.zip`

/** An archive's entries may declare at most this many times the size limit once uncompressed (zip bombs). */
const uncompressedPerArchiveByte = 20
const maxEntries = 100_000

/**
 * After an early answer (413, 403, ...) the rest of an upload is read and dropped, so that the
 * client, still sending, reads the answer: closing at once would reset the connection and lose
 * it. Past this many more bytes the connection is dropped instead.
 */
const maxDiscardedBytes = 8 * 1024 * 1024

const discardRest = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.sync(() => {
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
    if (incoming.complete || incoming.destroyed) return
    let discarded = 0
    incoming.on("data", (chunk: Buffer) => {
      discarded += chunk.length
      if (discarded > maxDiscardedBytes) incoming.socket.destroy()
    })
    incoming.resume()
  })

const zipTypes = new Set(["application/zip", "application/x-zip-compressed"])

const publisherBanned = (publisherId: string) =>
  new Forbidden({ code: "publisher_banned", message: `Publisher '${publisherId}' is banned: its nodes cannot be published` })

const missingVersion = (nodeId: string, version: string) =>
  new NotFound({ message: `Node '${nodeId}' has no version '${version}'` })

export const PublishingLive = HttpApiBuilder.group(Api, "publishing", (handlers) =>
  Effect.gen(function*() {
    const nodes = yield* NodeRepo
    const writes = yield* CatalogWrites
    const publishers = yield* PublisherRepo
    const managers = (publisherId: string) =>
      requireRole(publisherId, managerRoles, { siteAdmin: true }).pipe(Effect.provideService(PublisherRepo, publishers))

    /** The publisher's node (404 when it is another's or deleted). */
    const ownNode = (publisherId: string, nodeId: string) =>
      Effect.gen(function*() {
        const node = yield* nodes.findNode(nodeId)
        if (Option.isNone(node) || node.value.publisherId !== publisherId || node.value.status === "NodeStatusDeleted") {
          return yield* new NotFound({ message: `Publisher '${publisherId}' has no node '${nodeId}'` })
        }
        return node.value
      })

    /** The version of the publisher's node, by version string or id, unless deleted. */
    const ownVersion = (publisherId: string, nodeId: string, versionId: string) =>
      Effect.gen(function*() {
        yield* ownNode(publisherId, nodeId)
        const state = yield* nodes.versionState(nodeId, versionId)
        if (Option.isNone(state) || state.value.status === "NodeVersionStatusDeleted") {
          return yield* missingVersion(nodeId, versionId)
        }
        return state.value
      })

    const nodeJson = (nodeId: string) => Effect.map(nodes.findNode(nodeId), (n) => Option.getOrThrow(n).json)

    return handlers
      .handle("createNode", ({ path, payload }) =>
        Effect.gen(function*() {
          yield* managers(path.publisherId)
          if (Option.contains(yield* publishers.status(path.publisherId), "PublisherStatusBanned")) {
            return yield* publisherBanned(path.publisherId)
          }
          if (!(yield* writes.createNode({ ...payload, publisher_id: path.publisherId }))) {
            return yield* new Conflict({ code: "node_exists", message: `A node '${payload.id}' exists already` })
          }
          return jsonText(yield* nodeJson(payload.id), 201)
        }))
      .handle("updateNode", ({ path, payload }) =>
        Effect.gen(function*() {
          yield* managers(path.publisherId)
          if (payload.id !== undefined && payload.id !== path.nodeId) {
            return yield* new BadRequest({ message: `Invalid value for 'id': the body's id must be '${path.nodeId}'` })
          }
          const node = yield* ownNode(path.publisherId, path.nodeId)
          const { id: _id, ...patch } = payload
          // the status is part of the statement: a ban arriving meanwhile is not overwritten
          if (node.status === "NodeStatusBanned" || !(yield* writes.updateNodeWhereStatus(path.nodeId, ["NodeStatusActive"], patch))) {
            return yield* nodeBanned(path.nodeId)
          }
          return jsonText(yield* nodeJson(path.nodeId))
        }))
      .handle("deleteNode", ({ path }) =>
        Effect.gen(function*() {
          yield* managers(path.publisherId)
          yield* ownNode(path.publisherId, path.nodeId)
          if (!(yield* writes.updateNodeWhereStatus(path.nodeId, ["NodeStatusActive"], { status: "NodeStatusDeleted" }))) {
            return yield* new Conflict({ message: `Node '${path.nodeId}' is banned: only a site admin can change its status` })
          }
        }))
      .handle("updateVersion", ({ path, payload }) =>
        Effect.gen(function*() {
          yield* managers(path.publisherId)
          const version = yield* ownVersion(path.publisherId, path.nodeId, path.versionId)
          const { changelog, deprecated } = payload
          if (!(yield* writes.updateVersion(path.nodeId, version.version, { changelog, deprecated }))) {
            return yield* missingVersion(path.nodeId, path.versionId)
          }
          return jsonText(Option.getOrThrow(yield* nodes.versionJson(version.id)))
        }))
      .handle("deleteVersion", ({ path }) =>
        Effect.gen(function*() {
          yield* managers(path.publisherId)
          const version = yield* ownVersion(path.publisherId, path.nodeId, path.versionId)
          const deleted = "NodeVersionStatusDeleted"
          if (!(yield* writes.moveVersionStatus(path.nodeId, version.version, statesReaching(nodeVersionStatusMoves, deleted), deleted, undefined))) {
            return yield* new Conflict({ message: `A version cannot move from ${version.status} to ${deleted}` })
          }
        }))
  }))

export const PublishLive = HttpApiBuilder.group(Api, "publish", (handlers) =>
  Effect.gen(function*() {
    const nodes = yield* NodeRepo
    const writes = yield* CatalogWrites
    const publishers = yield* PublisherRepo
    const tokens = yield* TokenRepo
    const signer = yield* UrlSigner

    /**
     * A personal access token of the publisher, or a bearer JWT of one of its managers or a site
     * admin; answers the publisher's status.
     */
    const authorize = (publisherId: string, token: string | undefined) =>
      Effect.gen(function*() {
        const status = yield* publishers.status(publisherId)
        if (Option.isNone(status)) return yield* new NotFound({ message: `No publisher '${publisherId}'` })
        if (token !== undefined) {
          const verified = yield* tokens.verify(publisherId, Redacted.make(token))
          if (Option.isNone(verified)) {
            return yield* new Unauthorized({
              code: "invalid_token",
              message: `The personal access token is not a valid token of publisher '${publisherId}' (wrong or revoked)`
            })
          }
          return status.value
        }
        const viewer = yield* Viewer
        if (Option.isNone(viewer)) {
          return yield* new Unauthorized({ message: "Send personal_access_token in the body or an Authorization: Bearer <token> header" })
        }
        const role = yield* publishers.roleOf(publisherId, viewer.value.id)
        if (!viewer.value.isSiteAdmin && !(Option.isSome(role) && managerRoles.includes(role.value))) {
          return yield* new Forbidden({ message: `Publishing needs the owner or admin role in publisher '${publisherId}'` })
        }
        return status.value
      })

    return handlers.handle("publishVersion", ({ path, payload }) =>
      Effect.gen(function*() {
        const publisherStatus = yield* authorize(path.publisherId, payload.personal_access_token)
        if (payload.node?.id !== undefined && payload.node.id !== path.nodeId) {
          return yield* new BadRequest({ message: `Invalid value for 'node.id': it must be the path's '${path.nodeId}'` })
        }
        if (publisherStatus === "PublisherStatusBanned") {
          return yield* publisherBanned(path.publisherId)
        }
        const { id: _id, ...node } = payload.node ?? {}
        const version = payload.node_version
        const outcome = yield* writes.publishVersion(path.publisherId, path.nodeId, node, { ...version, node_id: path.nodeId })
        switch (outcome._tag) {
          case "NodeMissing":
            return yield* Effect.die(new Error(`node '${path.nodeId}' vanished while publishing`))
          case "NodeOwnedElsewhere":
            return yield* new Conflict({ code: "node_exists", message: `Node '${path.nodeId}' belongs to another publisher` })
          case "NodeDeleted":
            return yield* new Conflict({ code: "node_deleted", message: `Node '${path.nodeId}' is deleted; ids of deleted nodes are not reused` })
          case "NodeBanned":
            return yield* nodeBanned(path.nodeId)
          case "VersionExists":
            return yield* new Conflict({
              code: "version_exists",
              message: `Node '${path.nodeId}' has (or had) a version '${version.version}'; version numbers are never reused`
            })
          case "Published": {
            const json = Option.getOrThrow(yield* nodes.versionJson(outcome.versionId))
            const signedUrl = signer.uploadUrl({ nodeId: path.nodeId, version: version.version, versionId: outcome.versionId })
            return jsonText(`{"signedUrl":${JSON.stringify(signedUrl)},"node_version":${json}}`, 201)
          }
        }
      }))
  }))

export const ArchivesLive = HttpApiBuilder.group(Api, "archives", (handlers) =>
  Effect.gen(function*() {
    const nodes = yield* NodeRepo
    const writes = yield* CatalogWrites
    const signer = yield* UrlSigner
    const storage = yield* Storage
    const { maxArchiveBytes } = (yield* AppConfig).storage
    const limits = { maxUncompressedBytes: maxArchiveBytes * uncompressedPerArchiveByte, maxEntries }
    const invalidSignature = new Forbidden({ code: "invalid_signature", message: "The upload URL's signature is not valid" })
    const tooLarge = () => errorResponse(413, "payload_too_large", `An archive may hold at most ${maxArchiveBytes} bytes`)

    /** The version may take an upload: its node visible to clients, the version still Pending. */
    const acceptsUpload = (state: VersionState, nodeId: string) =>
      Effect.gen(function*() {
        if (state.nodeStatus === "NodeStatusDeleted") return yield* new NotFound({ message: `No node '${nodeId}'` })
        if (state.nodeStatus === "NodeStatusBanned" || state.publisherStatus === "PublisherStatusBanned") {
          return yield* nodeBanned(nodeId)
        }
        if (state.status !== "NodeVersionStatusPending") {
          return yield* new Conflict({
            code: "version_immutable",
            message: `The version is ${state.status}: its archive can no longer be replaced; publish a new version`
          })
        }
      })

    return handlers
      .handle("uploadArchive", ({ path, request, urlParams }) =>
        Effect.gen(function*() {
          if (urlParams.expires === undefined || urlParams.signature === undefined) return yield* invalidSignature
          // a version that does not exist answers like a bad signature: the URL names nothing
          const found = yield* nodes.versionState(path.nodeId, path.version)
          if (Option.isNone(found) || found.value.version !== path.version) return yield* invalidSignature
          const state = found.value
          const target = { nodeId: path.nodeId, version: path.version, versionId: state.id }
          const verdict = signer.verify(target, urlParams.expires, urlParams.signature)
          if (verdict === "invalid") return yield* invalidSignature
          if (verdict === "expired") return yield* new Forbidden({ code: "url_expired", message: "The upload URL has expired; publish again for a new one" })
          const contentType = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()
          if (!zipTypes.has(contentType)) {
            return yield* new UnsupportedMediaType({ message: "An archive is uploaded as Content-Type: application/zip" })
          }
          yield* acceptsUpload(state, path.nodeId)
          if (Number(request.headers["content-length"] ?? 0) > maxArchiveBytes) return tooLarge()

          const inspect = (file: string) =>
            Effect.gen(function*() {
              const result = yield* checkArchive(file, limits)
              const bytes = (yield* Effect.promise(() => fs.stat(file))).size
              const recorded = yield* (result.ok
                ? writes.recordArchive(state.id, bytes, "NodeVersionStatusActive", undefined)
                : writes.recordArchive(state.id, bytes, "NodeVersionStatusFlagged", `Automated checks failed: ${result.reason}`))
              // another upload of this version finished first: it stays, this one is dropped
              if (!recorded) {
                return yield* new Conflict({ code: "version_immutable", message: "Another upload of this version completed first" })
              }
            })
          // read from the socket without destroying it when reading stops early: the answer still has to go out on it
          const body = NodeStream.fromReadable(() => NodeHttpServerRequest.toIncomingMessage(request), (e) => e, { closeOnDone: false })
          const stored = yield* storage.put(archiveKey(state.id), body, { maxBytes: maxArchiveBytes, inspect }).pipe(
            Effect.map(() => "stored" as const),
            Effect.catchTags({
              TooLarge: () => Effect.succeed("tooLarge" as const),
              BodyFailed: () => new BadRequest({ message: "The upload was interrupted before the archive was complete" })
            })
          )
          if (stored === "tooLarge") return tooLarge()
          return jsonText(Option.getOrThrow(yield* nodes.versionJson(state.id)))
        }).pipe(Effect.ensuring(discardRest(request))))
      .handle("downloadArchive", ({ path }) =>
        Effect.gen(function*() {
          const found = yield* nodes.versionState(path.nodeId, path.version)
          if (Option.isNone(found) || found.value.version !== path.version) return yield* missingVersion(path.nodeId, path.version)
          const state = found.value
          if (state.nodeStatus === "NodeStatusBanned" || state.publisherStatus === "PublisherStatusBanned") {
            return yield* nodeBanned(path.nodeId)
          }
          if (state.nodeStatus === "NodeStatusDeleted" || state.status !== "NodeVersionStatusActive" || !state.hasArchive) {
            return yield* new NotFound({ message: `Node '${path.nodeId}' has no downloadable version '${path.version}'` })
          }
          const archive = yield* storage.open(archiveKey(state.id))
          if (Option.isNone(archive)) {
            return yield* new NotFound({ message: `The archive of '${path.nodeId}' ${path.version} is not in storage` })
          }
          return HttpServerResponse.stream(archive.value.stream, {
            contentType: "application/zip",
            contentLength: archive.value.bytes,
            headers: { "content-disposition": `attachment; filename="${path.nodeId}-${path.version}.zip"` }
          })
        }))
  }))
