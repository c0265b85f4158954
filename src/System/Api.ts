import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ServiceUnavailable } from "../Domain/ApiErrors.ts"

export class SystemApi extends HttpApiGroup.make("system")
  .add(
    HttpApiEndpoint.get("health", "/health")
      .addSuccess(Schema.Struct({ status: Schema.Literal("ok") }))
      .annotate(OpenApi.Summary, "The process is up")
  )
  .add(
    HttpApiEndpoint.get("ready", "/ready")
      .addSuccess(Schema.Struct({ status: Schema.Literal("ready"), database: Schema.Literal("up") }))
      .addError(ServiceUnavailable)
      .annotate(OpenApi.Summary, "The database answers")
  )
  .annotate(OpenApi.Title, "Operations")
{}
