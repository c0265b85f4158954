/**
 * The document tells the truth about unknown fields (issue 22). For every request body of the
 * service's own `/openapi.json`, and every object inside one, a valid body is sent with one field
 * no schema declares, at that object:
 * - where the document says `additionalProperties: false`, the answer is `400 bad_request` whose
 *   message names the field by its path (`node_versions.0.rb_unknown_field`);
 * - where it allows other fields, the body is taken: a 2xx answer.
 * A body added without a decision (the document's default is `false`) fails here until it gets
 * one (docs/compatibility.md, "Unknown fields").
 *
 * The valid bodies are the least each schema requires, plus every object it may hold, with known
 * values of the seeded catalogue where the schema alone cannot say what is valid (a fresh node id).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { seedActors, tokensFor } from "../support/Actors.ts"
import { Catalogue } from "../support/Catalogue.ts"
import { fetchText } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"

type Json = Record<string, any>

/** The name sent where no schema has it. */
const unknown = "rb_unknown_field"

const tokens = tokensFor("owner", "siteAdmin")

/** Fresh values where a write needs one (an id that is free, a version not yet published). */
let fresh = 0
const next = () => ++fresh

/** Values the schema alone cannot make valid, by field name. */
const hints: Readonly<Record<string, () => unknown>> = {
  id: () => `rb-made-${next()}`,
  repository: () => "https://repohost.example/ann/rb-made",
  version: () => `5.0.${next()}`,
  node_id: () => "rb-node",
  host_node_name: () => `RbMade${next()}`,
  video_url: () => "https://videos.example/clip.mp4",
  image: () => "https://images.example/a.png",
  reference_image: () => "https://images.example/b.png"
}

/** Path parameters: the seeded catalogue's. */
const pathValues: Readonly<Record<string, string>> = {
  publisherId: "acme",
  nodeId: "rb-node",
  version: "1.0.0",
  versionId: "1.0.0",
  hostNodeName: "RbLoader"
}

const resolve = (doc: Json, schema: Json): Json =>
  typeof schema.$ref === "string" ? resolve(doc, doc.components.schemas[schema.$ref.replace("#/components/schemas/", "")]) : schema

/** An object with declared fields (a map, such as translations, has none). */
const isRecordSchema = (s: Json) => s.type === "object" && Object.keys(s.properties ?? {}).length > 0

/** A field a client fills: not read-only, which is output only and ignored on input. */
const isInput = (field: Json) => field.readOnly !== true

/**
 * The least valid value of `schema`: required fields, and every object field (or list of objects)
 * so that each object inside the body is reached; a hint where the field has one. A form takes its
 * hinted fields too: its schema cannot require one of two (a video file or a URL).
 */
const leastValue = (doc: Json, schema: Json, name?: string, hinted = false): unknown => {
  const hint = name === undefined ? undefined : hints[name]
  if (hint !== undefined) return hint()
  const s = resolve(doc, schema)
  if (s.const !== undefined) return s.const
  if (s.enum !== undefined) return s.enum[0]
  const choice = s.anyOf ?? s.oneOf
  if (choice !== undefined) return leastValue(doc, choice[0], name)
  switch (s.type) {
    case "string":
      return "x".repeat(Math.max(1, s.minLength ?? 1))
    case "integer":
    case "number":
      return s.minimum ?? 0
    case "boolean":
      return false
    case "array":
      return [leastValue(doc, s.items ?? {}, undefined)]
    case "object": {
      const required: ReadonlyArray<string> = s.required ?? []
      const fields = Object.entries<Json>(s.properties ?? {}).filter(([key, p]) => {
        const field = resolve(doc, p)
        return required.includes(key) || (hinted && key in hints) ||
          (isInput(field) && (isRecordSchema(field) || (field.type === "array" && isRecordSchema(resolve(doc, field.items ?? {})))))
      })
      return Object.fromEntries(fields.map(([key, p]) => [key, leastValue(doc, p, key)]))
    }
    default:
      return "x"
  }
}

/** Each object of a body with declared fields: where it sits in `value`, and its schema. */
const objectsOf = (doc: Json, schema: Json, value: unknown, at: ReadonlyArray<string | number> = []): Array<{ at: ReadonlyArray<string | number>; schema: Json }> => {
  const s = resolve(doc, schema)
  if (Array.isArray(value)) return value.length > 0 && s.items !== undefined ? objectsOf(doc, s.items, value[0], [...at, 0]) : []
  if (!isRecordSchema(s) || typeof value !== "object" || value === null) return []
  return [
    { at, schema: s },
    ...Object.entries(value).flatMap(([key, inner]) => s.properties[key] === undefined ? [] : objectsOf(doc, s.properties[key], inner, [...at, key]))
  ]
}

/** `value` with the unknown field added to the object at `at`. */
const withUnknownAt = (value: unknown, at: ReadonlyArray<string | number>): unknown => {
  if (at.length === 0) return { ...(value as Json), [unknown]: "x" }
  const [key, ...rest] = at as [string | number, ...Array<string | number>]
  if (Array.isArray(value)) return value.map((item, i) => (i === key ? withUnknownAt(item, rest) : item))
  return { ...(value as Json), [key]: withUnknownAt((value as Json)[key], rest) }
}

/** Whether the document refuses fields other than the declared ones here. */
const refuses = (schema: Json) => schema.additionalProperties === false

interface Case {
  readonly what: string
  readonly method: string
  readonly path: string
  readonly contentType: string
  readonly body: unknown
  readonly field: string
  readonly refused: boolean
}

/** Every request body of the document, and every object in it, with the unknown field there. */
const casesOf = (doc: Json): Array<Case> =>
  Object.entries<Json>(doc.paths).flatMap(([template, item]) =>
    Object.entries<Json>(item).flatMap(([method, operation]) =>
      Object.entries<Json>(operation.requestBody?.content ?? {}).flatMap(([contentType, { schema }]) => {
        const path = template.replace(/\{(\w+)\}/g, (_, name: string) => pathValues[name] ?? name)
        const isForm = contentType !== "application/json"
        return objectsOf(doc, schema, leastValue(doc, schema, undefined, isForm)).map(({ at, schema: object }) => {
          const field = [...at, unknown].join(".")
          return {
            what: `${operation.operationId} (${contentType}) with '${field}'`,
            method: method.toUpperCase(),
            path,
            contentType,
            // made afresh for each case: the hints hand out new ids
            body: withUnknownAt(leastValue(doc, schema, undefined, isForm), at),
            field,
            refused: refuses(object)
          }
        })
      })
    )
  )

/** A case's request: JSON, or a form (URL-encoded or multipart) of text fields. */
const requestOf = (c: Case): RequestInit => {
  const authorization = `Bearer ${tokenFor(c.path)}`
  const fields = Object.entries(c.body as Record<string, string>)
  if (c.contentType === "multipart/form-data") {
    const form = new FormData()
    for (const [key, value] of fields) form.append(key, value)
    return { method: c.method, headers: { authorization }, body: form }
  }
  if (c.contentType === "application/x-www-form-urlencoded") return { method: c.method, headers: { authorization }, body: new URLSearchParams(fields) }
  return { method: c.method, headers: { authorization, "content-type": c.contentType }, body: JSON.stringify(c.body) }
}

const sendCase = (service: Running, c: Case) =>
  Effect.promise(async () => {
    const response = await service.fetch(c.path, requestOf(c))
    return { status: response.status, text: await response.text() }
  })

/** A publisher's routes as its owner, every other as a site admin: either may do all these. */
const tokenFor = (path: string) => (path.startsWith("/publishers/") ? tokens.owner : tokens.siteAdmin)

layer(Service.layer((c) => ({ ...c, vendorMode: "simulated" })), { excludeTestServices: true })("unknown fields in request bodies", (it) => {
  it.effect("every request body refuses unknown fields (400 naming them) exactly where /openapi.json says additionalProperties: false", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* new Catalogue().add(service, {
        publishers: [{ id: "acme" }],
        nodes: [{ id: "rb-node", publisher_id: "acme", repository: "https://repohost.example/ann/rb-node" }],
        versions: [{ node_id: "rb-node", version: "1.0.0", status: "NodeVersionStatusActive" }]
      })
      yield* seedActors(service, tokens)
      expect((yield* Effect.promise(() =>
        fetchText(service, "POST", "/nodes/rb-node/versions/1.0.0/host-nodes", { token: tokens.siteAdmin, body: [{ host_node_name: "RbLoader" }] })
      )).status).toBe(201)

      const doc = (yield* Effect.promise(() => service.fetch("/openapi.json").then((r) => r.json()))) as Json
      const cases = casesOf(doc)
      const wrong: Array<string> = []
      for (const c of cases) {
        const answer = yield* sendCase(service, c)
        const named = answer.status === 400 && answer.text.includes(`'${c.field}'`) && answer.text.includes("\"bad_request\"")
        const taken = answer.status >= 200 && answer.status < 300
        if (c.refused ? !named : !taken) {
          wrong.push(`${c.what}: the document ${c.refused ? "refuses" : "allows"} it, the service answered ${answer.status} ${answer.text.slice(0, 200)}`)
        }
      }
      expect(wrong).toEqual([])
      // every body was reached, both kinds among them, nested objects too
      const bodies = new Set(cases.map((c) => `${c.method} ${c.path} ${c.contentType}`))
      expect(bodies.size).toBeGreaterThanOrEqual(20)
      expect(cases.filter((c) => c.refused).length).toBeGreaterThan(0)
      expect(cases.filter((c) => !c.refused).length).toBeGreaterThan(0)
      expect(cases.map((c) => c.field)).toEqual(expect.arrayContaining([
        `node.${unknown}`,
        `node_version.${unknown}`,
        `node_versions.0.${unknown}`,
        `0.${unknown}`
      ]))
    }))
})
