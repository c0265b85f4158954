import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import { clampedTo, Page, PositiveInt } from "../Catalog/Api.ts"
import {
  Conflict,
  Forbidden,
  LastOwner,
  NotFound,
  PublisherExists,
  PublisherHasNodes,
  PublisherIdReserved,
  UserNotFound
} from "../Domain/ApiErrors.ts"
import { Authentication, OptionalAuthentication } from "../Domain/Auth.ts"
import {
  EditPermission,
  MemberAdd,
  Publisher,
  PublisherAvailability,
  PublisherCreate,
  PublisherId,
  PublisherMember,
  PublisherUpdate
} from "../Domain/Publisher.ts"
import { field, PathParam, refusingBody } from "../Domain/Schemas.ts"

const PublisherPath = Schema.Struct({ publisherId: field(PathParam, "Identifier of the publisher") })

/** Publishers per page of `GET /publishers`: clients that know no paging get the largest page. */
export const maxPublishersPerPage = 500

/**
 * `limit` of `GET /publishers`: `maxPublishersPerPage` when absent, larger values served as it.
 * The answer is a plain array (what registry-web reads), so a page shorter than `limit` is the last.
 */
const PublishersLimit = Schema.optional(
  PositiveInt(Number.MAX_SAFE_INTEGER, {
    description: `Publishers per page (default and largest served: ${maxPublishersPerPage}); a shorter page is the last`,
    default: maxPublishersPerPage
  }).pipe(Schema.decodeTo(Schema.Int, clampedTo(maxPublishersPerPage)))
)

/** Publisher records that anyone may read; members see the member list. */
export class PublicPublishersApi extends HttpApiGroup.make("publicPublishers")
  .add(
    HttpApiEndpoint.get("validatePublisher", "/publishers/validate", {
      query: Schema.Struct({
        username: field(PublisherId, "The publisher id to check: a lowercase letter, then 1 to 63 lowercase letters, digits or '-'")
      }),
      success: PublisherAvailability
    })
      .annotate(OpenApi.Summary, "Whether a publisher id is available")
      .annotate(OpenApi.Description, "Public. Reserved ids and ids of existing publishers (deleted ones included: their ids are never reused) are unavailable; a malformed id is 400.")
  )
  .add(
    HttpApiEndpoint.get("listPublishers", "/publishers", {
      query: Schema.Struct({ page: Page, limit: PublishersLimit }),
      success: Schema.Array(Publisher)
    })
      .annotate(OpenApi.Summary, "List publishers, by id")
      .annotate(OpenApi.Description, `Public, paginated by \`page\` and \`limit\`; the answer is a plain array. Without \`limit\`, a page holds ${maxPublishersPerPage} publishers. Banned publishers are listed to site admins only; deleted ones to nobody. \`members\` is never included.`)
  )
  .add(
    HttpApiEndpoint.get("getPublisher", "/publishers/:publisherId", {
      params: PublisherPath,
      success: Publisher,
      error: [NotFound]
    })
      .annotate(OpenApi.Summary, "Get a publisher")
      .annotate(OpenApi.Description, "Public. `members` (with e-mail addresses) is shown to members of the publisher and site admins only.")
  )
  .middleware(OptionalAuthentication)
  .annotate(OpenApi.Title, "Publishers")
{}

export class PublishersApi extends HttpApiGroup.make("publishers")
  .add(
    HttpApiEndpoint.post("createPublisher", "/publishers", {
      payload: PublisherCreate,
      success: Publisher.pipe(HttpApiSchema.status(201)),
      error: [PublisherExists, PublisherIdReserved]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Create a publisher; the caller becomes its owner")
  )
  .add(
    HttpApiEndpoint.put("updatePublisher", "/publishers/:publisherId", {
      params: PublisherPath,
      payload: PublisherUpdate,
      success: Publisher,
      error: [Forbidden, NotFound, Conflict]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Update a publisher")
      .annotate(OpenApi.Description, "Owners, admins and site admins. `status` is for site admins only; `id`, if sent, must be the path's; `members` and `createdAt` are read-only and ignored.")
  )
  .add(
    HttpApiEndpoint.delete("deletePublisher", "/publishers/:publisherId", {
      params: PublisherPath,
      success: HttpApiSchema.NoContent,
      error: [Forbidden, NotFound, PublisherHasNodes, Conflict]
    })
      .annotate(OpenApi.Summary, "Delete a publisher (owners and site admins)")
      .annotate(OpenApi.Description, "Refused with 409 `publisher_has_nodes` while the publisher has nodes that are not deleted (the message gives their number): delete them first. The deletion is soft and loses nothing: deleted nodes keep their versions and archives, members and tokens stay recorded. Its personal access tokens are revoked, and its id is never reused. The reserved publisher `unclaimed` cannot be deleted (409).")
  )
  .add(
    HttpApiEndpoint.get("getPermissionOnPublisher", "/publishers/:publisherId/permissions", {
      params: PublisherPath,
      success: EditPermission,
      error: [NotFound]
    })
      .annotate(OpenApi.Summary, "Whether the caller may edit the publisher")
      .annotate(OpenApi.Description, "`canEdit` is exactly the check of the publisher's writes (PUT /publishers/{publisherId}, its nodes and versions): owners, admins and site admins.")
  )
  .add(
    HttpApiEndpoint.get("getPermissionOnPublisherNodes", "/publishers/:publisherId/nodes/:nodeId/permissions", {
      params: Schema.Struct({
        publisherId: field(PathParam, "Identifier of the publisher"),
        nodeId: field(PathParam, "Identifier of the publisher's node")
      }),
      success: EditPermission,
      error: [NotFound]
    })
      .annotate(OpenApi.Summary, "Whether the caller may edit the publisher's node")
      .annotate(OpenApi.Description, "`canEdit` is exactly the check of the node's writes: owners, admins and site admins. A node that is not the publisher's, or is deleted, is 404, as for its writes.")
  )
  .add(
    HttpApiEndpoint.get("listMyPublishers", "/users/publishers", {
      success: Schema.Array(Publisher)
    })
      .annotate(OpenApi.Summary, "The caller's publishers")
  )
  .add(
    HttpApiEndpoint.post("addMember", "/publishers/:publisherId/members", {
      params: PublisherPath,
      payload: MemberAdd,
      success: PublisherMember.pipe(HttpApiSchema.status(201)),
      error: [Forbidden, NotFound, UserNotFound, LastOwner]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Add a member (owners only); an existing member's role is changed")
  )
  .add(
    HttpApiEndpoint.delete("removeMember", "/publishers/:publisherId/members/:userId", {
      params: Schema.Struct({ publisherId: field(PathParam, "Identifier of the publisher"), userId: field(PathParam, "Identifier of the member's user") }),
      success: HttpApiSchema.NoContent,
      error: [Forbidden, NotFound, LastOwner]
    })
      .annotate(OpenApi.Summary, "Remove a member (owners only); the last owner stays")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Publishers")
{}
