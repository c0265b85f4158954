import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import { DatabaseUnavailable } from "../Domain/ApiErrors.ts"
import { field } from "../Domain/Schemas.ts"

export class SystemApi extends HttpApiGroup.make("system")
  .add(
    HttpApiEndpoint.get("health", "/health", {
      success: Schema.Struct({ status: field(Schema.Literal("ok"), "Always ok: the process is up") })
    })
      .annotate(OpenApi.Summary, "The process is up")
  )
  .add(
    HttpApiEndpoint.get("ready", "/ready", {
      success: Schema.Struct({
        status: field(Schema.Literal("ready"), "Always ready: the service can answer requests"),
        database: field(Schema.Literal("up"), "Always up: the database answers")
      }),
      error: DatabaseUnavailable
    })
      .annotate(OpenApi.Summary, "The database answers")
  )
  .annotate(OpenApi.Title, "Operations")
{}
