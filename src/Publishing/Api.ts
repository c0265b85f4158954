/**
 * Publishing: nodes and versions created and maintained by their publishers, the publish call
 * of publishing CLIs (a personal access token in the body), and the archives behind signed
 * upload URLs and download URLs.
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import {
  ArchiveRejected,
  Conflict,
  Forbidden,
  InvalidSignature,
  InvalidToken,
  NodeBanned,
  NodeDeleted,
  NodeExists,
  NotFound,
  RangeNotSatisfiable,
  PayloadTooLarge,
  PublisherBanned,
  RateLimited,
  Unauthorized,
  UnsupportedMediaType,
  UrlExpired,
  VersionExists,
  VersionImmutable
} from "../Domain/ApiErrors.ts"
import { StreamedBody } from "../Domain/HttpHints.ts"
import { Authentication, OptionalAuthentication } from "../Domain/Auth.ts"
import { Node, NodeId, NodeVersion, Translations } from "../Domain/Node.ts"
import {
  field,
  ignoringUnknownFields,
  NonEmptyText,
  optionalField,
  PathParam,
  refusingBody,
  refusingUnknownFields,
  Text,
  TextList
} from "../Domain/Schemas.ts"
import { HostRangeFromString, NormalisedHostRange, PublishedVersion } from "../Domain/Semver.ts"

/** A node's fields its publisher sets; the others (downloads, rating, status, ...) are the registry's. */
export const nodeFields = {
  name: optionalField(Text(200), "Display name of the node"),
  description: optionalField(Text(5000), "Description of the node"),
  author: optionalField(Text(200), "Author of the node"),
  license: optionalField(Text(2000), "Path to the license file in the node's repository"),
  icon: optionalField(Text(2000), "URL of the node's icon"),
  banner_url: optionalField(Text(2000), "URL of the node's banner"),
  category: optionalField(Text(100), "Deprecated: use tags; will be removed in a future version"),
  repository: optionalField(Text(2000), "URL of the node's source repository"),
  tags: optionalField(TextList(50, 100), "Tags of the node (they replace category)"),
  supported_os: optionalField(TextList(20, 100), "Operating systems supported by the node"),
  supported_accelerators: optionalField(TextList(20, 100), "Accelerators supported by the node (free strings)"),
  supported_host_version: optionalField(
    NormalisedHostRange(200),
    "Host application versions the node supports: a version range such as >=1.2.0 <2.0.0, ^1.4 or >=1.2.0,<2.0.0"
  ),
  supported_host_frontend_version: optionalField(
    NormalisedHostRange(200),
    "Host frontend versions the node supports: a version range such as >=1.2.0 <2.0.0, ^1.4 or >=1.2.0,<2.0.0"
  ),
  translations: optionalField(Translations, "Translated metadata of the node, by language key")
}

/** `id`, if sent, must be the path's. */
const pathNodeId = optionalField(Text(200), "Identifier of the node; if sent, it must be the path's")

/**
 * A node's metadata as clients send it, wherever they send it (creation, update, the publish
 * call's `node`): other fields are ignored. The registry's web front-end sends the node it read
 * with its changes (`{...node, tags}`); the publishing CLI passes pyproject's fields through.
 */
const nodeInput = <Fields extends Schema.Struct.Fields>(fields: Fields) => ignoringUnknownFields(Schema.Struct(fields))

export const NodeCreate = nodeInput({
  id: field(NodeId, "Unique identifier of the node: letters, digits, '.', '_' and '-', starting with a letter or digit"),
  ...nodeFields
}).annotate({ identifier: "NodeCreate" })
export const NodeUpdate = nodeInput({ id: pathNodeId, ...nodeFields }).annotate({ identifier: "NodeUpdate" })

/** A host-version range, parsed where it enters. */
const HostRange = HostRangeFromString(200)

/** The publish call's version; other fields are ignored, as in the rest of that call. */
export const VersionCreate = ignoringUnknownFields(Schema.Struct({
  version: field(
    PublishedVersion,
    "Semantic version of the new version, unique for the node, such as 1.2.3 or 2.0.0-beta.1 (no build metadata)"
  ),
  changelog: optionalField(Text(20_000), "Summary of changes in this version"),
  dependencies: optionalField(TextList(500, 500), "Package dependencies required by the node in this version"),
  deprecated: optionalField(Schema.Boolean, "Whether this version is deprecated"),
  supported_os: optionalField(TextList(20, 100), "Operating systems supported by this version"),
  supported_accelerators: optionalField(TextList(20, 100), "Accelerators supported by this version (free strings)"),
  supported_host_version: optionalField(
    HostRange,
    "Host application versions this version supports: a version range such as >=1.2.0 <2.0.0, ^1.4 or >=1.2.0,<2.0.0"
  ),
  supported_host_frontend_version: optionalField(
    HostRange,
    "Host frontend versions this version supports: a version range such as >=1.2.0 <2.0.0, ^1.4 or >=1.2.0,<2.0.0"
  ),
  tags: optionalField(TextList(50, 100), "Tags of this version")
})).annotate({ identifier: "NodeVersionCreate" })

/** The token of the publish call and CreateUploadUrl, in their bodies. */
const publishingToken = optionalField(
  NonEmptyText(500),
  "A personal access token of the publisher, or a publish token of trusted publishing (ExchangeTrustedPublishingToken) for the node; without it, the call needs a bearer token"
)

/**
 * The publish call of publishing CLIs, run unattended from their publishers' CI: fields a newer
 * CLI adds (or the host-version aliases, when their setting is off) are ignored, not refused.
 */
export const PublishRequest = ignoringUnknownFields(Schema.Struct({
  personal_access_token: publishingToken,
  node: optionalField(
    nodeInput({ id: pathNodeId, ...nodeFields }),
    "The node's metadata: the node is created with it, or updated from it"
  ),
  node_version: field(VersionCreate, "The version to publish")
})).annotate({ identifier: "PublishNodeVersionRequest" })

export class PublishResponse extends Schema.Class<PublishResponse>("PublishNodeVersionResponse")({
  signedUrl: field(Schema.String, "URL to PUT the version's zip archive to (Content-Type: application/zip)"),
  node_version: field(NodeVersion, "The new version, NodeVersionStatusPending until its archive is uploaded"),
  dependency_problems: optionalField(
    Schema.Array(Schema.Struct({
      requirement: field(Schema.String, "The dependency as published"),
      error: field(Schema.String, "Why it is not a PEP 508 requirement")
    }).annotate({ identifier: "DependencyProblem" })),
    "The dependencies that are not PEP 508 requirements: stored as given and shown as unparseable on the version; " +
      "absent when every dependency parsed"
  )
}) {}

/** The publish answer, with the dependencies that did not parse named beside the version. */
export const withDependencyProblems = (published: { readonly signedUrl: string; readonly node_version: NodeVersion }) => {
  const problems = (published.node_version.dependency_requirements ?? []).flatMap((d) =>
    d.error === undefined ? [] : [{ requirement: d.requirement, error: d.error }]
  )
  return new PublishResponse({ ...published, ...(problems.length === 0 ? {} : { dependency_problems: problems }) })
}

/** The body of CreateUploadUrl: a personal access token, or nothing with a bearer token. */
export const UploadUrlRequest = refusingUnknownFields(Schema.Struct({
  personal_access_token: publishingToken
})).annotate({ identifier: "CreateUploadUrlRequest" })

export class UploadUrlResponse extends Schema.Class<UploadUrlResponse>("CreateUploadUrlResponse")({
  signedUrl: field(Schema.String, "A fresh URL to PUT the version's zip archive to (Content-Type: application/zip)"),
  node_version: field(NodeVersion, "The version, NodeVersionStatusPending")
}) {}

export const VersionUpdate = refusingUnknownFields(Schema.Struct({
  changelog: optionalField(Text(20_000), "Summary of changes in this version"),
  deprecated: optionalField(Schema.Boolean, "Whether this version is deprecated")
})).annotate({ identifier: "NodeVersionUpdate" })

/** Why a version is yanked: trimmed, 1 to 500 characters. */
export const YankReason = Schema.Trim.pipe(
  Schema.decodeTo(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(500)))
)

export const YankRequest = refusingUnknownFields(Schema.Struct({
  reason: field(YankReason, "Why the version is yanked, shown with it (1 to 500 characters once trimmed)")
})).annotate({ identifier: "YankNodeVersionRequest" })

const PublisherNodePath = Schema.Struct({ publisherId: field(PathParam, "Identifier of the publisher"), nodeId: field(PathParam, "Identifier of the node") })
const PublisherVersionPath = Schema.Struct({ publisherId: field(PathParam, "Identifier of the publisher"), nodeId: field(PathParam, "Identifier of the node"), versionId: field(PathParam, "The version string (such as 1.2.0) or the version's id") })

/** Publishers' own management of their nodes and versions (bearer JWT of an owner, admin or site admin). */
export class PublishingApi extends HttpApiGroup.make("publishing")
  .add(
    HttpApiEndpoint.post("createNode", "/publishers/:publisherId/nodes", {
      params: { publisherId: field(PathParam, "Identifier of the publisher") },
      payload: NodeCreate,
      success: Node.pipe(HttpApiSchema.status(201)),
      error: [Forbidden, PublisherBanned, NotFound, NodeExists]
    })
      .annotate(OpenApi.Summary, "Create a node")
      .annotate(OpenApi.Description, "Owners, admins and site admins. 409 node_exists when the id is taken.")
  )
  .add(
    HttpApiEndpoint.put("updateNode", "/publishers/:publisherId/nodes/:nodeId", {
      params: PublisherNodePath,
      payload: NodeUpdate,
      success: Node,
      error: [Forbidden, NodeBanned, NotFound]
    })
      .annotate(OpenApi.Summary, "Update a node's metadata")
  )
  .add(
    HttpApiEndpoint.delete("deleteNode", "/publishers/:publisherId/nodes/:nodeId", {
      params: PublisherNodePath,
      success: HttpApiSchema.NoContent,
      error: [Forbidden, NotFound, Conflict]
    })
      .annotate(OpenApi.Summary, "Delete a node (soft: NodeStatusDeleted)")
  )
  .add(
    HttpApiEndpoint.put("updateVersion", "/publishers/:publisherId/nodes/:nodeId/versions/:versionId", {
      params: PublisherVersionPath,
      payload: VersionUpdate,
      success: NodeVersion,
      error: [Forbidden, NotFound]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Change a version's changelog or deprecation")
  )
  .add(
    HttpApiEndpoint.delete("deleteVersion", "/publishers/:publisherId/nodes/:nodeId/versions/:versionId", {
      params: PublisherVersionPath,
      success: HttpApiSchema.NoContent,
      error: [Forbidden, NotFound, Conflict]
    })
      .annotate(OpenApi.Summary, "Delete a version (soft: NodeVersionStatusDeleted; its number is never reused)")
  )
  .add(
    HttpApiEndpoint.post("yankNodeVersion", "/publishers/:publisherId/nodes/:nodeId/versions/:versionId/yank", {
      params: PublisherVersionPath,
      payload: YankRequest,
      success: NodeVersion,
      error: [Forbidden, NotFound]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Yank a version")
      .annotate(
        OpenApi.Description,
        "Owners, admins and site admins; any version that is not deleted. The version keeps its status and stays " +
          "installable by its exact version, but is no longer the node's latest_version nor chosen by an install " +
          "without a version; it shows yanked: true and yanked_reason. Yanking a yanked version replaces its reason."
      )
  )
  .add(
    HttpApiEndpoint.post("unyankNodeVersion", "/publishers/:publisherId/nodes/:nodeId/versions/:versionId/unyank", {
      params: PublisherVersionPath,
      success: NodeVersion,
      error: [Forbidden, NotFound]
    })
      .annotate(OpenApi.Summary, "Undo a version's yank")
      .annotate(
        OpenApi.Description,
        "Owners, admins and site admins; any version that is not deleted. The version is yanked: false again, without " +
          "yanked_reason; a version that is not yanked is answered as it is (200)."
      )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Publishing")
{}

/** The publish call: a personal access token in the body, or a bearer JWT of an owner, admin or site admin. */
export class PublishApi extends HttpApiGroup.make("publish")
  .add(
    HttpApiEndpoint.post("publishVersion", "/publishers/:publisherId/nodes/:nodeId/versions", {
      params: {
        publisherId: field(PathParam, "Identifier of the publisher"),
        nodeId: field(NodeId, "Identifier of the node; the node is created when the registry has none of that id")
      },
      payload: PublishRequest,
      success: PublishResponse.pipe(HttpApiSchema.status(201)),
      error: [
        Unauthorized,
        InvalidToken,
        Forbidden,
        PublisherBanned,
        NodeBanned,
        NotFound,
        NodeExists,
        NodeDeleted,
        VersionExists,
        RateLimited
      ]
    })
      .annotate(OpenApi.Summary, "Publish a node version")
      .annotate(
        OpenApi.Description,
        "Creates the node (or updates it from `node`) and the version as NodeVersionStatusPending; PUT the zip to `signedUrl`. " +
          "Safe to retry: the same request again (the same `node` and `node_version`; the token may differ) for a version that " +
          "exists and is not deleted changes nothing and answers 201 with that version as it is now and a fresh `signedUrl`, " +
          "marked with the header Idempotent-Replayed: true. " +
          "Errors: 401 invalid_token (wrong or revoked personal access token, or a publish token that expired or is not for this node), 403 publisher_banned / node_banned, " +
          "409 version_exists (the number exists with other content, or was deleted: numbers are never reused), " +
          "409 node_exists (another publisher's id), 409 node_deleted."
      )
  )
  .add(
    HttpApiEndpoint.post("createUploadUrl", "/publishers/:publisherId/nodes/:nodeId/versions/:versionId/upload-url", {
      params: PublisherVersionPath,
      payload: UploadUrlRequest,
      success: UploadUrlResponse,
      error: [Unauthorized, InvalidToken, Forbidden, PublisherBanned, NodeBanned, NotFound, VersionImmutable, RateLimited]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Get a fresh upload URL for a Pending version")
      .annotate(
        OpenApi.Description,
        "Authenticated as the publish call is (a personal access token in the body, or a bearer token of an owner, admin " +
          "or site admin). For a version still NodeVersionStatusPending (never uploaded, or its upload refused with 422): " +
          "a fresh `signedUrl`, as the publish call gives. 409 version_immutable once the version left Pending; 404 for " +
          "an unknown or deleted version."
      )
  )
  .middleware(OptionalAuthentication)
  .annotate(OpenApi.Title, "Publishing")
{}

const ArchivePath = Schema.Struct({ nodeId: field(PathParam, "Identifier of the node"), version: field(PathParam, "The version string, such as 1.2.0") })

/** Archives: uploads through signed URLs, downloads of installable versions. No bearer token. */
export class ArchivesApi extends HttpApiGroup.make("archives")
  .add(
    HttpApiEndpoint.put("uploadArchive", "/archives/:nodeId/:version", {
      params: ArchivePath,
      query: {
        expires: optionalField(Text(20), "When the signed URL expires, in seconds since the Unix epoch"),
        signature: optionalField(Text(100), "Signature of the URL, as the signedUrl of the publish call carries it")
      },
      success: NodeVersion,
      error: [
        InvalidSignature,
        UrlExpired,
        NodeBanned,
        NotFound,
        VersionImmutable,
        PayloadTooLarge,
        UnsupportedMediaType,
        ArchiveRejected
      ]
    })
      .annotate(OpenApi.Summary, "Upload a version's zip archive to its signed URL")
      .annotate(
        OpenApi.Description,
        "The body is the zip (Content-Type: application/zip), streamed to storage. The checks run when it is complete: " +
          "the version becomes NodeVersionStatusActive, or the upload is refused with 422 archive_rejected, `details` " +
          "listing each failed check; then nothing is stored and the version stays NodeVersionStatusPending for a " +
          "corrected upload (to this URL while it lasts, or to a fresh one from CreateUploadUrl). " +
          "Safe to retry: the same bytes again, whatever the version's status since (unless deleted), change nothing and " +
          "answer 200 with the version as it is now, marked with the header Idempotent-Replayed: true. " +
          "403 invalid_signature / url_expired, 409 version_immutable once the version left Pending (other bytes), " +
          "413 beyond the size limit."
      )
      // the body is read as a stream by the handler, not declared as a payload (which would buffer it)
      .annotate(StreamedBody, true)
      .annotate(OpenApi.Override, {
        requestBody: { required: true, content: { "application/zip": { schema: { type: "string", format: "binary" } } } }
      })
  )
  .add(
    HttpApiEndpoint.get("downloadArchive", "/archives/:nodeId/:version", {
      params: ArchivePath,
      success: Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array({ contentType: "application/zip" })),
      error: [NodeBanned, NotFound, RangeNotSatisfiable]
    })
      .annotate(OpenApi.Summary, "Download a version's archive (installable versions only)")
      .annotate(
        OpenApi.Description,
        "An archive never changes once its version is installable: Cache-Control: public, max-age=31536000, immutable, " +
          "a strong ETag and Last-Modified. If-None-Match answers 304. One byte range (Range: bytes=a-b, a- or -n) " +
          "answers 206 with Content-Range, under If-Range when given; several ranges answer the whole archive; a range " +
          "past the end answers 416 with Content-Range: bytes */size. HEAD answers the headers alone. " +
          "When the archives are in an object store (STORAGE=s3) the answer is 302 Found, Cache-Control: no-store, to the " +
          "store itself, which answers as above: a URL presigned for the request's method (GET or HEAD) that lives 15 " +
          "minutes, or the archive under ARCHIVE_PUBLIC_BASE_URL when that is set."
      )
  )
  .annotate(OpenApi.Title, "Publishing")
{}
