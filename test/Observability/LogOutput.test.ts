/**
 * The service as a process: with LOG_FORMAT=json its stdout is JSON, one entry a line, and a
 * request's access line is there with the id it was sent. The formats' details are in Logs.test.ts.
 */
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawnService } from "../support/Process.ts"
import { freshDatabase } from "../support/Service.ts"

it.live("LOG_FORMAT=json: every stdout line is a JSON object, the access line among them", () =>
  Effect.scoped(Effect.gen(function*() {
    const { url } = yield* freshDatabase
    const service = yield* Effect.acquireRelease(
      Effect.promise(() => spawnService({ env: { DATABASE_URL: url, LOG_LEVEL: "info", LOG_FORMAT: "json", AUTH_JWT_SECRET: "s".repeat(40) } })),
      (s) => Effect.sync(() => s.child.kill("SIGKILL"))
    )
    let stdout = ""
    service.child.stdout!.on("data", (d) => (stdout += d))
    const answer = yield* Effect.promise(() => fetch(`${service.baseUrl}/nodes?limit=3`, { headers: { "x-request-id": "from-the-process-test" } }))
    expect(answer.headers.get("x-request-id")).toBe("from-the-process-test")
    yield* Effect.promise(() => answer.text())
    const entries = yield* Effect.promise(async () => {
      for (let i = 0; i < 100 && !stdout.includes("from-the-process-test"); i++) await new Promise((r) => setTimeout(r, 50))
      return stdout.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as { message: unknown; annotations: Record<string, unknown> })
    })
    const access = entries.filter((e) => e.message === "http" && e.annotations.request_id === "from-the-process-test")
    expect(access).toHaveLength(1)
    expect(access[0]!.annotations).toMatchObject({ method: "GET", route: "/nodes", status: 200 })
  })), 120_000)
