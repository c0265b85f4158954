/**
 * A request that reaches the server before the application is attached (the moments between its
 * listening and the edge's `serve`) is answered, not left waiting on its connection: the README's
 * `until curl … /ready` loop once hung on such a request for good.
 */
import { expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { freshDatabase, startService } from "../support/Service.ts"

it.live("a request before the application is attached is answered 503 service_unavailable, Retry-After 1", () =>
  Effect.gen(function*() {
    const { url } = yield* freshDatabase
    const listening = yield* startService(url, undefined, undefined, Layer.empty)
    const response = yield* Effect.promise(() => listening.fetch("/ready"))
    expect(response.status).toBe(503)
    expect(response.headers.get("retry-after")).toBe("1")
    expect(response.headers.get("connection")).toBe("close")
    expect(response.headers.get("x-content-type-options")).toBe("nosniff")
    expect(response.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/)
    expect(yield* Effect.promise(() => response.json())).toEqual({
      error: "service_unavailable",
      message: "The service is starting: try again in a moment"
    })
  }).pipe(Effect.scoped))
