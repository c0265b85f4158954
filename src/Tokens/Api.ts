import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { BadRequest, Forbidden, NotFound } from "../Domain/ApiErrors.ts"
import { Authentication } from "../Domain/Auth.ts"
import { field, PathParam } from "../Domain/Schemas.ts"
import { CreatedToken, TokenCreate, TokenSummary } from "../Domain/Token.ts"

const PublisherPath = Schema.Struct({ publisherId: field(PathParam, "Identifier of the publisher") })

export class TokensApi extends HttpApiGroup.make("tokens")
  .add(
    HttpApiEndpoint.post("createToken", "/publishers/:publisherId/tokens")
      .setPath(PublisherPath)
      .setPayload(TokenCreate)
      .addSuccess(CreatedToken, { status: 201 })
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Create a personal access token")
      .annotate(OpenApi.Description, "Owners and admins. The value is shown in this answer only; the registry keeps a hash.")
  )
  .add(
    HttpApiEndpoint.get("listTokens", "/publishers/:publisherId/tokens")
      .setPath(PublisherPath)
      .addSuccess(Schema.Array(TokenSummary))
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "List a publisher's tokens, values masked")
  )
  .add(
    HttpApiEndpoint.del("revokeToken", "/publishers/:publisherId/tokens/:tokenId")
      .setPath(Schema.Struct({ publisherId: field(PathParam, "Identifier of the publisher"), tokenId: field(PathParam, "Identifier of the token") }))
      .addSuccess(HttpApiSchema.NoContent)
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Revoke a token at once")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Personal access tokens")
{}
