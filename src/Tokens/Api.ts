import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import { Forbidden, NotFound } from "../Domain/ApiErrors.ts"
import { Authentication } from "../Domain/Auth.ts"
import { field, PathParam, refusingBody } from "../Domain/Schemas.ts"
import { CreatedToken, TokenCreate, TokenSummary } from "../Domain/Token.ts"

const PublisherPath = Schema.Struct({ publisherId: field(PathParam, "Identifier of the publisher") })

export class TokensApi extends HttpApiGroup.make("tokens")
  .add(
    HttpApiEndpoint.post("createToken", "/publishers/:publisherId/tokens", {
      params: PublisherPath,
      payload: TokenCreate,
      success: CreatedToken.pipe(HttpApiSchema.status(201)),
      error: [Forbidden, NotFound]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Create a personal access token")
      .annotate(OpenApi.Description, "Owners and admins. The value is shown in this answer only; the registry keeps a hash.")
  )
  .add(
    HttpApiEndpoint.get("listTokens", "/publishers/:publisherId/tokens", {
      params: PublisherPath,
      success: Schema.Array(TokenSummary),
      error: [Forbidden, NotFound]
    })
      .annotate(OpenApi.Summary, "List a publisher's tokens, values masked")
  )
  .add(
    HttpApiEndpoint.delete("revokeToken", "/publishers/:publisherId/tokens/:tokenId", {
      params: Schema.Struct({ publisherId: field(PathParam, "Identifier of the publisher"), tokenId: field(PathParam, "Identifier of the token") }),
      success: HttpApiSchema.NoContent,
      error: [Forbidden, NotFound]
    })
      .annotate(OpenApi.Summary, "Revoke a token at once")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Personal access tokens")
{}
