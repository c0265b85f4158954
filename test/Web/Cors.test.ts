/**
 * CORS (`CORS_ORIGINS`, Web/Cors.ts) over real HTTP: preflights of every declared route answer
 * the methods it declares, actual answers (errors included) carry the headers a page needs to
 * read them, a disallowed origin gets none, and without the setting nothing changes.
 *
 * What is sent is what a browser sends: `Origin` on every cross-origin request, and on a
 * preflight `Access-Control-Request-Method` and `-Headers` (a `fetch` with a bearer token and a
 * JSON body, as a web front-end of the registry makes it: registry-web's axios instance calls
 * `NEXT_PUBLIC_BACKEND_URL`, another origin (src/api/mutator/axios-instance.ts), and an
 * interceptor adds `Authorization: Bearer <token>` without credentials mode (pages/_app.tsx)).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { Api } from "../../src/Api.ts"
import { allowedRequestHeaders, exposedHeaders, preflightMaxAgeSeconds } from "../../src/Http/Cors.ts"

const app = "https://app.example"
const other = "https://evil.example"

/** Every declared route: the Api's endpoints and the two documents. */
const declaredRoutes = [
  ...Object.values(Api.groups).flatMap((group) =>
    Object.values(group.endpoints).map((endpoint) => ({ method: endpoint.method, path: endpoint.path }))
  ),
  { method: "GET", path: "/openapi.json" },
  { method: "GET", path: "/docs" }
]

/** The methods these routes declare for `path`, worked out apart from the service's route table. */
const allowedMethods = (path: string) =>
  [...new Set(declaredRoutes.filter((route) => new RegExp(`^${route.path.replace(/:[^/]+/g, "[^/]+")}/?$`).test(path)).map((route) => route.method))]
import { expectError, expectStatus, send, sendText } from "../support/Http.ts"
import { fileForm, postForm } from "../support/Music.ts"
import { forAll } from "../support/Property.ts"
import { type Running, Service } from "../support/Service.ts"
import { mp4 } from "../support/Video.ts"


const preflight = (service: Running, path: string, origin: string, method = "POST") =>
  sendText(service, "OPTIONS", path, {
    headers: { origin, "access-control-request-method": method, "access-control-request-headers": "authorization,content-type" }
  })

const listOf = (header: string | null) => (header ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "")

/** The headers an allowed origin's answer carries. */
const expectAllowed = (headers: Headers, origin: string) => {
  expect(headers.get("access-control-allow-origin")).toBe(origin)
  expect(listOf(headers.get("access-control-expose-headers"))).toEqual(exposedHeaders)
  expect(headers.get("access-control-allow-credentials")).toBeNull()
}

const expectNoCors = (headers: Headers) => {
  for (const name of headers.keys()) expect(name).not.toMatch(/^access-control-/)
}

layer(Service.layer((c) => ({ ...c, vendorMode: "simulated", corsOrigins: new Set([app, "http://localhost:5173"]) })), { excludeTestServices: true })(
  "CORS with a list of origins",
  (it) => {
    it.effect("a preflight from an allowed origin is 204 with the path's methods, the headers a page sends, and a max age", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const answer = expectStatus(yield* preflight(service, "/publishers/acme/tokens", app), 204, "preflight")
        expect(answer.text).toBe("")
        expect(answer.headers.get("access-control-allow-origin")).toBe(app)
        expect(listOf(answer.headers.get("access-control-allow-methods")).sort()).toEqual(["GET", "POST"])
        expect(listOf(answer.headers.get("access-control-allow-headers"))).toEqual(allowedRequestHeaders)
        expect(listOf(answer.headers.get("access-control-allow-headers"))).toEqual(
          expect.arrayContaining(["Authorization", "Content-Type", "Idempotency-Key", "X-API-KEY", "X-Request-Id"])
        )
        expect(answer.headers.get("access-control-max-age")).toBe(String(preflightMaxAgeSeconds))
        expect(answer.headers.get("vary")).toBe("Origin")
        expect(answer.headers.get("access-control-allow-credentials")).toBeNull()
      }))

    it.effect(
      "the preflight of every declared route answers exactly the methods its path declares",
      () =>
        forAll(
          [fc.constantFrom(...declaredRoutes), fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,15}$/)],
          ([route, segment]) =>
            Effect.gen(function*() {
              const service = yield* Service
              const path = route.path.replace(/:\w+/g, segment)
              const answer = expectStatus(yield* preflight(service, path, app, route.method), 204, `preflight of ${route.method} ${path}`)
              const methods = listOf(answer.headers.get("access-control-allow-methods"))
              expect(methods).toContain(route.method)
              expect(methods.sort()).toEqual([...allowedMethods(path)].sort())
            }),
          { numRuns: 60 }
        )
    )

    it.effect("a preflight from another origin is 403 ErrorResponse without CORS headers, so the browser sends nothing", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const answer = yield* preflight(service, "/publishers", other)
        expectError({ ...answer, body: JSON.parse(answer.text) }, 403, "forbidden")
        expect(answer.headers.get("access-control-allow-origin")).toBeNull()
        expect(answer.headers.get("access-control-allow-methods")).toBeNull()
        expect(answer.headers.get("vary")?.split(", ")).toContain("Origin")
      }))

    it.effect("a preflight of a path no route declares is 404; an OPTIONS that is no preflight is 405 as before", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const unknown = yield* preflight(service, "/no/such/path", app)
        expectError({ ...unknown, body: JSON.parse(unknown.text) }, 404, "not_found")
        expectAllowed(unknown.headers, app)
        const plain = yield* send(service, "OPTIONS", "/nodes")
        expectError(plain, 405, "method_not_allowed")
        expect(plain.headers.get("allow")).toBe("GET")
      }))

    it.effect("answers to an allowed origin carry its Allow-Origin, the exposed headers and Vary: Origin", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const answer = expectStatus(yield* send(service, "GET", "/nodes", { headers: { origin: app } }), 200, "GET /nodes")
        expectAllowed(answer.headers, app)
        expect(listOf(answer.headers.get("vary"))).toContain("Origin")
        const second = yield* send(service, "GET", "/health", { headers: { origin: "http://localhost:5173" } })
        expectAllowed(second.headers, "http://localhost:5173")
      }))

    it.effect("answers to another origin, or to no origin, carry no CORS headers but still Vary: Origin", () =>
      Effect.gen(function*() {
        const service = yield* Service
        for (const headers of [{ origin: other }, { origin: `${app}:8443` }, { origin: "null" }, {}]) {
          const answer = expectStatus(yield* send(service, "GET", "/nodes", { headers }), 200, "GET /nodes")
          expectNoCors(answer.headers)
          expect(listOf(answer.headers.get("vary"))).toContain("Origin")
        }
      }))

    it.effect("the streamed NDJSON answer of the music proxy carries CORS, as its headers leave before its events", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const token = yield* Effect.promise(() => service.token({ sub: "cors-listener" }))
        const answer = yield* postForm(service, token, fileForm(mp4(1)), { origin: app })
        expect(answer.status).toBe(200)
        expect(answer.headers.get("content-type")).toMatch(/^application\/x-ndjson/)
        expectAllowed(answer.headers, app)
        expect(answer.lines.length).toBeGreaterThan(0)
      }))

    it.effect("error answers carry CORS too: 400, 401, 404, 405, 413 and a refused body", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const headers = { origin: app }
        const token = yield* Effect.promise(() => service.token({ sub: "cors-user" }))
        const errors = [
          [yield* send(service, "GET", "/nodes?page=0", { headers }), 400, "bad_request"],
          [yield* send(service, "POST", "/publishers", { headers, body: { id: "x" } }), 401, "unauthorized"],
          [yield* send(service, "GET", "/nodes/no-such-node", { headers }), 404, "not_found"],
          [yield* send(service, "PATCH", "/nodes", { headers }), 405, "method_not_allowed"],
          [yield* send(service, "POST", "/publishers", { headers, token, raw: "{not json" }), 400, "bad_request"],
          [yield* send(service, "POST", "/publishers", { headers: { ...headers, "content-type": "multipart/form-data" }, token, raw: "--x--" }), 415, "unsupported_media_type"]
        ] as const
        for (const [answer, status, code] of errors) {
          expectError(answer, status, code)
          expectAllowed(answer.headers, app)
        }
        const tooLarge = yield* send(service, "POST", "/publishers", { headers, token, raw: `"${"x".repeat(17 * 1024 * 1024)}"` })
        expectError(tooLarge, 413, "payload_too_large")
        expectAllowed(tooLarge.headers, app)
      }))
  }
)

layer(Service.layer((c) => ({ ...c, corsOrigins: "*" })), { excludeTestServices: true })("CORS with *", (it) => {
  it.effect("any origin gets Allow-Origin: *, never credentials, and Authorization among the allowed headers", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const origin of [app, other, "http://localhost:3000"]) {
        const pre = expectStatus(yield* preflight(service, "/publishers", origin), 204, "preflight")
        expect(pre.headers.get("access-control-allow-origin")).toBe("*")
        expect(listOf(pre.headers.get("access-control-allow-headers"))).toContain("Authorization")
        expect(listOf(pre.headers.get("access-control-allow-methods")).sort()).toEqual(["GET", "POST"])
        expect(pre.headers.get("access-control-allow-credentials")).toBeNull()
        // the same answer for every origin: nothing to vary on
        expect(pre.headers.get("vary")).toBeNull()
        const answer = expectStatus(yield* send(service, "GET", "/nodes", { headers: { origin } }), 200, "GET /nodes")
        expectAllowed(answer.headers, "*")
        const error = yield* send(service, "GET", "/nodes/none-such", { headers: { origin } })
        expectError(error, 404, "not_found")
        expectAllowed(error.headers, "*")
      }
    }))
})

layer(Service.layer(), { excludeTestServices: true })("without CORS_ORIGINS", (it) => {
  it.effect("no answer carries CORS headers and a preflight is 405, as before", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const pre = yield* preflight(service, "/publishers", app)
      expectError({ ...pre, body: JSON.parse(pre.text) }, 405, "method_not_allowed")
      expectNoCors(pre.headers)
      const answer = expectStatus(yield* send(service, "GET", "/nodes", { headers: { origin: app } }), 200, "GET /nodes")
      expectNoCors(answer.headers)
      // Accept-Encoding only: the answer is the same from every origin
      expect(answer.headers.get("vary")).toBe("Accept-Encoding")
    }))
})
