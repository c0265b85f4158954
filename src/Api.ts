/** The whole HTTP interface: one declaration gives the server, /openapi.json and a typed client. */
import { HttpApi, OpenApi } from "@effect/platform"
import { JSONSchema } from "effect"
import { AdminApi } from "./Admin/Api.ts"
import { CatalogApi, PublisherNodesApi } from "./Catalog/Api.ts"
import { ClaimApi } from "./Claims/Api.ts"
import { apiErrors } from "./Domain/ApiErrors.ts"
import { ErrorResponse } from "./Domain/ErrorResponse.ts"
import { HostNodesApi, PublicHostNodesApi } from "./HostNodes/Api.ts"
import { ImageProxyApi, SimulatedImagesApi } from "./Images/Api.ts"
import { MusicProxyApi } from "./Music/Api.ts"
import { PublicPublishersApi, PublishersApi } from "./Publishers/Api.ts"
import { ArchivesApi, PublishApi, PublishingApi } from "./Publishing/Api.ts"
import { SystemApi } from "./System/Api.ts"
import { TokensApi } from "./Tokens/Api.ts"

const errorResponseRef = { $ref: "#/components/schemas/ErrorResponse" }

/** The codes behind each error class's component schema (a decode error is a `bad_request`). */
const codeOf: ReadonlyMap<string, { readonly code: string; readonly description: string }> = new Map<
  string,
  { readonly code: string; readonly description: string }
>([
  ...apiErrors.map((e) => [e.identifier, e] as const),
  ["HttpApiDecodeError", { code: "bad_request", description: "A parameter or field does not match its schema" }]
])

/** Component schemas the document states through ErrorResponse instead. */
const errorSchemaNames: ReadonlySet<string> = new Set([...codeOf.keys(), "Issue", "PropertyKey"])

/** The component names a response schema refers to. */
const refsOf = (schema: Record<string, any> | undefined): Array<string> =>
  schema === undefined
    ? []
    : typeof schema.$ref === "string"
    ? [schema.$ref.replace("#/components/schemas/", "")]
    : (schema.anyOf ?? []).flatMap(refsOf)

/** "`node_exists`: The node id is taken; `version_exists`: ..." for the classes a response declares. */
const describeCodes = (response: Record<string, any>): string | undefined => {
  const codes = [...new Map(
    refsOf(response.content?.["application/json"]?.schema).flatMap((name) => {
      const error = codeOf.get(name)
      return error === undefined ? [] : [[error.code, error.description] as const]
    })
  )]
  return codes.length === 0 ? undefined : codes.map(([code, description]) => `\`${code}\`: ${description}`).join("; ")
}

/**
 * Every error of the service is answered as ErrorResponse (see Errors.ts); the document says so
 * for every error status of every operation, 500 included, and names the codes each status may
 * carry there.
 */
const errorsAsErrorResponse = (spec: Record<string, any>): Record<string, any> => {
  spec.components ??= {}
  spec.components.schemas ??= {}
  spec.components.schemas.ErrorResponse = JSONSchema.make(ErrorResponse).$defs?.ErrorResponse ?? JSONSchema.make(ErrorResponse)
  for (const item of Object.values<Record<string, any>>(spec.paths ?? {})) {
    for (const operation of Object.values<Record<string, any>>(item)) {
      if (typeof operation !== "object" || operation === null || !("responses" in operation)) continue
      operation.responses["500"] ??= { description: "Internal error" }
      for (const [status, response] of Object.entries<Record<string, any>>(operation.responses)) {
        if (Number(status) >= 400) {
          response.description = describeCodes(response) ?? response.description
          response.content = { "application/json": { schema: errorResponseRef } }
        }
      }
    }
  }
  // several groups share a title (public and authenticated halves of a feature): one tag each
  spec.tags = [...new Map((spec.tags ?? []).map((tag: { name: string }) => [tag.name, tag])).values()]
  for (const name of Object.keys(spec.components.schemas)) {
    if (errorSchemaNames.has(name)) delete spec.components.schemas[name]
  }
  return spec
}

export class Api extends HttpApi.make("registry")
  .add(CatalogApi)
  .add(PublisherNodesApi)
  .add(PublicPublishersApi)
  .add(PublishersApi)
  .add(TokensApi)
  .add(ClaimApi)
  .add(PublicHostNodesApi)
  .add(HostNodesApi)
  .add(AdminApi)
  .add(PublishingApi)
  .add(PublishApi)
  .add(ArchivesApi)
  .add(SystemApi)
  .add(ImageProxyApi)
  .add(SimulatedImagesApi)
  .add(MusicProxyApi)
  .annotate(OpenApi.Title, "Extension Registry and Media Proxy")
  .annotate(OpenApi.Version, "1.0")
  .annotate(OpenApi.Description, "Extension-node registry (publishers, nodes, versions, host-nodes, tokens, claiming) and a proxy for AI media operations. Every error body is ErrorResponse {error, message}.")
  .annotate(OpenApi.Transform, errorsAsErrorResponse)
{}
