/**
 * What the OpenAPI document must say. How strict tools read it (Ajv in strict JSON Schema 2020-12
 * mode, Redocly's lint, openapi-typescript's output), tools that take seconds to load and run, is
 * checked in Tools.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { typesBaseUrl } from "../../scripts/lib/OpenApiTypes.ts"
import { apiDocument, pageServer } from "../../src/ApiDocument.ts"
import { apiErrors } from "../../src/Domain/ApiErrors.ts"

type Json = Record<string, any>

const document: Json = apiDocument(typesBaseUrl)
const schemas: Json = document.components.schemas

const operations = Object.entries<Json>(document.paths).flatMap(([path, item]) =>
  Object.entries<Json>(item).filter(([method]) => method !== "parameters").map(([method, operation]) => ({ path, method, operation }))
)
const operation = (id: string): Json => {
  const found = operations.find((o) => o.operation.operationId === id)
  if (found === undefined) throw new Error(`no operation ${id}`)
  return found.operation
}
const resolve = (ref: string): Json => schemas[ref.replace("#/components/schemas/", "")]

/** The codes a response may carry, read from the error components it refers to. */
const codesOf = (response: Json): Array<string> => {
  const schema: Json = response.content["application/json"].schema
  return (schema.oneOf ?? [schema]).map((s: Json) => resolve(s.$ref).properties.error.enum[0])
}

/** Every schema in the document, with where it is. */
const everySchema = (): Array<[string, Json]> => {
  const found: Array<[string, Json]> = []
  const walk = (where: string, value: unknown): void => {
    if (typeof value !== "object" || value === null) return
    if (Array.isArray(value)) return value.forEach((v, i) => walk(`${where}/${i}`, v))
    for (const [key, v] of Object.entries(value)) {
      if (key === "schema") found.push([`${where}/schema`, v as Json])
      walk(`${where}/${key}`, v)
    }
  }
  walk("#/paths", document.paths)
  for (const [name, schema] of Object.entries<Json>(schemas)) found.push([`#/components/schemas/${name}`, schema])
  return found
}

/** A schema and the schemas inside it, by keyword (a property named `title` is no title). */
const subschemas = (schema: unknown, visit: (schema: Json) => void): void => {
  if (typeof schema !== "object" || schema === null) return
  const s = schema as Json
  visit(s)
  for (const key of ["items", "additionalProperties", "not"]) subschemas(s[key], visit)
  for (const key of ["allOf", "anyOf", "oneOf", "prefixItems"]) for (const item of s[key] ?? []) subschemas(item, visit)
  for (const key of ["properties", "patternProperties", "$defs"]) for (const item of Object.values(s[key] ?? {})) subschemas(item, visit)
}

describe("the OpenAPI document", () => {
  it("has no generated titles, identifiers or descriptions, and a human description for every field and parameter", () => {
    const problems: Array<string> = []
    for (const [where, schema] of everySchema()) {
      subschemas(schema, (s) => {
        if ("title" in s) problems.push(`${where}: a title ${s.title}`)
        if ("$id" in s) problems.push(`${where}: an $id ${s.$id}`)
        if (/^an? /.test(s.description ?? "")) problems.push(`${where}: a generated description: ${s.description}`)
      })
    }
    for (const [name, schema] of Object.entries<Json>(schemas)) {
      for (const [field, property] of Object.entries<Json>(schema.properties ?? {})) {
        if (!/^[A-Z`]/.test(property.description ?? "")) problems.push(`${name}.${field}: no human description`)
      }
    }
    for (const { operation } of operations) {
      for (const parameter of operation.parameters ?? []) {
        if (!/^[A-Z`]/.test(parameter.description ?? "")) {
          problems.push(`${operation.operationId} ${parameter.name}: no human description`)
        }
      }
    }
    expect(problems).toEqual([])
  })

  it("names operations in the interface's style, each once", () => {
    const ids = operations.map((o) => o.operation.operationId)
    expect(new Set(ids).size).toBe(ids.length)
    for (const id of ids) expect(id).toMatch(/^[A-Z][A-Za-z0-9]+$/)
    expect(ids).toEqual(expect.arrayContaining(["ListAllNodes", "ListNodesForPublisher", "GetNodeVersion", "UpdatePublisher", "UpdateHostNode"]))
  })

  it("states the codes each error status may carry, from the classes each endpoint declares", () => {
    for (const { operation } of operations) {
      for (const [status, response] of Object.entries<Json>(operation.responses)) {
        if (Number(status) < 400) continue
        const codes = codesOf(response)
        expect(codes.length, `${operation.operationId} ${status}`).toBeGreaterThan(0)
        for (const code of codes) {
          expect(apiErrors.find((e) => e.code === code)?.status, `${operation.operationId} ${status} ${code}`).toBe(Number(status))
        }
      }
      expect(codesOf(operation.responses["500"])).toEqual(["internal_error"])
      expect(codesOf(operation.responses["405"])).toEqual(["method_not_allowed"])
    }
    expect(codesOf(operation("GetNode").responses["403"])).toEqual(["node_banned"])
    expect(codesOf(operation("PublishVersion").responses["409"]).sort()).toContain("version_exists")
    expect(codesOf(operation("UpdatePublisher").responses["413"])).toEqual(["payload_too_large"])
    expect(codesOf(operation("UploadArchive").responses["413"])).toEqual(["payload_too_large"])
    // a JSON route answers a body of another type 415 (BodyChecks.ts), so each declares it
    for (const { operation } of operations.filter((o) => o.operation.requestBody?.content["application/json"] !== undefined)) {
      expect(codesOf(operation.responses["415"]), operation.operationId).toEqual(["unsupported_media_type"])
    }
    // adding an existing member changes their role and answers the record 200, a new one 201
    expect(Object.keys(operation("AddMember").responses).filter((s) => s < "300").sort()).toEqual(["200", "201"])
    // an operation that takes no input cannot fail to decode it
    expect(operation("Health").responses["400"]).toBeUndefined()
    // every operation but the liveness probe needs the database, and says what its outage answers
    for (const { operation } of operations) {
      if (operation.operationId === "Health") continue
      expect(codesOf(operation.responses["503"]), operation.operationId).toContain("database_unavailable")
      expect(operation.responses["503"].headers?.["Retry-After"], operation.operationId).toBeDefined()
    }
    expect(operation("Health").responses["503"]).toBeUndefined()
    expect(codesOf(operation("ClaimMyNode").responses["503"]).sort()).toEqual(["database_unavailable", "service_unavailable"])
  })

  it("has enums for statuses and booleans as booleans", () => {
    expect(schemas.NodeStatus.enum).toEqual(["NodeStatusActive", "NodeStatusDeleted", "NodeStatusBanned"])
    expect(schemas.NodeVersionStatus.enum).toHaveLength(5)
    expect(schemas.MediaTaskStatus.enum).toEqual(["CREATED", "IN_PROGRESS", "COMPLETED", "FAILED"])
    expect(resolve(schemas.Node.properties.status.$ref)).toBe(schemas.NodeStatus)
    for (const [where, schema] of everySchema()) {
      expect(JSON.stringify(schema), where).not.toMatch(/"enum":\["true","false"/)
    }
    const latest = operation("ListAllNodes").parameters.find((p: Json) => p.name === "latest")
    expect(latest.schema.type).toBe("boolean")
  })

  it("declares security as it is", () => {
    expect(operation("GetNode").security).toEqual([])
    // a token only matters to include_banned there (site admins)
    expect(operation("ListAllNodes").security).toEqual([{ bearer: [] }, {}])
    expect(operation("ListNodesForPublisher").security).toEqual([{ bearer: [] }])
    // a token is optional there: anonymous callers see less
    expect(operation("GetPublisher").security).toEqual([{ bearer: [] }, {}])
    // publishing also takes a personal access token in the body instead
    expect(operation("PublishVersion").security).toEqual([{ bearer: [] }, {}])
    expect(resolve(operation("PublishVersion").requestBody.content["application/json"].schema.$ref).properties).toHaveProperty(
      "personal_access_token"
    )
    const upload = operation("UploadArchive").parameters
    for (const name of ["expires", "signature"]) expect(upload.find((p: Json) => p.name === name)?.required, name).toBe(true)
  })

  it("names its server, license and tags", () => {
    expect(document.servers).toEqual([{ url: typesBaseUrl, description: expect.any(String) }])
    expect(apiDocument("https://nodes.example.org").servers[0].url).toBe("https://nodes.example.org")
    // /docs names the public URL's path only, resolved against whatever host the page was opened on
    expect(pageServer("http://localhost:8080")).toBe("/")
    expect(pageServer("https://example.org/registry")).toBe("/registry")
    expect(document.info.license.name).toBeTypeOf("string")
    for (const tag of document.tags) expect(tag.description, tag.name).toMatch(/^[A-Z]/)
    const used = new Set(operations.flatMap((o) => o.operation.tags))
    expect(document.tags.map((t: Json) => t.name).sort()).toEqual([...used].sort())
  })

  it("declares the response headers the service sends, and 304 where it is served", () => {
    const header = (response: Json, name: string) => document.components.headers[response.headers?.[name]?.$ref?.split("/").pop()]
    const list = operation("ListAllNodes")
    for (const status of ["200", "304"]) {
      for (const name of ["ETag", "x-cache", "Cache-Control"]) expect(header(list.responses[status], name), `${status} ${name}`).toBeDefined()
    }
    expect(list.parameters.find((p: Json) => p.name === "If-None-Match")?.in).toBe("header")
    expect(header(list.responses["405"], "Allow")).toBeDefined()
    expect(header(operation("ClaimMyNode").responses["429"], "Retry-After")).toBeDefined()
    for (const id of ["StartStyleTransfer", "PollSkinEnhancer", "GenerateMusic"]) {
      expect(header(operation(id).responses["200"], "x-vendor-mode")?.schema.enum, id).toEqual(["simulated"])
    }
    expect(header(operation("StartStyleTransfer").responses["429"], "x-vendor-mode")).toBeDefined()
    expect(header(operation("DownloadArchive").responses["200"], "Content-Length")).toBeDefined()
  })

  it("describes the music stream as NDJSON, one schema per event type, told apart by type", () => {
    const content: Json = operation("GenerateMusic").responses["200"].content
    expect(Object.keys(content)).toEqual(["application/x-ndjson"])
    const events: Json = content["application/x-ndjson"].schema
    const types = events.oneOf.map((e: Json) => resolve(e.$ref).properties.type.enum[0])
    expect(types.sort()).toEqual(["audio_chunk", "complete", "cost", "duration", "error", "title", "titles"])
    expect(events.discriminator.propertyName).toBe("type")
    for (const [type, ref] of Object.entries<string>(events.discriminator.mapping)) {
      expect(resolve(ref).properties.type.enum).toEqual([type])
    }
  })
})
