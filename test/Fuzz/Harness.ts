/**
 * The schema-driven fuzzer's parts, shared by its runs (Fuzz.heavy.test.ts, one request after another
 * by operation; Concurrent.heavy.test.ts, several clients at once): the service with its loopback fakes,
 * the operations of `/openapi.json`, the seeded catalogue with the hints that reach deep code, one
 * request sent and its answer judged against the document, and the service's log lines.
 */
import { expect } from "@effect/vitest"
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js"
import addFormatsPlugin from "ajv-formats"
import { Effect, Layer } from "effect"
import * as http from "node:http"
import { format } from "node:util"
import { afterAll, vi } from "vitest"
import { seedActors, tokensFor } from "../support/Actors.ts"
import { Catalogue } from "../support/Catalogue.ts"
import { FakeImageVendor } from "../support/FakeImageVendor.ts"
import { FakeMusicVendor } from "../support/FakeMusicVendor.ts"
import { FakeRepohost } from "../support/FakeRepohost.ts"
import { type Answer, expectStatus, send } from "../support/Http.ts"
import { atFake } from "../support/ImageProxy.ts"
import { atFakeVendor } from "../support/Music.ts"
import { type Running, Service } from "../support/Service.ts"
import { mp4 } from "../support/Video.ts"
import { zipOf } from "../support/Zip.ts"
import type { JsonSchema, Schemas } from "./Arbitraries.ts"
import type { Actor, Context, FuzzRequest, Hints, Operation, Parameter } from "./Requests.ts"

export const seed = Number(process.env.FUZZ_SEED ?? 20261123)
const webHost = "repohost.example"
const vcsToken = "vcs-fuzz-admin-of-ann"

/**
 * Every line the service logs, from the moment this is called (before the service starts):
 * `errorLinesSince(n)` are the ERROR lines after the first `n` lines.
 */
export const captureLogs = () => {
  const logged: Array<string> = []
  const spies = (["log", "info", "warn", "error", "debug", "trace"] as const).map((method) =>
    vi.spyOn(console, method).mockImplementation((...args: Array<unknown>) => void logged.push(format(...args)))
  )
  afterAll(() => spies.forEach((spy) => spy.mockRestore()))
  return {
    count: () => logged.length,
    errorLinesSince: (n: number) => logged.slice(n).filter(isErrorLine)
  }
}

const isErrorLine = (line: string) => /level=(ERROR|FATAL)/.test(line)

/** The service with the vendors and the repository host faked on loopback. */
export const FuzzLayer = Layer.unwrap(
  Effect.gen(function*() {
    const image = yield* FakeImageVendor
    const music = yield* FakeMusicVendor
    const repohost = yield* FakeRepohost
    repohost.behave(vcsToken, { kind: "user", login: "ann", admin: ["ann/*"] })
    // the fakes answer at once: a vendor timeout here would be the machine's load, not the service's
    // doing (the timeouts have their own tests), so the fuzzer gives the vendors ten seconds
    return Service.layer(atFake(image, atFakeVendor(music, (c) => ({
      ...c,
      vendorTimeoutMillis: 10_000,
      repohost: { apiUrl: repohost.url, timeoutMillis: 2_000, webHost }
    }))))
  })
).pipe(Layer.provideMerge(Layer.mergeAll(FakeImageVendor.layer, FakeMusicVendor.layer, FakeRepohost.layer)))

// --- the document ---------------------------------------------------------------------------------

export interface Document {
  readonly paths: Readonly<Record<string, Readonly<Record<string, {
    readonly parameters?: ReadonlyArray<Parameter>
    readonly requestBody?: { readonly content: Readonly<Record<string, { readonly schema: JsonSchema }>> }
    readonly responses: Operation["responses"]
  }>>>>
  readonly components: { readonly schemas: Schemas }
}

const methods = ["get", "post", "put", "delete", "patch"]

/** Every operation of the document; one with several body types is one operation per type. */
export const operationsOf = (doc: Document): Array<Operation> =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).filter(([method]) => methods.includes(method)).flatMap(([method, op]) => {
      const base = { method: method.toUpperCase(), path, parameters: op.parameters ?? [], responses: op.responses }
      const bodies = Object.entries(op.requestBody?.content ?? {})
      return bodies.length === 0 ? [base] : bodies.map(([contentType, { schema }]) => ({ ...base, body: { contentType, schema } }))
    })
  )

const base = "https://schemas.registry.test/components/schemas/"
const absolute = (schema: JsonSchema): object => JSON.parse(JSON.stringify(schema).replaceAll("\"#/components/schemas/", `"${base}`))

/** Ajv over the document's schemas: `compile` for any schema of it, `error` for any error response. */
export const validators = (schemas: Schemas) => {
  const ajv = new Ajv2020({ strict: false, allErrors: false })
  addFormatsPlugin.default(ajv)
  for (const [name, schema] of Object.entries(schemas)) ajv.addSchema({ ...absolute(schema), $id: base + name })
  const cache = new Map<string, ValidateFunction>()
  const compile = (schema: JsonSchema) => {
    const key = JSON.stringify(schema)
    const known = cache.get(key)
    if (known) return known
    const made = ajv.compile(absolute(schema))
    cache.set(key, made)
    return made
  }
  // the document's ErrorResponse: each error code's schema (`{error: <code>, message}`, nothing else)
  const errorSchemas = Object.entries(schemas).filter(([, s]) => s.properties?.error !== undefined && s.required?.includes("message"))
  const error = compile({ anyOf: errorSchemas.map(([name]) => ({ $ref: `#/components/schemas/${name}` })) } as JsonSchema)
  return { compile, error }
}

// --- sending ---------------------------------------------------------------------------------------

export interface Credentials {
  readonly tokens: Readonly<Record<"user" | "owner" | "siteAdmin", string>>
  readonly apiKey: string
}

const authHeaders = (actor: Actor, credentials: Credentials): Record<string, string> => {
  switch (actor) {
    case "none":
      return {}
    case "garbage":
      return { authorization: "Bearer eyJhbGciOiJIUzI1NiJ9.Z2FyYmFnZQ.c2lnbmF0dXJl" }
    case "apiKey":
      return { "x-api-key": credentials.apiKey }
    default:
      return { authorization: `Bearer ${credentials.tokens[actor]}` }
  }
}

/** A lone surrogate cannot go in a URL: it becomes U+FFFD, as URLSearchParams makes it. */
const wellFormed = (s: string) => s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd")

const urlOf = (op: Operation, req: FuzzRequest): string => {
  const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = req.pathParams[name] ?? ""
    return req.rawPath ? value : encodeURIComponent(wellFormed(value))
  })
  const query = new URLSearchParams()
  for (const [k, v] of req.query) query.append(k, v)
  const q = query.toString()
  return q === "" ? path : `${path}?${q}`
}

const bodyOf = (req: FuzzRequest, contentType: string | undefined): string | Buffer | URLSearchParams | FormData | undefined => {
  const body = req.body
  if (body === undefined) return undefined
  if (body.kind === "text") return body.text
  if (body.kind === "bytes") return Buffer.from(body.bytes)
  if (contentType === "application/x-www-form-urlencoded") {
    return new URLSearchParams(body.fields.flatMap(([k, v]): Array<[string, string]> => (typeof v === "string" ? [[k, v]] : [])))
  }
  const form = new FormData()
  for (const [k, v] of body.fields) {
    if (typeof v === "string") form.append(k, v)
    else form.append(k, new Blob([Buffer.from(v.file)], { type: "video/mp4" }), v.name)
  }
  return form
}

/** What a request looked like, to replay it by hand. */
const describe = (op: Operation, req: FuzzRequest, url: string) => {
  const body = req.body === undefined
    ? ""
    : req.body.kind === "text"
    ? ` body=${JSON.stringify(req.body.text.slice(0, 200))}${req.body.text.length > 200 ? `…(${req.body.text.length} chars)` : ""}`
    : req.body.kind === "bytes"
    ? ` body=<${req.body.bytes.length} bytes>`
    : ` form=${JSON.stringify(req.body.fields.map(([k, v]) => [k, typeof v === "string" ? v : `<file ${v.file.length} bytes>`]))}`
  return `[${req.kind}] as ${req.actor}: ${req.method} ${url.slice(0, 300)} headers=${JSON.stringify(req.headers).slice(0, 200)}${body} (operation ${op.method} ${op.path}, seed ${seed})`
}

export interface Outcome {
  readonly status: number
  readonly problem?: string
}

/**
 * The bytes of a body and the content type that goes with it when the request names none, as
 * fetch makes them (a string is text/plain, a form gets its boundary).
 */
const encode = async (body: ReturnType<typeof bodyOf>): Promise<{ bytes: string | Buffer; type?: string } | undefined> => {
  if (body === undefined) return undefined
  if (typeof body === "string") return { bytes: body, type: "text/plain;charset=UTF-8" }
  if (Buffer.isBuffer(body)) return { bytes: body }
  const encoded = new Response(body)
  const type = encoded.headers.get("content-type")
  return { bytes: Buffer.from(await encoded.arrayBuffer()), ...(type === null ? {} : { type }) }
}

/** What fetch sends on every request, unless the request says otherwise; no compression. */
const defaultHeaders = { accept: "*/*", "accept-language": "*", "sec-fetch-mode": "cors", "user-agent": "node" }

/** A request the client refused to send (a header value it will not carry, a URL it cannot parse). */
class NotSent {
  constructor(readonly reason: unknown) {}
}

/** Connections kept alive between requests, as fetch keeps them. */
const agent = new http.Agent({ keepAlive: true })
afterAll(() => agent.destroy())

/**
 * One request over node:http, its answer read whole. Not fetch: with client and service in one
 * process, fetch's own work was a quarter of the run's CPU. The URL is parsed as fetch parses it
 * (dot segments resolved, fragments dropped); no redirect is followed. A reused connection that
 * the server had closed as the request went out is tried once more on a new one, as any client
 * does (a starved event loop makes this race likely); a second failure is the service's.
 */
const sendOnce = async (service: Running, url: string, method: string, headers: Record<string, string>, body: Awaited<ReturnType<typeof encode>>, retried = false): Promise<Received> => {
  let target: URL
  try {
    target = new URL(service.baseUrl + url)
  } catch (e) {
    throw new NotSent(e)
  }
  const named = new Set(Object.keys(headers).map((k) => k.toLowerCase()))
  const sent: Record<string, string> = { ...Object.fromEntries(Object.entries(defaultHeaders).filter(([k]) => !named.has(k))), ...headers }
  if (body?.type !== undefined && !named.has("content-type")) sent["content-type"] = body.type
  return new Promise<Received>((resolve, reject) => {
    let request: http.ClientRequest
    try {
      request = http.request(target, { method, headers: sent, agent, timeout: 10_000 })
    } catch (e) {
      return reject(new NotSent(e))
    }
    request.on("timeout", () => request.destroy(new Error("timeout: no answer in 10 s")))
    request.on("error", (e: NodeJS.ErrnoException) =>
      !retried && request.reusedSocket && (e.code === "ECONNRESET" || e.code === "EPIPE")
        ? sendOnce(service, url, method, headers, body, true).then(resolve, reject)
        : reject(e))
    request.on("response", (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("error", reject)
      response.on("end", () =>
        resolve({ status: response.statusCode ?? 0, contentType: response.headers["content-type"] ?? "", text: Buffer.concat(chunks).toString("utf8") }))
    })
    request.end(body?.bytes)
  })
}

/** Sends one request and says what is wrong with its answer, if anything. */
export const fuzzOne = async (
  service: Running,
  check: Check,
  credentials: Credentials,
  op: Operation,
  req: FuzzRequest
): Promise<Outcome> => {
  const url = urlOf(op, req)
  const what = () => describe(op, req, url)
  let answer: Received
  try {
    const body = await encode(bodyOf(req, op.body?.contentType))
    answer = await sendOnce(service, url, req.method, { ...req.headers, ...authHeaders(req.actor, credentials) }, body)
  } catch (e) {
    // a request the client refuses to send says nothing of the service
    if (e instanceof NotSent) return { status: -1 }
    return { status: 0, problem: `no answer (${String(e)}): ${what()}` }
  }
  const problem = answer.status >= 500
    ? "a server error"
    : answer.status >= 300
    ? errorProblem(check, op, req, answer)
    : successProblem(check, op, req, answer)
  return problem === undefined
    ? { status: answer.status }
    : { status: answer.status, problem: `${problem}: ${answer.status} ${answer.text.slice(0, 300)} <- ${what()}` }
}

interface Received {
  readonly status: number
  readonly contentType: string
  readonly text: string
}

/** A path that a mutation broke may reach another route, whose answers this operation does not declare. */
const pathIntact = (req: FuzzRequest) => !req.kind.startsWith("raw path") && !req.kind.startsWith("odd path")

/** What is wrong with a 3xx or 4xx answer: it must be an ErrorResponse, of a status the operation declares. */
const errorProblem = (check: Check, op: Operation, req: FuzzRequest, answer: Received): string | undefined => {
  if (answer.status === 304) return undefined
  const body = parseOrUndefined(answer.text)
  if (!/^application\/json/.test(answer.contentType)) return "not JSON"
  if (!check.error(body)) return "not an ErrorResponse"
  if (!pathIntact(req)) return undefined
  const declared = op.responses[String(answer.status)]
  // an operation that takes no body, sent one, may refuse it with a status it has no reason to declare
  if (declared === undefined) return op.body === undefined && req.body !== undefined ? undefined : "undeclared status"
  const schema = declared.content?.["application/json"]?.schema
  return schema !== undefined && !check.compile(schema)(body) ? "not the declared error" : undefined
}

/** What is wrong with a 2xx answer: a declared status, content type and body (JSON, or NDJSON line by line). */
const successProblem = (check: Check, op: Operation, req: FuzzRequest, answer: Received): string | undefined => {
  if (!pathIntact(req)) return undefined
  const declared = op.responses[String(answer.status)]
  if (declared === undefined) return "undeclared status"
  const content = declared.content ?? {}
  if (Object.keys(content).length === 0) return answer.text === "" ? undefined : "a body on a bodiless answer"
  const type = answer.contentType.split(";")[0]!.trim()
  const schema = content[type]?.schema
  if (schema === undefined) return `content-type ${type}, declared ${Object.keys(content).join(", ")}`
  const values = type === "application/json"
    ? [parseOrUndefined(answer.text)]
    : type === "application/x-ndjson"
    ? answer.text.split("\n").filter((l) => l !== "").map(parseOrUndefined)
    : []
  if (values.length === 0) return undefined
  const validate = check.compile(schema)
  const invalid = values.find((value) => !validate(value))
  return invalid === undefined ? undefined : `schema: ${schemaErrors(validate)}`
}

const schemaErrors = (validate: ValidateFunction) =>
  (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`).join("; ")

const parseOrUndefined = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** The Ajv checks of one document. */
export type Check = ReturnType<typeof validators>

/**
 * Publishers, nodes (claimable, banned, another publisher's), versions, host-nodes, tokens and
 * keys; what requests need to reach them (hints, presets, bodies of each binary type); and the
 * actors' credentials.
 */
export const seedCatalogue = (service: Running, schemas: Schemas) =>
  Effect.gen(function*() {
    const tokens = tokensFor("stranger", "owner", "siteAdmin", "member", "admin", "otherOwner")
    yield* new Catalogue().add(service, {
      publishers: [{ id: "acme" }, { id: "other" }, { id: "spare" }],
      nodes: [
        { id: "fz-node", publisher_id: "acme", name: "Fuzzed", repository: `https://${webHost}/ann/fz-node` },
        { id: "fz-banned", publisher_id: "acme", status: "NodeStatusBanned" },
        { id: "fz-other", publisher_id: "other" },
        { id: "fz-unclaimed", publisher_id: "spare", repository: `https://${webHost}/ann/fz-unclaimed` }
      ],
      versions: [
        { node_id: "fz-node", version: "1.0.0", status: "NodeVersionStatusActive" },
        { node_id: "fz-node", version: "2.0.0-beta.1", status: "NodeVersionStatusPending" },
        { node_id: "fz-other", version: "1.0.0", status: "NodeVersionStatusActive" }
      ]
    })
    yield* seedActors(service, tokens)
    const owner = tokens.owner
    const ok = <B>(answer: Answer<B>, status: number, what: string): B => expectStatus(answer, status, what).body
    ok(yield* send(service, "POST", "/nodes/fz-node/versions/1.0.0/host-nodes", { token: tokens.siteAdmin, body: [{ host_node_name: "FzLoader" }] }), 201, "host-nodes")
    const pat = ok(yield* send<{ token: string }>(service, "POST", "/publishers/acme/tokens", { token: owner, body: { name: "fuzz" } }), 201, "token")
    const listed = ok(yield* send<Array<{ id: string }>>(service, "GET", "/publishers/acme/tokens", { token: owner }), 200, "tokens")
    const key = ok(
      yield* send<{ api_key: { id: string; plaintext_key: string } }>(service, "POST", "/users/api-keys", { token: owner, body: { name: "fuzz" } }),
      201,
      "api key"
    ).api_key
    const storage = ok(
      yield* send<{ upload_url: string }>(service, "POST", "/customers/storage", { headers: { "x-api-key": key.plaintext_key }, body: { file_name: "a.png" } }),
      200,
      "storage"
    )
    // the file is there to download from the start; the PUTs later replace it
    const uploaded = yield* Effect.promise(() =>
      service.fetch(storage.upload_url.replace(/^https?:\/\/[^/]+/, ""), { method: "PUT", headers: { "content-type": "application/octet-stream" }, body: "fuzz" })
    )
    expect(uploaded.status, "media upload").toBe(204)
    const published = ok(
      yield* send<{ signedUrl: string }>(service, "POST", "/publishers/acme/nodes/fz-node/versions", {
        token: owner,
        body: { node: { id: "fz-node" }, node_version: { version: "3.0.0" } }
      }),
      201,
      "publish"
    )
    const media = new URL(storage.upload_url)
    const archive = new URL(published.signedUrl)
    const [, , mediaToken, mediaFile] = media.pathname.split("/")
    const hints: Hints = {
      nodeId: ["fz-node", "fz-banned", "fz-other", "fz-unclaimed", "fz-none"],
      publisherId: ["acme", "other", "spare", "fz-none"],
      version: ["1.0.0", "2.0.0-beta.1", "3.0.0", "9.9.9"],
      versionId: ["1.0.0", "2.0.0-beta.1", "3.0.0"],
      hostNodeName: ["FzLoader", "Missing"],
      host_node_name: ["FzLoader"],
      userId: ["mia", "adam", "ann", "nobody"],
      user_id: ["mia", "stan", "nobody"],
      tokenId: listed.map((t) => t.id),
      keyId: [key.id],
      token: [decodeURIComponent(mediaToken!)],
      fileName: [decodeURIComponent(mediaFile!)],
      expires: [media.searchParams.get("expires"), archive.searchParams.get("expires")],
      signature: [media.searchParams.get("signature"), archive.searchParams.get("signature")],
      personal_access_token: [pat.token],
      VCS_TOKEN: [vcsToken],
      node_id: ["fz-node"],
      nodeIdQuery: ["fz-node"],
      search: ["Fuzzed", "fz"],
      supported_host_version: [">=1.0.0", "^1.4"],
      supported_host_frontend_version: [">=1.0.0"],
      host_version: ["1.2.0", "v1.0.0"],
      sort: ["downloads;desc", "name", "created_at"],
      timestamp: ["2024-01-01T00:00:00Z"],
      content_type: ["image/png"],
      file_hash: ["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"],
      image: ["https://images.example/a.png"],
      reference_image: ["https://images.example/b.png"],
      webhook_url: ["https://hooks.example/x"]
    }
    const credentials: Credentials = { tokens: { user: tokens.stranger, owner, siteAdmin: tokens.siteAdmin }, apiKey: key.plaintext_key }
    const signed = (url: URL, names: ReadonlyArray<string>): Record<string, string> => {
      const segments = url.pathname.split("/").slice(2).map(decodeURIComponent)
      const query = Object.fromEntries(url.searchParams)
      return { ...Object.fromEntries(names.map((name, i) => [name, segments[i]!])), ...query }
    }
    const presets = {
      "/archives/{nodeId}/{version}": signed(archive, ["nodeId", "version"]),
      "/media/{token}/{fileName}": signed(media, ["token", "fileName"])
    }
    const zip = yield* Effect.promise(() => zipOf({ "__init__.py": "", "pyproject.toml": "[project]\nname = \"fz-node\"\n" }))
    const context: Context = {
      schemas,
      hints,
      presets,
      binaries: { "application/zip": [zip], "video/mp4": [mp4(3)], "application/octet-stream": [new Uint8Array([137, 80, 78, 71])] }
    }
    return { context, credentials }
  })

