import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Schema, Struct } from "effect"
import { ArchiveMissing, Conflict, Forbidden, NodeExists, NotFound } from "../Domain/ApiErrors.ts"
import { Authentication } from "../Domain/Auth.ts"
import { Node, NodeId, NodeStatus, NodeVersion, NodeVersionStatus } from "../Domain/Node.ts"
import { Publisher, PublisherStatus } from "../Domain/Publisher.ts"
import { AuditLog, HeldVersions, RescanQueued, ReviewDecision } from "../Domain/Moderation.ts"
import { optionalParam, Page, PageSize } from "../Catalog/Api.ts"
import { nodeFields, VersionCreate } from "../Publishing/Api.ts"
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

/**
 * Body of `POST /admin/nodes`: a node waiting in the `unclaimed` publisher for its author. Other
 * fields are ignored: the admin front-end's form sends `category` too.
 */
export const AdminNodeCreate = ignoringUnknownFields(Schema.Struct({
  id: field(NodeId, "Unique identifier of the node: letters, digits, '.', '_' and '-', starting with a letter or digit"),
  repository: field(NonEmptyText(2000), "URL of the node's source repository, whose administrators may claim the node"),
  ...Struct.pick(nodeFields, ["name", "description", "author", "license", "icon", "tags"])
})).annotate({ identifier: "AdminNodeCreate" })

/**
 * Body of `PUT /admin/nodes/{nodeId}`: moderation fields and the node's host compatibility. Other
 * fields are ignored: the admin front-end sends the node it read with its changes (`{...node, status}`).
 */
export const AdminNodeUpdate = ignoringUnknownFields(Schema.Struct({
  status: optionalField(NodeStatus, "New status of the node"),
  status_detail: optionalField(Text(2000), "Why the node has its status"),
  tags_admin: optionalField(TextList(50, 100), "Admin-only tags for security warnings and admin metadata"),
  // stored as a PostgreSQL integer: a larger value is a 400, not a failed statement
  search_ranking: optionalField(
    Schema.Int.check(Schema.isBetween({ minimum: -2_147_483_648, maximum: 2_147_483_647 })),
    "Value used to sort search results; lower ranks first"
  ),
  preempted_host_node_names: optionalField(TextList(500, 200), "Names of host-nodes that this node preempts"),
  // the admin front-end copies a version's compatibility onto its node
  ...Struct.pick(nodeFields, ["supported_host_version", "supported_host_frontend_version"])
})).annotate({ identifier: "AdminNodeUpdate" })

/**
 * Body of `PUT /admin/nodes/{nodeId}/versions/{version}`: a status move and the version's
 * compatibility, every field optional (the admin front-end's compatibility editor sends the
 * compatibility alone). Other fields are ignored, as on every route that takes the clients'
 * alias names: with an alias setting off, those names are unknown, not refused.
 */
export const AdminNodeVersionUpdate = ignoringUnknownFields(Schema.Struct({
  status: optionalField(NodeVersionStatus, "New status of the version"),
  status_reason: optionalField(Text(2000), "Why the version has its status; without status, it explains the current one"),
  ...Struct.pick(VersionCreate.fields, ["supported_os", "supported_accelerators", "supported_host_version", "supported_host_frontend_version"])
})).annotate({ identifier: "AdminNodeVersionUpdate" })

/**
 * The signed-in user, as `GET /users` answers it: the web front-end gates its admin pages on
 * `isAdmin` and shows `email` and `name` (components/common/HOC/authAdmin.tsx, Header/ProfileDropdown.tsx).
 */
export const SignedInUser = Schema.Struct({
  id: field(Schema.String, "Identifier of the user: the `sub` of their token"),
  email: optionalField(Schema.String, "E-mail address of the user, from their token"),
  name: optionalField(Schema.String, "Name of the user, from their token"),
  isAdmin: field(Schema.Boolean, "Whether the user is a site admin")
}).annotate({ identifier: "User" })

/** A token minted by `POST /admin/generate-token`: the front-end stores `token` until `expires_at`. */
export const AdminToken = Schema.Struct({
  token: field(Schema.String, "A bearer JWT for the calling site admin"),
  expires_at: field(Schema.String, "When the token expires (ISO 8601)")
}).annotate({ identifier: "AdminToken" })

const PublisherPath = Schema.Struct({ publisherId: field(PathParam, "Identifier of the publisher") })

/** Held versions and audit entries per page: the default and the most served. */
export const heldPageSize = { fallback: 50, max: 200 } as const

export class AdminApi extends HttpApiGroup.make("admin")
  .add(
    HttpApiEndpoint.get("getUser", "/users", {
      success: SignedInUser
    })
      .annotate(OpenApi.Summary, "The signed-in user, with whether they are a site admin")
  )
  .add(
    HttpApiEndpoint.post("banPublisher", "/publishers/:publisherId/ban", {
      params: PublisherPath,
      success: HttpApiSchema.NoContent,
      error: [Forbidden, NotFound, Conflict]
    })
      .annotate(OpenApi.Summary, "Ban a publisher (site admins); its nodes leave every listing")
      .annotate(
        OpenApi.Description,
        "The move of `PUT /admin/publishers/{publisherId}` to PublisherStatusBanned, with no body either way. " +
          "The reserved `unclaimed` publisher stays active (409)."
      )
  )
  .add(
    HttpApiEndpoint.post("banPublisherNode", "/publishers/:publisherId/nodes/:nodeId/ban", {
      params: Schema.Struct({ publisherId: field(PathParam, "Identifier of the publisher"), nodeId: field(PathParam, "Identifier of the node") }),
      success: HttpApiSchema.NoContent,
      error: [Forbidden, NotFound, Conflict]
    })
      .annotate(OpenApi.Summary, "Ban a publisher's node (site admins)")
      .annotate(
        OpenApi.Description,
        "The move of `PUT /admin/nodes/{nodeId}` to NodeStatusBanned, with no body either way; a node that is not the publisher's is 404."
      )
  )
  .add(
    HttpApiEndpoint.post("generateAdminToken", "/admin/generate-token", {
      success: AdminToken,
      error: [Forbidden, Conflict]
    })
      .annotate(OpenApi.Summary, "Mint a short-lived bearer token for the calling site admin")
      .annotate(
        OpenApi.Description,
        "The token is the caller's own (its `sub` is theirs), lives at most an hour (less when AUTH_MAX_TOKEN_LIFETIME_SECONDS is lower) " +
          "and is logged without its text. 409 when the service verifies tokens of another issuer (AUTH_JWKS_URL): it cannot sign those."
      )
  )
  .add(
    HttpApiEndpoint.post("createUnclaimedNode", "/admin/nodes", {
      payload: AdminNodeCreate,
      success: Node.pipe(HttpApiSchema.status(201)),
      error: [Forbidden, NodeExists]
    })
      .annotate(OpenApi.Summary, "Create an unclaimed node (site admins)")
  )
  .add(
    HttpApiEndpoint.put("moderateNode", "/admin/nodes/:nodeId", {
      params: Schema.Struct({ nodeId: field(PathParam, "Identifier of the node") }),
      payload: AdminNodeUpdate,
      success: Node,
      error: [Forbidden, NotFound, Conflict]
    })
      .annotate(OpenApi.Summary, "Moderate a node (site admins): status, tags_admin, search_ranking, preempted host-node names, host compatibility")
  )
  .add(
    HttpApiEndpoint.put("moderatePublisher", "/admin/publishers/:publisherId", {
      params: Schema.Struct({ publisherId: field(PathParam, "Identifier of the publisher") }),
      payload: refusingUnknownFields(Schema.Struct({ status: field(PublisherStatus, "New status of the publisher") }))
        .annotate({ identifier: "AdminPublisherUpdate" }),
      success: Publisher,
      error: [Forbidden, NotFound, Conflict]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Ban or unban a publisher (site admins); a banned publisher's nodes leave every listing")
  )
  .add(
    HttpApiEndpoint.put("moderateVersion", "/admin/nodes/:nodeId/versions/:version", {
      params: Schema.Struct({ nodeId: field(PathParam, "Identifier of the node"), version: field(PathParam, "The version string (such as 1.2.0) or the version's id") }),
      payload: AdminNodeVersionUpdate,
      success: NodeVersion,
      error: [Forbidden, NotFound, Conflict, ArchiveMissing]
    })
      .annotate(OpenApi.Summary, "Set a version's status with a reason, or its compatibility (site admins)")
      .annotate(
        OpenApi.Description,
        "Fields left out are unchanged; an empty body changes nothing and answers the version. Status moves of CONTRACT.md's table only " +
          "(409 otherwise); NodeVersionStatusActive needs an uploaded archive (409 archive_missing). The compatibility fields replace " +
          "the version's own, which the host_version filter of GET /nodes reads; a deleted version's compatibility is 404. " +
          "A status move and the compatibility are one change: both or neither."
      )
  )
  .add(
    HttpApiEndpoint.get("listHeldVersions", "/admin/held-versions", {
      query: Schema.Struct({
        page: Page,
        limit: PageSize(heldPageSize.max, heldPageSize.fallback, "Versions"),
        publisher_id: optionalParam(Schema.String, "Only this publisher's versions"),
        rule: optionalParam(Schema.String, "Only versions with a finding of this rule (ListScanRules)")
      }),
      success: HeldVersions,
      error: [Forbidden]
    })
      .annotate(OpenApi.Summary, "Versions held by their scan, with their findings (site admins)")
      .annotate(OpenApi.Description, "Oldest hold first, filterable by publisher and rule; each with whether its publisher asked for a review.")
  )
  .add(
    HttpApiEndpoint.post("decideVersionReview", "/admin/nodes/:nodeId/versions/:versionId/review/decision", {
      params: Schema.Struct({
        nodeId: field(PathParam, "Identifier of the node"),
        versionId: field(PathParam, "The version string (such as 1.2.0) or the version's id")
      }),
      payload: ReviewDecision,
      success: NodeVersion,
      error: [Forbidden, NotFound, Conflict, ArchiveMissing]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Approve or reject a held version (site admins)")
      .annotate(
        OpenApi.Description,
        "For a held version (NodeVersionStatusFlagged; 409 otherwise). Approve: it goes Active. Reject: it is banned, " +
          "the reason its status_reason. Recorded in the audit log and the version's pipeline; answers the version."
      )
  )
  .add(
    HttpApiEndpoint.post("rescanAllVersions", "/admin/rescan", {
      success: RescanQueued.pipe(HttpApiSchema.status(202)),
      error: [Forbidden]
    })
      .annotate(OpenApi.Summary, "Rescan every archive with the current rule set, in the background (site admins)")
      .annotate(
        OpenApi.Description,
        "After a rule change: a durable job scans, in batches, every version with an archive whose latest scan is of another " +
          "rule set. An Active version the new rules hold goes Flagged; one held by its scan and not yet reviewed that they pass " +
          "goes Active; decided versions keep their status. Paced to a fiftieth of a core; asking again restarts it, skipping what is done."
      )
  )
  .add(
    HttpApiEndpoint.get("listAuditLog", "/admin/audit-log", {
      query: Schema.Struct({ page: Page, limit: PageSize(heldPageSize.max, heldPageSize.fallback, "Entries") }),
      success: AuditLog,
      error: [Forbidden]
    })
      .annotate(OpenApi.Summary, "Every moderation decision: who, when, what, why (site admins)")
      .annotate(OpenApi.Description, "Newest first: reviews' decisions, and versions' statuses set directly (PUT /admin/nodes/{nodeId}/versions/{version}).")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Site administration")
{}
