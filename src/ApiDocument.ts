/**
 * The OpenAPI document as published (`/openapi.json`, `/docs`, clients generated from it): what
 * `OpenApi.fromApi` derives from the Api, made precise where the derivation is vague or silent.
 *
 * Most of it is derived from the declaration itself: the error classes give each error status its
 * codes, the middlewares tell optional from required bearer authentication, the Domain's music
 * events describe the NDJSON stream. Three short tables hold what the declaration does not carry:
 * the tags' descriptions, the response headers handlers set themselves, and the signed upload's
 * parameters, which the schema keeps optional only so that a missing one answers 403.
 */
import { HttpApiScalar, OpenApi } from "effect/http-api"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { Effect, Layer, Schema } from "effect"
import { AppConfig } from "./Config.ts"
import type { ExtraRoute } from "./Http/Routes.ts"
import { Api } from "./Api.ts"
import {
  apiErrors,
  BadRequest,
  DatabaseUnavailable,
  MethodNotAllowed,
  PayloadTooLarge,
  QuotaExceeded,
  RateLimited,
  UnsupportedMediaType
} from "./Domain/ApiErrors.ts"
import { OptionalAuthentication } from "./Domain/Auth.ts"
import { AnyEndpoint } from "./Domain/RegistryApi.ts"
import { MusicEvent } from "./Domain/MusicEvents.ts"

type Json = Record<string, any>

const schemaRef = (name: string) => `#/components/schemas/${name}`

// --- schemas: no generated titles, identifiers or descriptions ---------------------------------

/** Effect's own wording for its filters ("a string at most 200 character(s) long", "an integer"). */
const isGeneratedDescription = (text: unknown) => typeof text === "string" && /^an? /.test(text)

/** Keywords whose value is a schema, and those whose value is a list or a map of schemas. */
const subschema = ["items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else"]
const subschemaLists = ["allOf", "anyOf", "oneOf", "prefixItems"]
const subschemaMaps = ["properties", "patternProperties", "$defs"]

/**
 * Visits every schema inside a schema, then the schema itself (never mistaking a property named
 * `title` for the keyword).
 */
const eachSchema = (schema: unknown, visit: (schema: Json) => void): void => {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return
  const s = schema as Json
  for (const key of subschema) eachSchema(s[key], visit)
  for (const key of subschemaLists) if (Array.isArray(s[key])) for (const item of s[key]) eachSchema(item, visit)
  for (const key of subschemaMaps) if (s[key] !== undefined) for (const item of Object.values(s[key])) eachSchema(item, visit)
  visit(s)
}

/**
 * Drops what Effect writes for people who read its source: titles named after filters
 * (`maxLength(200)`), `$id`s of its built-in schemas (the same one for every `unknown`, which
 * strict validators refuse), and filter descriptions; an open record's value becomes `true`.
 */
const cleanSchema = (schema: Json) =>
  eachSchema(schema, (s) => {
    delete s.title
    if (typeof s.$id === "string" && s.$id.startsWith("/schemas/")) delete s.$id
    if (isGeneratedDescription(s.description)) delete s.description
    if (typeof s.additionalProperties === "object" && Object.keys(s.additionalProperties).length === 0) {
      s.additionalProperties = true
    }
    // an integer's safe-integer bounds say nothing a client needs (Effect 4 writes them on `Int`)
    if (s.type === "integer" && s.minimum === -Number.MAX_SAFE_INTEGER) delete s.minimum
    if (s.type === "integer" && s.maximum === Number.MAX_SAFE_INTEGER) delete s.maximum
    // a refinement or an annotated reference comes as an allOf (Effect 4 puts a field's description
    // beside the reference), and so do the Domain's `documentedAs` fragments: they all belong to the
    // schema itself, a later part saying what the schema is where it differs
    if (Array.isArray(s.allOf) && s.allOf.every(isObject)) {
      const parts: Array<Json> = s.allOf
      delete s.allOf
      for (const part of parts) {
        if (part.type !== undefined && s.type !== undefined && part.type !== s.type) {
          for (const key of Object.keys(s)) if (!annotationKeywords.has(key)) delete s[key]
        }
        Object.assign(s, part)
      }
    }
  })

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

/** Keywords that describe a schema without constraining it: they survive a change of type. */
const annotationKeywords = new Set(["description", "default", "examples", "readOnly", "writeOnly", "deprecated", "title"])

/**
 * Effect 4 names a class's component after its encoded side (`NodeEncoded`) and numbers the
 * copies it meets with other annotations (`NodeEncoded_2`); the document keeps the class's own
 * name, once. Copies that still differ once renamed keep their numbered names.
 */
const renameComponents = (spec: Json): Json => {
  const schemas: Json = spec.components?.schemas ?? {}
  const renamed = new Map<string, string>()
  for (const name of Object.keys(schemas)) {
    const base = name.replace(/(_\d+)$/, "").replace(/Encoded$/, "")
    if (base !== name) renamed.set(name, base)
  }
  const text = JSON.stringify(spec).replace(/"#\/components\/schemas\/(\w+)"/g, (whole, name: string) => {
    const to = renamed.get(name)
    return to === undefined ? whole : `"${schemaRef(to)}"`
  })
  const result: Json = JSON.parse(text)
  const merged: Json = {}
  for (const [name, schema] of Object.entries<Json>(result.components?.schemas ?? {})) {
    const to = renamed.get(name) ?? name
    if (merged[to] === undefined) merged[to] = schema
    else if (JSON.stringify(merged[to]) !== JSON.stringify(schema)) merged[name] = schema
  }
  if (result.components !== undefined) result.components.schemas = merged
  return result
}

/** Every schema of the document: components, parameters, bodies and responses. */
const documentSchemas = (spec: Json): Array<Json> => [
  ...Object.values<Json>(spec.components?.schemas ?? {}),
  ...operations(spec).flatMap(({ operation }) => [
    ...(operation.parameters ?? []).map((p: Json) => p.schema),
    ...[operation.requestBody, ...Object.values<Json>(operation.responses ?? {})].flatMap((part) =>
      Object.values<Json>(part?.content ?? {}).map((media) => media.schema)
    )
  ])
].filter((s): s is Json => typeof s === "object" && s !== null)

/** A component that is one scalar (Effect's `Int`, `DateTime`, `UUID`) reads better inline. */
const isScalar = (schema: Json) =>
  ["string", "integer", "number", "boolean"].includes(schema.type) &&
  !["enum", "const", "properties", "oneOf", "anyOf", "allOf"].some((k) => k in schema)

const inlineScalarComponents = (spec: Json) => {
  const schemas: Json = spec.components.schemas
  const scalars = new Map(Object.entries<Json>(schemas).filter(([, s]) => isScalar(s)).map(([name, s]) => [schemaRef(name), s]))
  for (const root of documentSchemas(spec)) {
    eachSchema(root, (s) => {
      const target = typeof s.$ref === "string" ? scalars.get(s.$ref) : undefined
      if (target === undefined) return
      delete s.$ref
      // the reference's own annotations (a field's description) win over the component's
      for (const [key, value] of Object.entries(target)) if (!(key in s)) s[key] = structuredClone(value)
    })
  }
  for (const name of Object.keys(schemas)) if (scalars.has(schemaRef(name))) delete schemas[name]
}

/**
 * A form body (multipart, URL-encoded) is written in place, as it was before Effect 4 made its
 * named schema a component: its shape is the form's, not a JSON object's.
 */
const inlineFormBodies = (spec: Json) => {
  const schemas: Json = spec.components.schemas
  const inlined = new Set<string>()
  for (const { operation } of operations(spec)) {
    for (const [type, media] of Object.entries<Json>(operation.requestBody?.content ?? {})) {
      const ref = media.schema?.$ref
      if (type === "application/json" || typeof ref !== "string") continue
      const name = ref.replace(schemaRef(""), "")
      media.schema = structuredClone(schemas[name])
      inlined.add(name)
    }
  }
  const text = JSON.stringify({ paths: spec.paths, schemas })
  for (const name of inlined) if (!text.includes(`"${schemaRef(name)}"`)) delete schemas[name]
}

// --- operations ---------------------------------------------------------------------------------

interface Located {
  readonly path: string
  readonly method: string
  readonly operation: Json
}

const methods = new Set(["get", "put", "post", "delete", "patch", "head", "options", "trace"])

const operations = (spec: Json): Array<Located> =>
  Object.entries<Json>(spec.paths ?? {}).flatMap(([path, item]) =>
    Object.entries<Json>(item).filter(([method]) => methods.has(method)).map(([method, operation]) => ({ path, method, operation }))
  )

/** `catalog.listAllNodes` -> `ListAllNodes`: the interface's style, one name per operation. */
const pascalOperationId = (operationId: string) => {
  const name = operationId.slice(operationId.lastIndexOf(".") + 1)
  return name.charAt(0).toUpperCase() + name.slice(1)
}

/** `METHOD /path` of each endpoint behind `middleware`, as the document writes paths. */
const endpointsBehind = (middleware: object): Set<string> =>
  new Set(Object.values(Api.groups).flatMap((group) =>
    Object.values(group.endpoints)
      .filter((endpoint) => [...endpoint.middlewares].some((m) => m === middleware))
      .map((endpoint) => `${endpoint.method.toLowerCase()} ${endpoint.path.replace(/:(\w+)/g, "{$1}")}`)
  ))

// --- errors: each status names the classes, hence the codes, it may carry ------------------------

/**
 * The fields an error class sends besides `error` and `message` (ArchiveRejected's `details`), as
 * the derived document has them; fields that travel inside the service only (`serviceOnly`,
 * documented as anything) are left out.
 */
const extraFields = (generated: Json | undefined): Json =>
  Object.fromEntries(Object.entries((generated?.properties ?? {}) as Record<string, Json>).filter(([name, schema]) =>
    !["_tag", "error", "message"].includes(name) &&
    Object.keys(schema).some((key) => key !== "description" && key !== "title")
  ))

/** Each error class's component: its code as the only `error`, a message for people, and its own fields. */
const errorComponent = (error: typeof apiErrors[number], generated?: Json): Json => ({
  type: "object",
  description: error.description,
  required: ["error", "message"],
  properties: {
    error: { type: "string", enum: [error.code], description: "Stable error code" },
    message: { type: "string", description: "What went wrong, for people; wording may change" },
    ...extraFields(generated)
  },
  additionalProperties: false
})

/** The media proxy's paths, whose errors carry `detail` too (Http/ErrorDetail.ts). */
const proxyPrefix = "/proxy/"

/** The component of an error class as the media proxy answers it. */
const detailedName = (name: string) => `${name}WithDetail`

/**
 * An error class's component with `detail`, the message again: what the media proxy answers. Not
 * required: the few refusals written on the bare socket, before a request could be read (not
 * HTTP, a late or oversized head), have no route to know the proxy by.
 */
const detailedComponent = (error: typeof apiErrors[number], generated?: Json): Json => {
  const plain = errorComponent(error, generated)
  return {
    ...plain,
    properties: {
      ...plain.properties,
      detail: {
        type: "string",
        description: "The message again, where the host application's music node reads it; absent only on a request that is not readable HTTP"
      }
    }
  }
}

const errorNames: ReadonlySet<string> = new Set([...apiErrors.map((e) => e.identifier), "ErrorResponse"])
const errorByName: ReadonlyMap<string, typeof apiErrors[number]> = new Map(apiErrors.map((e) => [e.identifier, e]))

/** The error classes an error response refers to. */
const classesOf = (schema: Json | undefined): Array<string> =>
  schema === undefined
    ? []
    : typeof schema.$ref === "string"
    ? [schema.$ref.replace(schemaRef(""), "")]
    : [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])].flatMap(classesOf)

/** The classes every endpoint declares (Domain/RegistryApi.ts): named first in their status. */
const everyEndpoints: ReadonlySet<string> = new Set([...AnyEndpoint.error].map((error) => (error as typeof apiErrors[number]).identifier))

const errorResponse = (names: ReadonlyArray<string>, headers?: Json): Json => {
  const unique = [...new Set(names)].sort((a, b) => Number(everyEndpoints.has(b)) - Number(everyEndpoints.has(a)))
  const refs = unique.map((name) => ({ $ref: schemaRef(name) }))
  return {
    description: unique.map((name) => {
      const error = errorByName.get(name)!
      return `\`${error.code}\`: ${error.description}`
    }).join("; "),
    ...(headers === undefined ? {} : { headers }),
    content: { "application/json": { schema: refs.length === 1 ? refs[0] : { oneOf: refs } } }
  }
}

// --- headers the handlers set -------------------------------------------------------------------

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` })

const headers: Json = {
  ETag: {
    description: "Validator of the answer: send it back in If-None-Match to get 304 while it is unchanged",
    schema: { type: "string" }
  },
  CacheControl: { description: "`no-cache`: revalidate before reuse", schema: { type: "string" } },
  XCache: {
    description: "Whether the page came from the shared page cache (`hit`), was rendered now (`miss`), or bypassed it (`bypass`, `latest=true`)",
    schema: { type: "string", enum: ["hit", "miss", "bypass"] }
  },
  RetryAfter: { description: "Seconds to wait before trying again", schema: { type: "integer", minimum: 0 } },
  RateLimitPolicy: {
    description: "The limit that applies (draft-ietf-httpapi-ratelimit-headers): on anonymous reads and their 429, `\"anonymous\";q=600;qu=\"requests\";w=60` (RATE_LIMIT_ANONYMOUS_PER_MINUTE); with `quota_exceeded`, the quota refused, `\"operations-day\";q=500;qu=\"requests\";w=86400`, `\"tasks-in-flight\";q=10;qu=\"concurrent-requests\"` or `\"upload-bytes-day\";q=<bytes>;qu=\"content-bytes\";w=86400`",
    schema: { type: "string" }
  },
  RateLimit: {
    description: "What is left of that limit (`r`) and the seconds until there is room again (`t`): `\"anonymous\";r=599;t=60`, `\"operations-day\";r=0;t=3600`",
    schema: { type: "string" }
  },
  Allow: { description: "The methods the path takes", schema: { type: "string" } },
  XVendorMode: {
    description: "`simulated` when the service answers from its built-in simulation (VENDOR_MODE=simulated) instead of the vendor",
    schema: { type: "string", enum: ["simulated"] }
  },
  ContentDisposition: { description: "`attachment` with the archive's file name", schema: { type: "string" } },
  MediaDisposition: {
    description: "`inline` for images, audio and video a browser cannot run, `attachment` for every other type; with the file's name",
    schema: { type: "string" }
  },
  NoSniff: { description: "`nosniff`: the declared type is the only one a browser may assume", schema: { type: "string", enum: ["nosniff"] } },
  ContentLength: { description: "Size of the archive in bytes", schema: { type: "integer", minimum: 0 } }
}

const pageHeaders = { ETag: headerRef("ETag"), "Cache-Control": headerRef("CacheControl"), "x-cache": headerRef("XCache") }

/** Headers of the successful answers, by operation id. */
const successHeaders: Record<string, Json> = {
  ListAllNodes: pageHeaders,
  GetNode: { ETag: headerRef("ETag"), "Cache-Control": headerRef("CacheControl") },
  DownloadArchive: { "Content-Disposition": headerRef("ContentDisposition"), "Content-Length": headerRef("ContentLength") },
  DownloadMediaFile: { "Content-Disposition": headerRef("MediaDisposition"), "X-Content-Type-Options": headerRef("NoSniff") },
  GenerateMusic: { "Cache-Control": headerRef("CacheControl"), "x-vendor-mode": headerRef("XVendorMode") },
  GenerateTextToMusic: { "Cache-Control": headerRef("CacheControl"), "x-vendor-mode": headerRef("XVendorMode") }
}

/** Operations every answer of which, errors included, may carry `x-vendor-mode` (Http/VendorMode.ts). */
const proxyPrefixes = ["/proxy/imagevendor/", "/proxy/musicvendor/"]

// --- tags ---------------------------------------------------------------------------------------

const tagDescriptions: Record<string, string> = {
  "Catalogue": "Browsing, searching and installing nodes and their versions: public, no token needed",
  "Publisher nodes": "The nodes of one publisher; banned ones only for its members and site admins",
  "Publishers": "Publishers: the accounts that own nodes, with their members and roles",
  "Personal access tokens": "Tokens a publisher's CLI publishes with; the value is shown once, at creation",
  "Claiming": "Taking over an unclaimed node by proving ownership of its repository",
  "Host-nodes": "The host-node records (classes a node version provides to the host application)",
  "Site administration": "Moderation of nodes, versions and publishers by site admins",
  "Publishing": "Creating and maintaining nodes and versions, publishing from a CLI, uploading and downloading archives",
  "Operations": "Liveness and readiness probes",
  "Media proxy": "AI media operations proxied to their vendors: image style transfer, skin enhancement, video to music",
  "Reviews": "Star ratings of nodes by signed-in users, one per user and node",
  "API keys": "A user's API keys: the X-API-KEY header authenticates the media proxy and media storage as their user",
  "Media storage": "Files the host's API nodes upload for a vendor to read: a signed upload URL, a public download URL, 24 hours of life"
}

// --- the music stream ---------------------------------------------------------------------------

/** The events' schemas as components, and the `oneOf` by `type` that one NDJSON line is. */
const musicEvents = (spec: Json): Json => {
  const made = Schema.toJsonSchemaDocument(MusicEvent)
  const text = JSON.stringify(made.definitions).replaceAll("\"#/$defs/", `"${schemaRef("")}`)
  const defs: Json = JSON.parse(text)
  const union = defs.MusicEvent
  delete defs.MusicEvent
  Object.assign(spec.components.schemas, defs)
  const members: Array<Json> = union.anyOf ?? union.oneOf
  return {
    oneOf: members,
    discriminator: {
      propertyName: "type",
      mapping: Object.fromEntries(members.map((m) => {
        const name = m.$ref.replace(schemaRef(""), "")
        return [defs[name].properties.type.enum[0], m.$ref]
      }))
    },
    description: "Each line of the answer is an event, told apart by `type`: these are the known types, in the shapes known; the vendor's other types and shapes pass unchanged. A blank line is a keep-alive"
  }
}

// --- the document -------------------------------------------------------------------------------

/** Operations that answer without the database; every other one is 503 while it is away. */
const withoutDatabase = new Set(["Health"])

/** The reads the anonymous limit leaves alone: the probes (Http/AnonymousLimit.ts). */
const unlimitedReads = new Set(["Health", "Ready"])

const rateLimitHeaders = { "RateLimit-Policy": headerRef("RateLimitPolicy"), RateLimit: headerRef("RateLimit") }

/** The signed upload's query parameters: required, though a missing one answers 403 `invalid_signature`. */
const signedUploadParameters = new Set(["expires", "signature"])
const signedUploads = new Set(["UploadArchive", "UploadMediaFile"])

const precise = (generated: Json): Json => {
  const spec = renameComponents(generated)
  spec.components ??= {}
  spec.components.schemas ??= {}
  spec.info.license = { name: "Proprietary", identifier: "LicenseRef-Proprietary" }
  const optionalBearer = endpointsBehind(OptionalAuthentication)

  for (const { path, method, operation } of operations(spec)) {
    operation.operationId = pascalOperationId(operation.operationId)
    if (optionalBearer.has(`${method} ${path}`)) operation.security = [{ bearer: [] }, {}]

    const responses: Json = operation.responses
    // an operation that takes nothing (no parameter, no body) has nothing a client can get wrong
    const takesNothing = (operation.parameters ?? []).length === 0 && operation.requestBody === undefined
    if (takesNothing && classesOf(responses["400"]?.content?.["application/json"]?.schema).every((name) => name === BadRequest.identifier)) {
      delete responses["400"]
    }
    for (const [status, response] of Object.entries<Json>(responses)) {
      if (Number(status) < 400) continue
      const classes = classesOf(response.content?.["application/json"]?.schema)
      const quota = classes.includes(QuotaExceeded.identifier) ? rateLimitHeaders : {}
      responses[status] = errorResponse(classes, status === "429" ? { "Retry-After": headerRef("RetryAfter"), ...quota } : undefined)
    }
    responses["405"] = errorResponse([MethodNotAllowed.identifier], { Allow: headerRef("Allow") })
    if (operation.requestBody !== undefined && responses["413"] === undefined) {
      responses["413"] = errorResponse([PayloadTooLarge.identifier])
    }
    // a JSON route refuses a body of another type (BodyChecks.ts) before it decodes anything
    if (operation.requestBody?.content?.["application/json"] !== undefined && responses["415"] === undefined) {
      responses["415"] = errorResponse([UnsupportedMediaType.identifier])
    }
    if (!withoutDatabase.has(operation.operationId)) {
      const others = classesOf(responses["503"]?.content?.["application/json"]?.schema)
      responses["503"] = errorResponse([...others, DatabaseUnavailable.identifier], { "Retry-After": headerRef("RetryAfter") })
    }
    // anonymous reads are limited per client address (Http/AnonymousLimit.ts); the probes are not
    const limited = method === "get" && !unlimitedReads.has(operation.operationId)
    if (limited) {
      const others = classesOf(responses["429"]?.content?.["application/json"]?.schema).filter((name) => name !== RateLimited.identifier)
      responses["429"] = errorResponse([...others, RateLimited.identifier], { "Retry-After": headerRef("RetryAfter"), ...rateLimitHeaders })
    }

    if (path.startsWith(proxyPrefix)) {
      for (const [status, response] of Object.entries<Json>(responses)) {
        const json = response.content?.["application/json"]
        if (Number(status) < 400 || json?.schema === undefined) continue
        json.schema = JSON.parse(JSON.stringify(json.schema).replace(/#\/components\/schemas\/(\w+)/g, (_, name: string) => schemaRef(detailedName(name))))
      }
    }

    const extra = successHeaders[operation.operationId]
    for (const [status, response] of Object.entries<Json>(responses)) {
      const always = proxyPrefixes.some((prefix) => path.startsWith(prefix)) ? { "x-vendor-mode": headerRef("XVendorMode") } : {}
      const own = Number(status) < 400 ? { ...extra, ...(limited ? rateLimitHeaders : {}) } : {}
      const all = { ...response.headers, ...own, ...always }
      if (Object.keys(all).length > 0) response.headers = all
    }
    for (const parameter of operation.parameters ?? []) {
      if (isGeneratedDescription(parameter.description)) delete parameter.description
      if (signedUploads.has(operation.operationId) && signedUploadParameters.has(parameter.name)) parameter.required = true
    }
    const stream = responses["200"]?.content?.["application/x-ndjson"]
    if (stream !== undefined) stream.schema = musicEvents(spec)
  }

  // GET /nodes and GET /nodes/{nodeId} honour If-None-Match (Http/Conditional.ts)
  for (const path of ["/nodes", "/nodes/{nodeId}"]) {
    const get = spec.paths[path]?.get
    if (get === undefined) continue
    get.parameters = [...(get.parameters ?? []), {
      name: "If-None-Match",
      in: "header",
      required: false,
      description: "ETag of an answer you have: 304 while it is unchanged",
      schema: { type: "string" }
    }]
    get.responses["304"] = {
      description: "Not modified: the answer you have is current",
      headers: successHeaders[get.operationId] ?? pageHeaders
    }
  }

  // adding someone who is already a member changes their role: the same record, 200 (Publishers/Http.ts)
  const addMember = spec.paths["/publishers/{publisherId}/members"]?.post
  if (addMember?.responses["201"] !== undefined) {
    addMember.responses["200"] = { ...addMember.responses["201"], description: "An existing member's role was changed" }
  }

  const schemas: Json = spec.components.schemas
  const derivedErrors: Record<string, Json> = {}
  for (const name of Object.keys(schemas)) {
    if (errorNames.has(name)) {
      derivedErrors[name] = schemas[name]
      delete schemas[name]
    }
  }
  const referenced = new Set(JSON.stringify(spec.paths).match(/#\/components\/schemas\/\w+/g))
  for (const error of apiErrors) {
    const own = derivedErrors[error.identifier]
    if (referenced.has(schemaRef(error.identifier))) schemas[error.identifier] = errorComponent(error, own)
    if (referenced.has(schemaRef(detailedName(error.identifier)))) schemas[detailedName(error.identifier)] = detailedComponent(error, own)
  }
  spec.components.headers = headers

  inlineFormBodies(spec)
  for (const schema of documentSchemas(spec)) cleanSchema(schema)
  inlineScalarComponents(spec)
  for (const { operation } of operations(spec)) {
    for (const parameter of operation.parameters ?? []) {
      // Effect 4 describes the parameter's schema only; the parameter says it too, as before
      const said = parameter.schema?.description
      if (parameter.description === undefined && typeof said === "string") parameter.description = said
    }
    const noContent = operation.responses?.["204"]
    if (noContent?.description === "<No Content>") noContent.description = "Success"
  }

  // several groups share a title (public and authenticated halves of a feature): one tag each
  spec.tags = [...new Set<string>((spec.tags ?? []).map((tag: Json) => tag.name))].map((name) => ({
    name,
    description: tagDescriptions[name] ?? name
  }))
  return spec
}

/** The Api as documented, served from `publicBaseUrl`. */
export const documentedApi = (publicBaseUrl: string) =>
  Api
    .annotate(OpenApi.Servers, [{ url: publicBaseUrl, description: "This service" }])
    .annotate(OpenApi.Transform, precise)

/** The OpenAPI document served at `publicBaseUrl`. */
export const apiDocument = (publicBaseUrl: string): Json => OpenApi.fromApi(documentedApi(publicBaseUrl)) as Json

/**
 * The documents' routes, for the route table: the same bytes on every answer until the next
 * deployment, so validated by the edge, cached for five minutes, and compressed once.
 */
export const documentRoutes: ReadonlyArray<ExtraRoute> = [
  { method: "GET", pattern: "/openapi.json", revalidate: "public, max-age=300", stable: true },
  { method: "GET", pattern: "/docs", revalidate: "public, max-age=300", stable: true, page: true }
]

/**
 * The server `/docs` names: the public URL's path alone, which the page resolves against the
 * host it was opened on, so that its "Test Request" goes back there (127.0.0.1, localhost or the
 * public name alike) and not to another origin the browser refuses to read.
 */
export const pageServer = (publicBaseUrl: string) => (URL.canParse(publicBaseUrl) ? new URL(publicBaseUrl).pathname : "/")

/**
 * `/openapi.json`, with this instance's public URL for the tools that read it from elsewhere, and
 * `/docs`, with the relative server of `pageServer`.
 */
export const DocumentsLive = Layer.unwrap(Effect.map(AppConfig, (config) => {
  const api = documentedApi(pageServer(config.publicBaseUrl))
  // worked out on the first request, then the same answer (and body) every time
  let document: HttpServerResponse.HttpServerResponse | undefined
  return Layer.mergeAll(
    HttpRouter.add("GET", "/openapi.json", Effect.sync(() => document ??= HttpServerResponse.jsonUnsafe(apiDocument(config.publicBaseUrl)))),
    HttpApiScalar.layer(api, { path: "/docs", scalar: { layout: "modern", theme: "default", withDefaultFonts: false } })
  )
}))
