import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import {
  Forbidden,
  InvalidVcsToken,
  NodeAlreadyClaimed,
  NotFound,
  RateLimited,
  RepositoryNotOwned,
  RepositoryNotRecognised,
  ServiceUnavailable
} from "../Domain/ApiErrors.ts"
import { Authentication } from "../Domain/Auth.ts"
import { Node } from "../Domain/Node.ts"
import { field, NonEmptyText, PathParam, refusingBody, refusingUnknownFields } from "../Domain/Schemas.ts"

/** Answer of a successful claim. */
export class ClaimResult extends Schema.Class<ClaimResult>("ClaimResult")({
  message: field(Schema.String, "Confirmation that the node was claimed"),
  node: field(Node, "The claimed node, now the publisher's")
}) {}

export class ClaimApi extends HttpApiGroup.make("claims")
  .add(
    HttpApiEndpoint.post("claimMyNode", "/publishers/:publisherId/nodes/:nodeId/claim-my-node", {
      params: Schema.Struct({ publisherId: field(PathParam, "Identifier of the publisher"), nodeId: field(PathParam, "Identifier of the node") }),
      payload: refusingUnknownFields(Schema.Struct({
        VCS_TOKEN: field(
          NonEmptyText(1000),
          "A token for the repository host, used to verify that the user administers the node's repository"
        )
      })).annotate({ identifier: "ClaimRequest" }),
      success: ClaimResult,
      error: [Forbidden, InvalidVcsToken, RepositoryNotOwned, NotFound, NodeAlreadyClaimed, RepositoryNotRecognised, RateLimited, ServiceUnavailable]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Claim an unclaimed node whose repository the caller administers")
      .annotate(OpenApi.Description, "Owners and admins of the publisher. VCS_TOKEN may also come under the repository host's word (REPOHOST_NAME_ALIAS: GH_TOKEN by default). The repository host is asked, with VCS_TOKEN, who the token's user is and whether they administer the node's repository. Errors: 403 invalid_vcs_token, 403 repository_not_owned, 409 node_already_claimed, 429 when the repository host rate-limits, 503 when it is down.")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Publishers")
{}
