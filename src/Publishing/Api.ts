/**
 * Publishing: nodes and versions created and maintained by their publishers, the publish call
 * of publishing CLIs (a personal access token in the body), and the archives behind signed
 * upload URLs and download URLs.
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { NodeId } from "../Admin/Api.ts"
import { Authentication, OptionalAuthentication } from "../Auth/Authentication.ts"
import { hostIntervals, semverKey } from "../Catalog/Semver.ts"
import { Node, NodeVersion, Translations } from "../Domain/Node.ts"
import { NonEmptyText, optional, PathParam, Text, TextList } from "../Domain/Schemas.ts"
import {
  BadRequest,
  Conflict,
  Forbidden,
  NotFound,
  PayloadTooLarge,
  Unauthorized,
  UnsupportedMediaType
} from "../Errors.ts"

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

/** A strict semantic version; build metadata is refused (it takes no part in precedence). */
export const PublishedVersion = NonEmptyText(100).pipe(
  Schema.filter((s) => semverKey(s) !== undefined, {
    message: () => "expected a semantic version such as 1.2.3 or 2.0.0-beta.1"
  }),
  Schema.filter((s) => !s.includes("+"), {
    message: () => "build metadata (+...) is not accepted: versions differing only in it could not be told apart"
  })
)

/** A host-version range as semver writes them (">=1.2 <2", "^1.4"). */
const HostRange = Text(200).pipe(
  Schema.filter((s) => s.trim() === "" || hostIntervals(s.trim()) !== undefined, {
    message: () => "expected a semantic-version range such as >=1.2.0 <2.0.0"
  })
)

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

export const PublishResponse = Schema.Struct({
  signedUrl: Schema.String.annotations({ description: "PUT the zip archive here (Content-Type: application/zip)" }),
  node_version: NodeVersion
}).annotations({ identifier: "PublishNodeVersionResponse" })

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
      .addError(NotFound)
      .addError(Conflict)
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
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Update a node's metadata")
  )
  .add(
    HttpApiEndpoint.del("deleteNode", "/publishers/:publisherId/nodes/:nodeId")
      .setPath(PublisherNodePath)
      .addSuccess(HttpApiSchema.NoContent)
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
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Conflict)
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
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Conflict)
      .addError(PayloadTooLarge)
      .addError(UnsupportedMediaType)
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
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Download a version's archive (installable versions only)")
  )
  .annotate(OpenApi.Title, "Publishing")
{}
