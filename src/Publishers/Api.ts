import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import {
  BadRequest,
  Conflict,
  Forbidden,
  LastOwner,
  NotFound,
  PublisherExists,
  PublisherIdReserved,
  UserNotFound
} from "../Domain/ApiErrors.ts"
import { Authentication, OptionalAuthentication } from "../Domain/Auth.ts"
import { MemberAdd, Publisher, PublisherCreate, PublisherMember, PublisherUpdate } from "../Domain/Publisher.ts"
import { field, PathParam } from "../Domain/Schemas.ts"

const PublisherPath = Schema.Struct({ publisherId: field(PathParam, "Identifier of the publisher") })

/** Publisher records that anyone may read; members see the member list. */
export class PublicPublishersApi extends HttpApiGroup.make("publicPublishers")
  .add(
    HttpApiEndpoint.get("getPublisher", "/publishers/:publisherId")
      .setPath(PublisherPath)
      .addSuccess(Publisher)
      .addError(BadRequest)
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
      .addError(PublisherExists)
      .addError(PublisherIdReserved)
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
      .addError(UserNotFound)
      .addError(LastOwner)
      .annotate(OpenApi.Summary, "Add a member (owners only); an existing member's role is changed")
  )
  .add(
    HttpApiEndpoint.del("removeMember", "/publishers/:publisherId/members/:userId")
      .setPath(Schema.Struct({ publisherId: field(PathParam, "Identifier of the publisher"), userId: field(PathParam, "Identifier of the member's user") }))
      .addSuccess(HttpApiSchema.NoContent)
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(LastOwner)
      .annotate(OpenApi.Summary, "Remove a member (owners only); the last owner stays")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Publishers")
{}
