/**
 * The error classes as clients see them: each one's wire form is exactly ErrorResponse with its
 * own code, that form decodes back to the class (so a client derived from the Api can `catchTag`
 * it), its status is the one the class declares, and a handler cannot fail with a class its
 * endpoint does not declare (the `@ts-expect-error` below is checked by `tsc` in `npm test`).
 */
import { HttpApi, HttpApiBuilder, HttpApiClient, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { HttpClient, HttpClientResponse } from "effect/http"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { Api } from "../src/Api.ts"
import { apiErrors, NotFound, RateLimited, VersionExists } from "../src/Domain/ApiErrors.ts"

/**
 * The status the Api answers a class with: its `httpApiStatus` annotation, on the schema or, as
 * `HttpApiSchema.status` puts it, on its key (the order HttpApiSchema reads them in).
 */
const statusOf = (schema: Schema.Top) =>
  Schema.resolveAnnotations(schema)?.httpApiStatus ?? Schema.resolveAnnotationsKey(schema)?.httpApiStatus

describe("error classes", () => {
  it("encode as {error: <code>, message} and decode back to themselves, with their status", () => {
    for (const ApiError of apiErrors) {
      const error = new ApiError({ message: `about ${ApiError.code}` })
      const wire = Schema.encodeSync(ApiError as Schema.Codec<unknown, unknown>)(error)
      expect(wire, ApiError.identifier).toStrictEqual({ error: ApiError.code, message: `about ${ApiError.code}` })
      const decoded = Schema.decodeUnknownSync(ApiError as Schema.Codec<unknown, unknown>)(wire)
      expect(decoded, ApiError.identifier).toBeInstanceOf(ApiError)
      expect((decoded as { _tag: string })._tag).toBe(ApiError.identifier)
      expect(statusOf(ApiError)).toBe(ApiError.status)
    }
  })

  it("a rate limit's wait stays inside: the body is ErrorResponse alone", () => {
    expect(Schema.encodeSync(RateLimited)(new RateLimited({ message: "wait", retryAfter: 30 })))
      .toStrictEqual({ error: "rate_limited", message: "wait" })
  })

  it.effect("a client derived from the Api fails with the class the answer's code names", () =>
    Effect.gen(function*() {
      const answering = (status: number, body: unknown) =>
        Layer.succeed(
          HttpClient.HttpClient,
          HttpClient.make((request) =>
            Effect.succeed(HttpClientResponse.fromWeb(request, new Response(JSON.stringify(body), { status })))
          )
        )
      const version = (status: number, body: unknown) =>
        HttpApiClient.make(Api, { baseUrl: "http://registry.test" }).pipe(
          Effect.flatMap((client) => client.catalog.getNodeVersion({ params: { nodeId: "tool", versionId: "1.0.0" } })),
          Effect.provide(answering(status, body)),
          Effect.flip
        )
      const missing = yield* version(404, { error: "not_found", message: "No version" })
      expect(missing).toBeInstanceOf(NotFound)
      expect(missing._tag).toBe("NotFound")
      expect(missing.message).toBe("No version")
      const banned = yield* version(403, { error: "node_banned", message: "Node 'tool' is banned" })
      expect(banned._tag).toBe("NodeBanned")
    }))
})

// a handler failing with a class its endpoint does not declare does not type-check
class Probe extends HttpApiGroup.make("probe")
  .add(HttpApiEndpoint.get("get", "/probe", { success: Schema.String, error: NotFound }))
{}
class ProbeApi extends HttpApi.make("probe").add(Probe) {}
export const declared = HttpApiBuilder.group(ProbeApi, "probe", (handlers) =>
  handlers.handle("get", () => Effect.fail(new NotFound({ message: "declared" }))))
export const undeclared = HttpApiBuilder.group(ProbeApi, "probe", (handlers) =>
  // @ts-expect-error VersionExists is not among the endpoint's errors
  handlers.handle("get", () => Effect.fail(new VersionExists({ message: "undeclared" }))))
