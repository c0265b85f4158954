/**
 * The API's documentation: `/openapi.json` is a complete OpenAPI 3.1 document of the Api (paths,
 * parameters, the bearer scheme, ErrorResponse for errors), derived from the Api declaration itself
 * rather than a hand-written list; and `/docs` renders the reference in headless Chromium with the
 * network closed (the page's script is embedded, no CDN), and its "Test Request" reaches the host
 * the page was opened on.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, type Schema, SchemaAST } from "effect"
import { chromium, type Page } from "playwright-core"
import { Api } from "../src/Api.ts"
import { ListNodesParams } from "../src/Catalog/Api.ts"
import { listNodesParams } from "./support/Catalogue.ts"
import { getText, parseJson } from "./support/Http.ts"
import { chromiumArgs, chromiumFound, chromiumPath, chromiumSkipReason } from "./support/Chromium.ts"
import { type Running, Service } from "./support/Service.ts"

type Json = Record<string, any>

const inCi = Boolean(process.env.CI)
const browserSkipReason = chromiumSkipReason
if (!chromiumFound) {
  console.warn(inCi ? `CI: ${browserSkipReason} - the browser test fails` : `skipping the /docs browser test: ${browserSkipReason}`)
}

/** Every operation the Api declares, as the OpenAPI document names it. */
const declaredOperations = Object.values(Api.groups).flatMap((group) =>
  Object.values(group.endpoints).map((endpoint) => {
    // a group's middleware is on each of its endpoints
    const middlewares = [...endpoint.middlewares]
    const securitySchemes = middlewares.flatMap((m) => "security" in m && m.security ? Object.keys(m.security) : [])
    // a Struct of the parameters, which the endpoint keeps as its wire codec: an Objects AST, no `fields`
    const query: Schema.Top | undefined = endpoint.query
    const urlParams = query !== undefined && SchemaAST.isObjects(query.ast) ? query.ast.propertySignatures.map((p) => String(p.name)) : []
    return {
      name: `${group.identifier}.${endpoint.identifier}`,
      method: endpoint.method.toLowerCase(),
      path: endpoint.path.replace(/:(\w+)/g, "{$1}"),
      pathParams: [...endpoint.path.matchAll(/:(\w+)/g)].map((m) => m[1]!),
      urlParams,
      securitySchemes
    }
  })
)

const fetchSpec = (service: Running) =>
  Effect.map(getText(service, "/openapi.json"), (reply) => ({
    status: reply.status,
    contentType: reply.headers.get("content-type"),
    spec: parseJson(reply.text, "/openapi.json") as Json
  }))

/** Headless Chromium for the scope: a test that needs it fails in CI without it (.ci/run installs it). */
const launchedBrowser = Effect.gen(function*() {
  if (!chromiumFound) return yield* Effect.die(new Error(`CI is set and ${browserSkipReason}; .ci/run must install it`))
  return yield* Effect.acquireRelease(
    Effect.promise(() => chromium.launch({ executablePath: chromiumPath, args: [...chromiumArgs] })),
    (b) => Effect.promise(() => b.close())
  )
})

/** The title of a browser test, saying why where it cannot run. */
const browserTitle = (title: string) => chromiumFound ? title : `${title} (${inCi ? "fails in CI" : "skipped"}: ${browserSkipReason})`

/** The network closed to `page`: only `origin` answers; what else it asked for goes to `refused`. */
const closedNetwork = (page: Page, origin: string, refused: Array<string> = []) =>
  Effect.promise(() =>
    page.route("**/*", (route) => {
      const url = route.request().url()
      if (url.startsWith(`${origin}/`) || url.startsWith("data:") || url.startsWith("blob:")) return route.continue()
      refused.push(url)
      return route.abort("internetdisconnected")
    })
  )

/** How long the reference may take to show something. */
const visible = { state: "visible", timeout: 30_000 } as const

layer(Service.layer(), { excludeTestServices: true })("documentation", (it) => {
  it.effect("GET /openapi.json is an OpenAPI 3.1 JSON document", () =>
    Effect.gen(function*() {
      const { status, contentType, spec } = yield* fetchSpec(yield* Service)
      expect(status).toBe(200)
      expect(contentType).toMatch(/^application\/json/)
      expect(spec.openapi).toMatch(/^3\.1\.\d+$/)
      expect(spec.info).toMatchObject({ title: expect.any(String), version: expect.any(String) })
      expect(typeof spec.paths).toBe("object")
    }))

  it.effect("lists every operation of the Api, and no other", () =>
    Effect.gen(function*() {
      const { spec } = yield* fetchSpec(yield* Service)
      expect(declaredOperations.length).toBeGreaterThanOrEqual(6)
      const methods = new Set(["get", "put", "post", "delete", "patch", "head", "options", "trace"])
      const documented = Object.entries<Json>(spec.paths).flatMap(([path, item]) =>
        Object.keys(item).filter((k) => methods.has(k)).map((method) => `${method.toUpperCase()} ${path}`)
      )
      expect(documented.sort()).toEqual(declaredOperations.map((o) => `${o.method.toUpperCase()} ${o.path}`).sort())
      for (const op of declaredOperations) {
        const operation = spec.paths[op.path]?.[op.method]
        expect(operation, op.name).toBeDefined()
        expect(typeof operation.summary === "string" && operation.summary.length > 0, `${op.name} has a summary`).toBe(true)
      }
    }))

  it.effect("documents every path and query parameter of every operation", () =>
    Effect.gen(function*() {
      const { spec } = yield* fetchSpec(yield* Service)
      // the derivation itself sees the declared parameters
      expect(declaredOperations.find((o) => o.path === "/nodes")?.urlParams).toContain("page")
      expect(declaredOperations.find((o) => o.path === "/publishers/{publisherId}/nodes")?.pathParams).toEqual(["publisherId"])
      for (const op of declaredOperations) {
        const parameters: Array<Json> = spec.paths[op.path][op.method].parameters ?? []
        const named = (where: string) => parameters.filter((p) => p.in === where).map((p) => p.name).sort()
        expect(named("path"), op.name).toEqual([...op.pathParams].sort())
        expect(named("query"), op.name).toEqual([...op.urlParams].sort())
        for (const p of parameters.filter((p) => p.in === "path")) expect(p.required, `${op.name} ${p.name}`).toBe(true)
      }
    }))

  it.effect("documents every GET /nodes query parameter of the contract", () =>
    Effect.gen(function*() {
      const { spec } = yield* fetchSpec(yield* Service)
      const parameters: Array<Json> = spec.paths["/nodes"].get.parameters
      const query = parameters.filter((p) => p.in === "query").map((p) => p.name)
      // the contract's table (CONTRACT.md, "GET /nodes query parameters")...
      const contract = [...listNodesParams]
      expect(query.sort()).toEqual(contract.sort())
      // ...which is also what the endpoint decodes
      expect(Object.keys(ListNodesParams.fields).sort()).toEqual(contract.sort())
      for (const p of parameters) {
        expect(p.required ?? false, p.name).toBe(false)
        expect(p.schema, p.name).toBeDefined()
      }
      // the repeatable ones are arrays
      for (const name of ["sort", "node_id"]) {
        expect(parameters.find((p) => p.name === name)?.schema?.type, name).toBe("array")
      }
    }))

  it.effect("declares the bearer and API key security schemes and uses them on the authenticated operations", () =>
    Effect.gen(function*() {
      const { spec } = yield* fetchSpec(yield* Service)
      const schemes: Json = spec.components?.securitySchemes ?? {}
      const bearerSchemes = Object.entries<Json>(schemes)
        .filter(([, s]) => s.type === "http" && String(s.scheme).toLowerCase() === "bearer")
        .map(([name]) => name)
      expect(bearerSchemes.length).toBeGreaterThan(0)
      const secured = declaredOperations.filter((o) => o.securitySchemes.length > 0)
      expect(secured.map((o) => o.path)).toContain("/publishers/{publisherId}/nodes")
      for (const op of declaredOperations) {
        const security: Array<Json> = spec.paths[op.path][op.method].security ?? []
        const used = security.flatMap((requirement) => Object.keys(requirement))
        if (op.securitySchemes.length > 0) {
          for (const scheme of op.securitySchemes) {
            expect(used, op.name).toContain(scheme)
            // a bearer token, or a user API key in X-API-KEY where the media operations take one
            const isApiKey = schemes[scheme]?.type === "apiKey" && schemes[scheme]?.in === "header" && schemes[scheme]?.name === "X-API-KEY"
            expect(bearerSchemes.includes(scheme) || isApiKey, `${op.name}: ${scheme}`).toBe(true)
          }
          expect(Object.keys(spec.paths[op.path][op.method].responses), `${op.name} documents 401`).toContain("401")
        } else {
          expect(used, `${op.name} needs no credentials`).toEqual([])
        }
      }
    }))

  it.effect("every error response of every operation is an ErrorResponse of the codes it may carry", () =>
    Effect.gen(function*() {
      const { spec } = yield* fetchSpec(yield* Service)
      const schemas: Json = spec.components?.schemas ?? {}
      for (const op of declaredOperations) {
        const responses = Object.entries<Json>(spec.paths[op.path][op.method].responses)
        const errors = responses.filter(([status]) => Number(status) >= 400)
        expect(errors.length, `${op.name} documents its errors`).toBeGreaterThan(0)
        for (const [status, response] of errors) {
          const schema: Json = response.content?.["application/json"]?.schema
          for (const { $ref } of schema.oneOf ?? [schema]) {
            // ErrorResponse with `error` narrowed to one code
            const error: Json = schemas[String($ref).replace("#/components/schemas/", "")]
            expect(error, `${op.name} ${status} ${$ref}`).toMatchObject({
              type: "object",
              required: ["error", "message"],
              properties: { error: { type: "string", enum: [expect.any(String)] }, message: { type: "string" } }
            })
          }
        }
      }
      // the errors a client of GET /nodes acts on are there
      expect(Object.keys(spec.paths["/nodes"].get.responses)).toContain("400")
      // and no framework-internal error schema leaks into the document
      expect(Object.keys(schemas)).not.toContain("HttpApiDecodeError")
    }))

  it.effect("GET /docs is an HTML page embedding its script (no CDN)", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const { status, headers, text: html } = yield* getText(service, "/docs")
      const contentType = headers.get("content-type")
      expect(status).toBe(200)
      expect(contentType).toMatch(/^text\/html/)
      expect(html).toMatch(/<script/)
      expect(html).not.toMatch(/<script[^>]*\ssrc=["']?https?:/i)
      expect(html).not.toMatch(/<link[^>]*\shref=["']?https?:[^>]*stylesheet|<link[^>]*stylesheet[^>]*\shref=["']?https?:/i)
    }))

  // One test, two page loads: the reference costs seconds of CPU to draw, so the page opened at
  // 127.0.0.1 serves the render checks, the content security policy checks and Test Request there,
  // and a second one Test Request at localhost.
  it.effect.skipIf(!chromiumFound && !inCi)(
    browserTitle(
      "GET /docs renders the API reference in headless Chromium with the network closed, under its content security policy " +
        "(nothing in the console, nothing refused but an eval probe), and Test Request answers 200 whether the page was opened at 127.0.0.1 or at localhost"
    ),
    () =>
      Effect.gen(function*() {
        const browser = yield* launchedBrowser
        const service = yield* Service
        const { spec } = yield* fetchSpec(service)
        // /openapi.json names the public URL for tools elsewhere, which is neither of the hosts below
        expect(spec.servers).toEqual([{ url: service.config.publicBaseUrl, description: expect.any(String) }])
        expect(service.config.publicBaseUrl).toBe("http://127.0.0.1")
        expect(new URL(service.baseUrl).hostname).toBe("127.0.0.1")
        const port = new URL(service.baseUrl).port
        for (const host of ["127.0.0.1", "localhost"]) {
          const origin = `http://${host}:${port}`
          const page = yield* Effect.promise(() => browser.newPage())
          const blocked: Array<string> = []
          const pageErrors: Array<string> = []
          page.on("pageerror", (e) => pageErrors.push(String(e)))
          const messages: Array<string> = []
          page.on("console", (message) => messages.push(`${message.type()}: ${message.text()}`))
          page.on("pageerror", (error) => messages.push(`pageerror: ${String(error)}`))
          // every violation of the content security policy the page meets, reported or not to the console
          yield* Effect.promise(() =>
            page.addInitScript({
              content: `window.violations = []; document.addEventListener("securitypolicyviolation", (e) =>
                window.violations.push(e.violatedDirective + " " + e.blockedURI + " at " + e.sourceFile + ":" + e.lineNumber))`
            })
          )
          // the network is closed: only the page's own origin answers; what reached /nodes, and from where
          yield* closedNetwork(page, origin, blocked)
          const sent: Array<{ readonly url: string; readonly status: number }> = []
          page.on("response", (r) => {
            if (new URL(r.url()).pathname === "/nodes") sent.push({ url: r.url(), status: r.status() })
          })
          // the reference's heading is what tells it has drawn, not the load event
          const response = yield* Effect.promise(() => page.goto(`${origin}/docs`, { waitUntil: "commit" }))
          expect(response?.status()).toBe(200)
          expect(response?.headers()["content-security-policy"]).toMatch(/script-src 'sha256-/)
          const listAll = page.getByRole("region", { name: "List all nodes (paginated)" })
          if (host === "127.0.0.1") {
            // the reference is rendered by the embedded script: its title and the first operation's section appear
            yield* Effect.promise(() => page.getByRole("heading", { level: 1, name: spec.info.title }).waitFor(visible))
            yield* Effect.promise(() => listAll.getByRole("heading", { name: "List all nodes (paginated)" }).waitFor(visible))
            // the operation's section lists its query parameters and its error responses
            const section = (yield* Effect.promise(() => listAll.innerText())).replace(/\u200b/g, "")
            for (const parameter of Object.keys(ListNodesParams.fields)) expect(section).toContain(parameter)
            expect(section).toContain("400")
            // with the document's own words for them, and no words of the schema library's
            for (const parameter of spec.paths["/nodes"].get.parameters) expect(section).toContain(parameter.description.replaceAll("`", ""))
            expect(section).not.toMatch(/character\(s\)|maxLength\(|a number between/)
            // a public operation's example request carries no token
            expect(section).not.toContain("Authorization: Bearer")
            const sidebar = page.getByRole("navigation").first()
            // an authenticated operation offers bearer authentication in its example request, a part
            // of the page drawn on demand, highlighted code (it is in the first group: reached before
            // the others are open, it draws less on the way)
            yield* Effect.promise(() => sidebar.getByRole("button", { name: /^Open Group/ }).first().click())
            yield* Effect.promise(() => sidebar.getByText("List all nodes of a publisher", { exact: true }).first().click())
            const ofPublisher = page.getByRole("region", { name: "List all nodes of a publisher" })
            yield* Effect.promise(() => ofPublisher.getByText("Authorization: Bearer", { exact: false }).first().waitFor(visible))
            // every group opened in the sidebar, every operation's summary is on screen
            for (let i = 0; i < 50; i++) {
              const closed = sidebar.getByRole("button", { name: /^Open Group/ })
              if ((yield* Effect.promise(() => closed.count())) === 0) break
              // all at once: the reference redraws once for the lot, not once a click (a click each took ~1.5 s of CPU)
              yield* Effect.promise(() => closed.evaluateAll((buttons) => buttons.forEach((b) => (b as unknown as { click(): void }).click())))
            }
            // the reference breaks long words with zero-width spaces: read past them
            const menu = (yield* Effect.promise(() => sidebar.innerText())).replace(/\u200b/g, "")
            for (const [path, item] of Object.entries<Json>(spec.paths)) {
              for (const operation of Object.values<Json>(item)) {
                expect(menu, `the summary of ${path}`).toContain(operation.summary)
              }
            }
            const text = yield* Effect.promise(() => page.locator("body").innerText())
            expect(text).toContain("List all nodes of a publisher")
          } else {
            yield* Effect.promise(() => listAll.getByRole("heading", { name: "List all nodes (paginated)" }).waitFor(visible))
          }
          // Test Request: the reference's request client names the page's host as the server, and sends there
          yield* Effect.promise(() => listAll.getByRole("button", { name: /Test Request/ }).first().click())
          const client = page.getByRole("dialog").first()
          yield* Effect.promise(() => client.getByRole("button", { name: /^Send/ }).first().waitFor(visible))
          expect(yield* Effect.promise(() => client.getByRole("button", { name: /^Server:/ }).first().innerText())).toContain(origin)
          yield* Effect.promise(() => client.getByRole("button", { name: /^Send/ }).first().click())
          yield* Effect.promise(() => client.getByText("200 OK").first().waitFor(visible))
          expect(sent.length, host).toBeGreaterThan(0)
          for (const answer of sent) {
            expect(answer.url.startsWith(`${origin}/nodes?`), answer.url).toBe(true)
            expect(answer.status, answer.url).toBe(200)
          }
          if (host === "127.0.0.1") {
            // late reports of the policy have a moment to arrive
            yield* Effect.promise(() => page.waitForTimeout(1000))
            const violations = yield* Effect.promise(() => page.evaluate("window.violations") as Promise<Array<string>>)
            // one report is expected: the bundle's schema library probes for eval (`new Function("")` in a
            // try) and, refused, parses without it; the policy grants no JavaScript eval on purpose
            expect(violations.filter((v) => !/^script-src eval /.test(v))).toEqual([])
            expect(violations.length).toBeLessThanOrEqual(1)
            expect(messages.filter((line) => /Content Security Policy|Refused to/i.test(line))).toEqual([])
            expect(pageErrors).toEqual([])
            // anything the page tried to fetch from elsewhere (fonts, say) was refused and it rendered all the same
            if (blocked.length > 0) console.info(`/docs asked for external resources (refused): ${blocked.join(", ")}`)
          }
          yield* Effect.promise(() => page.close())
        }
      }),
    90_000
  )
})
