/**
 * Security headers and validators over real HTTP: `X-Content-Type-Options: nosniff` on every kind
 * of answer (JSON, ErrorResponse, 405, the bare-socket 400/408/431, the docs, archives, NDJSON),
 * the content security policy of `/docs`, and ETag, Cache-Control and 304 on `GET /nodes/{nodeId}`,
 * `/openapi.json` and `/docs` (Web/SecurityHeaders.ts, Web/Validators.ts).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { type Publisher, makePublisher, published, upload } from "../Publishing/Flow.ts"
import { expectError, expectStatus, type Reply, send, sendText } from "../support/Http.ts"
import { fileForm, postForm } from "../support/Music.ts"
import { type RawResponse, rawRequest } from "../support/RawHttp.ts"
import { type Running, Service } from "../support/Service.ts"
import { mp4 } from "../support/Video.ts"
import { zipOf } from "../support/Zip.ts"

const TestService = Service.layer((c) => ({
  ...c,
  vendorMode: "simulated",
  // a request whose headers stop coming is answered 408 within a second
  http: { ...c.http, headersTimeoutMillis: 1000 }
}))

const expectNoSniff = (headers: Headers | Readonly<Record<string, string>>, what: string) => {
  const value = headers instanceof Headers ? headers.get("x-content-type-options") : headers["x-content-type-options"]
  expect(value, what).toBe("nosniff")
}

const raw = (service: Running, request: string) => rawRequest(service.baseUrl, request)

const etagOfText = (text: string) => `"${createHash("sha1").update(text).digest("base64url")}"`

/** The uncompressed representation, whose ETag is strong (a compressed one's is its weak form). */
const identity = { "accept-encoding": "identity" }

/** A conditional GET: the answer to `If-None-Match: <value>`. */
const revalidate = (service: Running, path: string, ifNoneMatch: string) =>
  sendText(service, "GET", path, { headers: { ...identity, "if-none-match": ifNoneMatch } })

/** The validators of a 200: a strong ETag of exactly the bytes answered, and the Cache-Control expected. */
const expectValidated = (reply: Reply, cacheControl: string) => {
  expectStatus(reply, 200, "the answer")
  expect(reply.headers.get("etag")).toBe(etagOfText(reply.text))
  expect(reply.headers.get("cache-control")).toBe(cacheControl)
  return reply.headers.get("etag")!
}

/** 304, no body, the same validators; and a changed ETag is a full answer again. */
const expectNotModified = (service: Running, path: string, etag: string, cacheControl: string) =>
  Effect.gen(function*() {
    for (const condition of [etag, `W/${etag}`, `"other", ${etag}`, `W/"other" , W/${etag}`, "*"]) {
      const answer = yield* revalidate(service, path, condition)
      expect(answer.status, `If-None-Match: ${condition}`).toBe(304)
      expect(answer.text).toBe("")
      expect(answer.headers.get("etag")).toBe(etag)
      expect(answer.headers.get("cache-control")).toBe(cacheControl)
      expectNoSniff(answer.headers, "304")
    }
    for (const condition of ['"other"', `W/"${etag.slice(2)}`, `${etag.slice(0, -2)}"`]) {
      expectStatus(yield* revalidate(service, path, condition), 200, `If-None-Match: ${condition}`)
    }
  })

layer(TestService, { excludeTestServices: true })("security headers and validators", (it) => {
  let acme: Publisher

  it.effect("setup: a publisher with a node", () =>
    Effect.gen(function*() {
      const service = yield* Service
      acme = yield* makePublisher(service, "acme")
      const { signedUrl } = yield* published(service, acme, "image-tools", "1.0.0")
      const zip = yield* Effect.promise(() => zipOf({ "pkg/__init__.py": "print('hello')\n" }))
      expectStatus(yield* upload(service, signedUrl, zip), 200, "upload")
    }))

  it.effect("nosniff on JSON answers, ErrorResponses, 405, /docs, /openapi.json and archives", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const answers: Array<[string, Reply]> = [
        ["JSON", expectStatus(yield* sendText(service, "GET", "/nodes"), 200, "GET /nodes")],
        ["a node", expectStatus(yield* sendText(service, "GET", "/nodes/image-tools"), 200, "GET /nodes/image-tools")],
        ["404", yield* sendText(service, "GET", "/nodes/none-such")],
        ["401", yield* sendText(service, "POST", "/publishers", { body: {} })],
        ["405", yield* sendText(service, "DELETE", "/nodes")],
        ["/docs", expectStatus(yield* sendText(service, "GET", "/docs"), 200, "GET /docs")],
        ["/openapi.json", expectStatus(yield* sendText(service, "GET", "/openapi.json"), 200, "GET /openapi.json")],
        ["an archive", expectStatus(yield* sendText(service, "GET", "/archives/image-tools/1.0.0"), 200, "GET /archives/…")]
      ]
      for (const [what, answer] of answers) expectNoSniff(answer.headers, what)
      expectError({ ...answers[4]![1], body: JSON.parse(answers[4]![1].text) }, 405, "method_not_allowed")
    }))

  it.effect("nosniff on the streamed NDJSON answer of the music proxy", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* Effect.promise(() => service.token({ sub: "listener" }))
      const answer = yield* postForm(service, token, fileForm(mp4(1)))
      expect(answer.status).toBe(200)
      expect(answer.headers.get("content-type")).toMatch(/^application\/x-ndjson/)
      expectNoSniff(answer.headers, "NDJSON")
    }))

  it.effect("nosniff on the answers written on the bare socket: 400, 431 and 408", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const answers: Array<[string, RawResponse, number]> = [
        ["not HTTP", yield* raw(service, "NOT HTTP AT ALL\r\n\r\n"), 400],
        ["oversized headers", yield* raw(service, `GET /nodes HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`), 431],
        ["headers that stop coming", yield* raw(service, "GET /nodes HTTP/1.1\r\nHost: x\r\n"), 408]
      ]
      for (const [what, answer, status] of answers) {
        expect(answer.status, what).toBe(status)
        expectNoSniff(answer.headers, what)
        expect(JSON.parse(answer.body)).toEqual({ error: expect.any(String), message: expect.any(String) })
      }
    }))

  it.effect("/docs has a content security policy: its own inline scripts by hash, requests to this service only", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const page = expectStatus(yield* sendText(service, "GET", "/docs"), 200, "GET /docs")
      const policy = page.headers.get("content-security-policy") ?? expect.fail("no Content-Security-Policy on /docs")
      const directives = new Map(policy.split(";").map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name!, values]))
      expect(directives.get("default-src")).toEqual(["'none'"])
      const scripts = [...page.text.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]!)
      expect(scripts.length).toBeGreaterThan(0)
      expect(directives.get("script-src")?.sort()).toEqual(
        [...scripts.map((s) => `'sha256-${createHash("sha256").update(s).digest("base64")}'`), "'wasm-unsafe-eval'"].sort()
      )
      expect(directives.get("script-src")).not.toContain("'unsafe-inline'")
      expect(directives.get("connect-src")).toEqual(["'self'", "http://127.0.0.1"])
      expect(directives.get("frame-ancestors")).toEqual(["'none'"])
      // the API's own answers need no policy: they are never rendered as pages
      expect((yield* sendText(service, "GET", "/openapi.json")).headers.get("content-security-policy")).toBeNull()
    }))

  it.effect("GET /nodes/{nodeId}: a strong ETag of the body, no-cache, 304 on If-None-Match (weak comparison, lists, *)", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const etag = expectValidated(yield* sendText(service, "GET", "/nodes/image-tools", { headers: identity }), "no-cache")
      yield* expectNotModified(service, "/nodes/image-tools", etag, "no-cache")
      // another representation of the node (no translations) has its own ETag
      expectValidated(yield* sendText(service, "GET", "/nodes/image-tools?include_translations=false", { headers: identity }), "no-cache")
    }))

  it.effect("the node's ETag changes when the node does", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const before = expectValidated(yield* sendText(service, "GET", "/nodes/image-tools", { headers: identity }), "no-cache")
      expectStatus(
        yield* send(service, "PUT", "/publishers/acme/nodes/image-tools", { token: acme.ownerJwt, body: { description: "Sharper images" } }),
        200,
        "update the description"
      )
      const after = yield* revalidate(service, "/nodes/image-tools", before)
      expect(after.status).toBe(200)
      expect(JSON.parse(after.text).description).toBe("Sharper images")
      expect(expectValidated(after, "no-cache")).not.toBe(before)
    }))

  it.effect("errors get no validators: a missing node is 404 without ETag", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const missing = yield* revalidate(service, "/nodes/none-such", "*")
      expect(missing.status).toBe(404)
      expect(missing.headers.get("etag")).toBeNull()
    }))

  it.effect("/openapi.json and /docs: the same ETag on every answer, a short public max-age, 304", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const path of ["/openapi.json", "/docs"]) {
        const etag = expectValidated(yield* sendText(service, "GET", path, { headers: identity }), "public, max-age=300")
        expect(expectValidated(yield* sendText(service, "GET", path, { headers: identity }), "public, max-age=300")).toBe(etag)
        yield* expectNotModified(service, path, etag, "public, max-age=300")
        // compressed (fetch accepts br and gzip), the same content: the weak form of its tag
        expect((yield* sendText(service, "GET", path)).headers.get("etag")).toBe(`W/${etag}`)
      }
    }))
})
