/**
 * How `measuredVendor` (src/Observability/Metrics.ts) counts a vendor call, over a stand-in
 * HttpClient: a 2xx is `success`, any other status `http_error`, a transport failure
 * `network_error`, and a call cut by its caller's timeout `timeout`; each is timed.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { HttpClient, HttpClientError, HttpClientRequest, HttpClientResponse } from "effect/http"
import { exposition, measuredVendor } from "../../src/Observability/Metrics.ts"
import { parseExposition, valueOf } from "../support/Prometheus.ts"

type Behaviour = { readonly status: number } | "transport" | "hang"

const vendorAnswering = (behaviour: Behaviour) =>
  HttpClient.make((request) =>
    behaviour === "hang"
      ? Effect.never
      : behaviour === "transport"
      ? Effect.fail(new HttpClientError.HttpClientError({ reason: new HttpClientError.TransportError({ request, description: "connection refused" }) }))
      : Effect.succeed(HttpClientResponse.fromWeb(request, new Response(behaviour.status === 204 ? null : "{}", { status: behaviour.status })))
  ).pipe(measuredVendor("repohost"))

const counts = Effect.map(exposition(() => []), (text) => {
  const metrics = parseExposition(text)
  const of = (outcome: string) => ({
    calls: valueOf(metrics, "vendor_calls_total", { vendor: "repohost", outcome }),
    timed: valueOf(metrics, "vendor_call_duration_seconds", { vendor: "repohost", outcome }, "vendor_call_duration_seconds_count")
  })
  return { success: of("success"), http_error: of("http_error"), network_error: of("network_error"), timeout: of("timeout") }
})

describe("vendor call metrics", () => {
  it.live("count each call once under its outcome, and time it", () =>
    Effect.gen(function*() {
      const before = yield* counts
      const call = (behaviour: Behaviour) =>
        vendorAnswering(behaviour).execute(HttpClientRequest.get("http://vendor.invalid/x")).pipe(
          Effect.timeout("20 millis"),
          Effect.ignore
        )
      yield* call({ status: 200 })
      yield* call({ status: 204 })
      yield* call({ status: 404 })
      yield* call({ status: 503 })
      yield* call("transport")
      yield* call("hang")
      const after = yield* counts
      for (const [outcome, expected] of [["success", 2], ["http_error", 2], ["network_error", 1], ["timeout", 1]] as const) {
        expect(after[outcome].calls - before[outcome].calls, outcome).toBe(expected)
        expect(after[outcome].timed - before[outcome].timed, outcome).toBe(expected)
      }
    }))
})
