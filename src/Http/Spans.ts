/**
 * Server spans, when a tracer is configured (Observability/Otel.ts): the platform makes one per
 * request, named here `<METHOD> <route pattern>` as OpenTelemetry's HTTP conventions name them,
 * from the route the table found on arrival. With no tracer the platform makes none.
 */
import { HttpMiddleware } from "effect/http"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Layer } from "effect"
import type * as http from "node:http"
import type { RouteTable } from "./Routes.ts"

export const spanNames = (table: RouteTable) =>
  Layer.succeed(HttpMiddleware.SpanNameGenerator, (request) => {
    const entry = table.resolve(NodeHttpServerRequest.toIncomingMessage(request) as http.IncomingMessage).entry
    return `${request.method} ${entry?.info.pattern ?? "unmatched"}`
  })
