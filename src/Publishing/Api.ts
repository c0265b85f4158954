/**
 * Publishing: nodes and versions created and maintained by their publishers, the publish call
 * of publishing CLIs (a personal access token in the body), and the archives behind signed
 * upload URLs and download URLs.
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import {
  BadRequest,
  Conflict,
  Forbidden,
  InternalError,
  InvalidSignature,
  InvalidToken,
  NodeBanned,
  NodeDeleted,
  NodeExists,
  NotFound,
  PayloadTooLarge,
  PublisherBanned,
  Unauthorized,
  UnsupportedMediaType,
  UrlExpired,
  VersionExists,
  VersionImmutable
} from "../Domain/ApiErrors.ts"
import { Authentication, OptionalAuthentication } from "../Domain/Auth.ts"
import { Node, NodeId, NodeVersion, Translations } from "../Domain/Node.ts"
import { field, NonEmptyText, optional, PathParam, Text, TextList } from "../Domain/Schemas.ts"
import { HostRangeFromString, PublishedVersion } from "../Domain/Semver.ts"

/** A node's fields its publisher sets; the others (downloads, rating, status, ...) are the registry's. */
const nodeFields = {
  name: optional(Text(200)),
  description: optional(Text(5000)),
  author: optional(Text(200)),
  license: optional(Text(2000)),
  icon: optional(Text(2000)),
  banner_url: optional(Text(2000)),
  category: optional(Text(100)),
  repository: optional(Text(2000)),
  tags: optional(TextList(50, 100)),
  supported_os: optional(TextList(20, 100)),
  supported_accelerators: optional(TextList(20, 100)),
  supported_host_version: optional(Text(200)),
  supported_host_frontend_version: optional(Text(200)),
  translations: optional(Translations)
}

export const NodeCreate = Schema.Struct({ id: NodeId, ...nodeFields }).annotations({ identifier: "NodeCreate" })
/** `id`, if sent, must be the path's. */
export const NodeUpdate = Schema.Struct({ id: optional(Text(200)), ...nodeFields }).annotations({ identifier: "NodeUpdate" })

/** A host-version range, parsed where it enters. */
const HostRange = HostRangeFromString(200)

export const VersionCreate = Schema.Struct({
  version: PublishedVersion,
  changelog: optional(Text(20_000)),
  dependencies: optional(TextList(500, 500)),
  deprecated: optional(Schema.Boolean),
  supported_os: optional(TextList(20, 100)),
  supported_accelerators: optional(TextList(20, 100)),
  supported_host_version: optional(HostRange),
  supported_host_frontend_version: optional(HostRange),
  tags: optional(TextList(50, 100))
}).annotations({ identifier: "NodeVersionCreate" })

export const PublishRequest = Schema.Struct({
  personal_access_token: optional(NonEmptyText(500)),
  node: optional(Schema.Struct({ id: optional(Text(200)), ...nodeFields })),
  node_version: VersionCreate
}).annotations({ identifier: "PublishNodeVersionRequest" })

export class PublishResponse extends Schema.Class<PublishResponse>("PublishNodeVersionResponse")({
  signedUrl: field(Schema.String, "URL to PUT the version's zip archive to (Content-Type: application/zip)"),
  node_version: field(NodeVersion, "The new version, NodeVersionStatusPending until its archive is uploaded")
}) {}

export const VersionUpdate = Schema.Struct({
  changelog: optional(Text(20_000)),
  deprecated: optional(Schema.Boolean)
}).annotations({ identifier: "NodeVersionUpdate" })

const PublisherNodePath = Schema.Struct({ publisherId: PathParam, nodeId: PathParam })
const PublisherVersionPath = Schema.Struct({ publisherId: PathParam, nodeId: PathParam, versionId: PathParam })

/** Publishers' own management of their nodes and versions (bearer JWT of an owner, admin or site admin). */
export class PublishingApi extends HttpApiGroup.make("publishing")
  .add(
    HttpApiEndpoint.post("createNode", "/publishers/:publisherId/nodes")
      .setPath(Schema.Struct({ publisherId: PathParam }))
      .setPayload(NodeCreate)
      .addSuccess(Node, { status: 201 })
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(PublisherBanned)
      .addError(NotFound)
      .addError(NodeExists)
      .annotate(OpenApi.Summary, "Create a node")
      .annotate(OpenApi.Description, "Owners, admins and site admins. 409 node_exists when the id is taken.")
  )
  .add(
    HttpApiEndpoint.put("updateNode", "/publishers/:publisherId/nodes/:nodeId")
      .setPath(PublisherNodePath)
      .setPayload(NodeUpdate)
      .addSuccess(Node)
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(NodeBanned)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Update a node's metadata")
  )
  .add(
    HttpApiEndpoint.del("deleteNode", "/publishers/:publisherId/nodes/:nodeId")
      .setPath(PublisherNodePath)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(OpenApi.Summary, "Delete a node (soft: NodeStatusDeleted)")
  )
  .add(
    HttpApiEndpoint.put("updateVersion", "/publishers/:publisherId/nodes/:nodeId/versions/:versionId")
      .setPath(PublisherVersionPath)
      .setPayload(VersionUpdate)
      .addSuccess(NodeVersion)
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Change a version's changelog or deprecation")
  )
  .add(
    HttpApiEndpoint.del("deleteVersion", "/publishers/:publisherId/nodes/:nodeId/versions/:versionId")
      .setPath(PublisherVersionPath)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(OpenApi.Summary, "Delete a version (soft: NodeVersionStatusDeleted; its number is never reused)")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Publishing")
{}

/** The publish call: a personal access token in the body, or a bearer JWT of an owner, admin or site admin. */
export class PublishApi extends HttpApiGroup.make("publish")
  .add(
    HttpApiEndpoint.post("publishVersion", "/publishers/:publisherId/nodes/:nodeId/versions")
      .setPath(Schema.Struct({ publisherId: PathParam, nodeId: NodeId }))
      .setPayload(PublishRequest)
      .addSuccess(PublishResponse, { status: 201 })
      .addError(BadRequest)
      .addError(Unauthorized)
      .addError(InvalidToken)
      .addError(Forbidden)
      .addError(PublisherBanned)
      .addError(NodeBanned)
      .addError(NotFound)
      .addError(NodeExists)
      .addError(NodeDeleted)
      .addError(VersionExists)
      .annotate(OpenApi.Summary, "Publish a node version")
      .annotate(
        OpenApi.Description,
        "Creates the node (or updates it from `node`) and the version as NodeVersionStatusPending; PUT the zip to `signedUrl`. " +
          "Errors: 401 invalid_token (wrong or revoked personal access token), 403 publisher_banned / node_banned, " +
          "409 version_exists (numbers are never reused), 409 node_exists (another publisher's id), 409 node_deleted."
      )
  )
  .middleware(OptionalAuthentication)
  .annotate(OpenApi.Title, "Publishing")
{}

const ArchivePath = Schema.Struct({ nodeId: PathParam, version: PathParam })

/** Archives: uploads through signed URLs, downloads of installable versions. No bearer token. */
export class ArchivesApi extends HttpApiGroup.make("archives")
  .add(
    HttpApiEndpoint.put("uploadArchive", "/archives/:nodeId/:version")
      .setPath(ArchivePath)
      .setUrlParams(Schema.Struct({ expires: optional(Text(20)), signature: optional(Text(100)) }))
      .addSuccess(NodeVersion)
      .addError(BadRequest)
      .addError(InvalidSignature)
      .addError(UrlExpired)
      .addError(NodeBanned)
      .addError(NotFound)
      .addError(VersionImmutable)
      .addError(PayloadTooLarge)
      .addError(UnsupportedMediaType)
      .addError(InternalError)
      .annotate(OpenApi.Summary, "Upload a version's zip archive to its signed URL")
      .annotate(
        OpenApi.Description,
        "The body is the zip (Content-Type: application/zip), streamed to storage. The checks run when it is complete: " +
          "the version becomes NodeVersionStatusActive, or NodeVersionStatusFlagged with status_reason. " +
          "403 invalid_signature / url_expired, 409 version_immutable once the version left Pending, 413 beyond the size limit."
      )
      // the body is read as a stream by the handler, not declared as a payload (which would buffer it)
      .annotate(OpenApi.Override, {
        requestBody: { required: true, content: { "application/zip": { schema: { type: "string", format: "binary" } } } }
      })
  )
  .add(
    HttpApiEndpoint.get("downloadArchive", "/archives/:nodeId/:version")
      .setPath(ArchivePath)
      .addSuccess(HttpApiSchema.Uint8Array({ contentType: "application/zip" }))
      .addError(BadRequest)
      .addError(NodeBanned)
      .addError(NotFound)
      .addError(InternalError)
      .annotate(OpenApi.Summary, "Download a version's archive (installable versions only)")
  )
  .annotate(OpenApi.Title, "Publishing")
{}
