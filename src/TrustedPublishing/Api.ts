/**
 * Trusted publishing: the CI workflows a node's publisher trusts (owners and admins, bearer
 * token), and the exchange of a workflow's OIDC identity token for a publish token (no other
 * credential: the identity token is the credential).
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import { Conflict, Forbidden, IdentityTokenRefused, NotFound, PublisherBanned, RateLimited, ServiceUnavailable } from "../Domain/ApiErrors.ts"
import { Authentication } from "../Domain/Auth.ts"
import {
  PublishToken,
  TrustedPublisher,
  TrustedPublisherCreate,
  TrustedPublishingAudience,
  TrustedPublishingExchange
} from "../Domain/TrustedPublisher.ts"
import { field, PathParam, refusingBody } from "../Domain/Schemas.ts"

const NodePath = Schema.Struct({
  publisherId: field(PathParam, "Identifier of the publisher"),
  nodeId: field(PathParam, "Identifier of the node (one that does not exist yet is allowed: its first publish creates it)")
})

export class TrustedPublishersApi extends HttpApiGroup.make("trustedPublishers")
  .add(
    HttpApiEndpoint.post("createTrustedPublisher", "/publishers/:publisherId/nodes/:nodeId/trusted-publishers", {
      params: NodePath,
      payload: TrustedPublisherCreate,
      success: TrustedPublisher.pipe(HttpApiSchema.status(201)),
      error: [Forbidden, PublisherBanned, NotFound, Conflict]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Trust a CI workflow to publish a node")
      .annotate(
        OpenApi.Description,
        "Owners and admins. The workflow's identity tokens (issuer, repository, workflow file, and when given the " +
          "environment and a ref pattern) can then be exchanged for a publish token of this node. The issuer must be " +
          "one of TRUSTED_PUBLISHING_ISSUERS (400 otherwise). A node may have 20; 409 conflict beyond. 403 publisher_banned for a banned publisher."
      )
  )
  .add(
    HttpApiEndpoint.get("listTrustedPublishers", "/publishers/:publisherId/nodes/:nodeId/trusted-publishers", {
      params: NodePath,
      success: Schema.Array(TrustedPublisher),
      error: [Forbidden, NotFound]
    })
      .annotate(OpenApi.Summary, "List the CI workflows trusted to publish a node")
  )
  .add(
    HttpApiEndpoint.delete("deleteTrustedPublisher", "/publishers/:publisherId/nodes/:nodeId/trusted-publishers/:trustedPublisherId", {
      params: Schema.Struct({ ...NodePath.fields, trustedPublisherId: field(PathParam, "Identifier of the trusted publisher") }),
      success: HttpApiSchema.NoContent,
      error: [Forbidden, NotFound]
    })
      .annotate(OpenApi.Summary, "Stop trusting a CI workflow")
      .annotate(OpenApi.Description, "Owners and admins. Publish tokens it allowed stop working for the node at once.")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Trusted publishing")
{}

export class TrustedPublishingApi extends HttpApiGroup.make("trustedPublishing")
  .add(
    HttpApiEndpoint.post("exchangeTrustedPublishingToken", "/trusted-publishing/exchange", {
      payload: TrustedPublishingExchange,
      success: PublishToken,
      error: [IdentityTokenRefused, PublisherBanned, RateLimited, ServiceUnavailable]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Exchange a CI identity token for a publish token")
      .annotate(
        OpenApi.Description,
        "No other credential. The OIDC identity token is verified with its issuer's published keys (issuer, signature, " +
          "audience, exp, nbf), accepted once (jti), and its claims matched against the trusted publishers of its " +
          "repository. The answer's token works 15 minutes, as `personal_access_token` of the publish call and of " +
          "CreateUploadUrl, for the nodes listed. 401 identity_token_refused names the claim that did not hold; " +
          "403 publisher_banned when every matched node's publisher is banned; 503 when the issuer's keys cannot be fetched."
      )
  )
  .add(
    HttpApiEndpoint.get("getTrustedPublishingAudience", "/trusted-publishing/audience", {
      success: TrustedPublishingAudience
    })
      .annotate(OpenApi.Summary, "The audience identity tokens must be issued for, and the trusted issuers")
  )
  .annotate(OpenApi.Title, "Trusted publishing")
{}
