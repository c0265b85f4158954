/**
 * The API's documentation: `/openapi.json` is a complete OpenAPI 3.1 document of the Api (paths,
 * parameters, the bearer scheme, ErrorResponse for errors), derived from the Api declaration itself
 * rather than a hand-written list; and `/docs` is a page that embeds its script (no CDN). The page
 * drawn in Chromium is test/Web/DocsPage.process.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, type Schema, SchemaAST } from "effect"
import { Api } from "../src/Api.ts"
import { ListNodesParams } from "../src/Catalog/Api.ts"
import { listNodesParams } from "./support/Catalogue.ts"
import { getOpenApi, getText } from "./support/Http.ts"
import { Service } from "./support/Service.ts"

type Json = Record<string, any>

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

layer(Service.layer(), { excludeTestServices: true })("documentation", (it) => {
  it.effect("GET /openapi.json is an OpenAPI 3.1 JSON document", () =>
    Effect.gen(function*() {
      const { status, contentType, spec } = yield* getOpenApi(yield* Service)
      expect(status).toBe(200)
      expect(contentType).toMatch(/^application\/json/)
      expect(spec.openapi).toMatch(/^3\.1\.\d+$/)
      expect(spec.info).toMatchObject({ title: expect.any(String), version: expect.any(String) })
      expect(typeof spec.paths).toBe("object")
    }))

  it.effect("lists every operation of the Api, and no other", () =>
    Effect.gen(function*() {
      const { spec } = yield* getOpenApi(yield* Service)
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
      const { spec } = yield* getOpenApi(yield* Service)
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
      const { spec } = yield* getOpenApi(yield* Service)
      const parameters: Array<Json> = spec.paths["/nodes"].get.parameters
      const query = parameters.filter((p) => p.in === "query").map((p) => p.name)
      // the contract's table (CONTRACT.md, "GET /nodes query parameters")...
      // (and include_banned, for site admins: issue 26)
      const contract = [...listNodesParams, "include_banned"]
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
      const { spec } = yield* getOpenApi(yield* Service)
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
      const { spec } = yield* getOpenApi(yield* Service)
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
})
