import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authentication, OptionalAuthentication } from "../Auth/Authentication.ts"
import { Node } from "../Domain/Node.ts"
import { MemberAdd, Publisher, PublisherCreate, PublisherMember, PublisherUpdate } from "../Domain/Publisher.ts"
import { NonEmptyText, PathParam } from "../Domain/Schemas.ts"
import { BadRequest, Conflict, Forbidden, NotFound, RateLimited, ServiceUnavailable } from "../Errors.ts"

const PublisherPath = Schema.Struct({ publisherId: PathParam })

/** Publisher records that anyone may read; members see the member list. */
export class PublicPublishersApi extends HttpApiGroup.make("publicPublishers")
  .add(
    HttpApiEndpoint.get("getPublisher", "/publishers/:publisherId")
      .setPath(PublisherPath)
      .addSuccess(Publisher)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Get a publisher")
      .annotate(OpenApi.Description, "Public. `members` (with e-mail addresses) is shown to members of the publisher and site admins only.")
  )
  .middleware(OptionalAuthentication)
  .annotate(OpenApi.Title, "Publishers")
{}

export class PublishersApi extends HttpApiGroup.make("publishers")
  .add(
    HttpApiEndpoint.post("createPublisher", "/publishers")
      .setPayload(PublisherCreate)
      .addSuccess(Publisher, { status: 201 })
      .addError(BadRequest)
      .addError(Conflict)
      .annotate(OpenApi.Summary, "Create a publisher; the caller becomes its owner")
  )
  .add(
    HttpApiEndpoint.put("updatePublisher", "/publishers/:publisherId")
      .setPath(PublisherPath)
      .setPayload(PublisherUpdate)
      .addSuccess(Publisher)
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(OpenApi.Summary, "Update a publisher")
      .annotate(OpenApi.Description, "Owners, admins and site admins. `status` is for site admins only; `id`, if sent, must be the path's; `members` and `createdAt` are read-only and ignored.")
  )
  .add(
    HttpApiEndpoint.get("listMyPublishers", "/users/publishers")
      .addSuccess(Schema.Array(Publisher))
      .annotate(OpenApi.Summary, "The caller's publishers")
  )
  .add(
    HttpApiEndpoint.post("addMember", "/publishers/:publisherId/members")
      .setPath(PublisherPath)
      .setPayload(MemberAdd)
      .addSuccess(PublisherMember, { status: 201 })
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(OpenApi.Summary, "Add a member (owners only); an existing member's role is changed")
  )
  .add(
    HttpApiEndpoint.del("removeMember", "/publishers/:publisherId/members/:userId")
      .setPath(Schema.Struct({ publisherId: PathParam, userId: PathParam }))
      .addSuccess(HttpApiSchema.NoContent)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(OpenApi.Summary, "Remove a member (owners only); the last owner stays")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Publishers")
{}

/** Answer of a successful claim. */
export const ClaimResult = Schema.Struct({ message: Schema.String, node: Node }).annotations({ identifier: "ClaimResult" })

export class ClaimApi extends HttpApiGroup.make("claims")
  .add(
    HttpApiEndpoint.post("claimMyNode", "/publishers/:publisherId/nodes/:nodeId/claim-my-node")
      .setPath(Schema.Struct({ publisherId: PathParam, nodeId: PathParam }))
      .setPayload(Schema.Struct({ VCS_TOKEN: NonEmptyText(1000) }).annotations({ identifier: "ClaimRequest" }))
      .addSuccess(ClaimResult)
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Conflict)
      .addError(RateLimited)
      .addError(ServiceUnavailable)
      .annotate(OpenApi.Summary, "Claim an unclaimed node whose repository the caller administers")
      .annotate(OpenApi.Description, "Owners and admins of the publisher. The repository host is asked, with VCS_TOKEN, who the token's user is and whether they administer the node's repository. Errors: 403 invalid_vcs_token, 403 repository_not_owned, 409 node_already_claimed, 429 when the repository host rate-limits, 503 when it is down.")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Publishers")
{}
