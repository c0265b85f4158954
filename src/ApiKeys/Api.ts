import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import { NotFound } from "../Domain/ApiErrors.ts"
import { ApiKeyCreate, ApiKeyList, CreatedApiKey } from "../Domain/ApiKey.ts"
import { Authentication } from "../Domain/Auth.ts"
import { field, PathParam, refusingBody } from "../Domain/Schemas.ts"

/**
 * The caller's own API keys; signing in (bearer) is needed to manage them, a key cannot. At the
 * anchor's paths (`/customers/api-keys`); the registry's earlier `/users/api-keys` answers too,
 * as the same routes (Compat/Aliases.ts `aliasPatterns`).
 */
export class ApiKeysApi extends HttpApiGroup.make("apiKeys")
  .add(
    HttpApiEndpoint.post("createApiKey", "/customers/api-keys", {
      payload: ApiKeyCreate,
      success: CreatedApiKey.pipe(HttpApiSchema.status(201))
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Create an API key")
      .annotate(
        OpenApi.Description,
        "The key authenticates its user as the X-API-KEY header on the media proxy and media storage. " +
          "Its value is shown in this answer only; the registry keeps a hash. " +
          "The earlier path /users/api-keys answers the same, as do those of the listing and the revocation."
      )
  )
  .add(
    HttpApiEndpoint.get("listApiKeys", "/customers/api-keys", {
      success: ApiKeyList
    })
      .annotate(OpenApi.Summary, "List your API keys, values masked")
  )
  .add(
    HttpApiEndpoint.delete("revokeApiKey", "/customers/api-keys/:keyId", {
      params: Schema.Struct({ keyId: field(PathParam, "Identifier of the key") }),
      success: HttpApiSchema.NoContent,
      error: [NotFound]
    })
      .annotate(OpenApi.Summary, "Revoke one of your API keys at once")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "API keys")
{}
