/**
 * Requests of one OpenAPI operation, as fast-check arbitraries: valid ones (parameters and bodies
 * from their schemas, known ids of the seeded catalogue mixed in so that they reach deep code) and
 * mutated ones (a required field dropped, a wrong type, a value out of range, an odd string, a
 * duplicated parameter, a broken body or content type), each sent as one of the actors.
 */
import * as fc from "fast-check"
import { type JsonSchema, oddStrings, oddValue, outOfRange, resolve, type Schemas, valueOf, wrongType } from "./Arbitraries.ts"

export interface Parameter {
  readonly name: string
  readonly in: "path" | "query" | "header"
  readonly required?: boolean
  readonly schema: JsonSchema
}

export interface Operation {
  readonly method: string
  readonly path: string
  readonly parameters: ReadonlyArray<Parameter>
  readonly body?: { readonly contentType: string; readonly schema: JsonSchema } | undefined
  readonly responses: Readonly<Record<string, { readonly content?: Readonly<Record<string, { readonly schema: JsonSchema }>> }>>
}

export type Actor = "none" | "garbage" | "user" | "owner" | "siteAdmin" | "apiKey"
export const actors: ReadonlyArray<Actor> = ["none", "garbage", "user", "owner", "siteAdmin", "apiKey"]

/** A request's body: JSON text (or any text), bytes, or a form. */
export type Body =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "bytes"; readonly bytes: Uint8Array }
  | { readonly kind: "form"; readonly fields: ReadonlyArray<readonly [string, string | { readonly file: Uint8Array; readonly name: string }]> }

export interface FuzzRequest {
  /** `valid`, or the mutation applied. */
  readonly kind: string
  readonly actor: Actor
  readonly method: string
  /** Path parameters by name, inserted percent-encoded unless `rawPath`. */
  readonly pathParams: Readonly<Record<string, string>>
  readonly rawPath: boolean
  readonly query: ReadonlyArray<readonly [string, string]>
  readonly headers: Readonly<Record<string, string>>
  readonly body?: Body | undefined
}

/** Values of the seeded catalogue, by parameter or field name, that valid requests mix in. */
export type Hints = Readonly<Record<string, ReadonlyArray<unknown>>>

/** What the fuzzer needs to build requests: the document's schemas, the hints, and binary bodies. */
export interface Context {
  readonly schemas: Schemas
  readonly hints: Hints
  /** Valid bodies for binary content types (a zip, a video), by content type. */
  readonly binaries: Readonly<Record<string, ReadonlyArray<Uint8Array>>>
  /**
   * Parameters that are valid only together (a signed URL's path, expiry and signature), by the
   * operation's path: a valid request takes them a third of the time.
   */
  readonly presets: Readonly<Record<string, Readonly<Record<string, string>>>>
}

/** JSON text in which bigints are written as the huge integers they are. */
export const toJson = (value: unknown): string =>
  JSON.stringify(value, (_, v: unknown) => (typeof v === "bigint" ? `__big${v}__` : v))?.replace(/"__big(-?\d+)__"/g, "$1") ?? "null"

const asText = (value: unknown): string => (typeof value === "string" ? value : typeof value === "object" && value !== null ? toJson(value) : String(value))

/** A hinted value half the time, when there is one; else one from the schema. */
const hinted = (ctx: Context, name: string, schema: JsonSchema): fc.Arbitrary<unknown> => {
  const hints = ctx.hints[name]
  return hints === undefined || hints.length === 0 ? valueOf(ctx.schemas, schema) : fc.oneof(fc.constantFrom(...hints), valueOf(ctx.schemas, schema))
}

/** A query parameter's values: an array schema repeats the key. */
const queryValues = (ctx: Context, p: Parameter): fc.Arbitrary<ReadonlyArray<string>> => {
  const s = resolve(ctx.schemas, p.schema)
  return s.type === "array"
    ? fc.array(hinted(ctx, p.name, s.items ?? {}), { minLength: 1, maxLength: Math.min(3, s.maxItems ?? 3) }).map((vs) => vs.map(asText))
    : hinted(ctx, p.name, s).map((v) => [asText(v)])
}

/** A valid JSON body, each hinted field (at the top level) given a known value most of the time. */
const jsonBody = (ctx: Context, schema: JsonSchema): fc.Arbitrary<unknown> => {
  const props = resolve(ctx.schemas, schema).properties ?? {}
  const hinted = Object.keys(props).filter((name) => (ctx.hints[name] ?? []).length > 0)
  const picks = fc.tuple(...hinted.map((name) => fc.option(fc.constantFrom(...ctx.hints[name]!), { freq: 3, nil: undefined })))
  return fc.tuple(valueOf(ctx.schemas, schema), picks).map(([value, chosen]) => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return value
    const out: Record<string, unknown> = { ...value }
    hinted.forEach((name, i) => {
      if (chosen[i] !== undefined) out[name] = chosen[i]
    })
    return out
  })
}

const formBody = (ctx: Context, contentType: string): fc.Arbitrary<Body> => {
  const files = ctx.binaries["video/mp4"] ?? [new Uint8Array([0])]
  const url = fc.constantFrom("https://videos.example/clip.mp4", "http://127.0.0.1:9/v.mp4")
  const prompt = fc.option(fc.string({ maxLength: 40 }), { nil: undefined })
  const withUrl = fc.tuple(fc.constantFrom("video", "video_url"), url, prompt).map(([field, u, p]): Body => ({
    kind: "form",
    fields: [[field, u], ...(p === undefined ? [] : [["prompt", p] as const])]
  }))
  if (contentType !== "multipart/form-data") return withUrl
  const withFile = fc.tuple(fc.constantFrom("0.video", "video"), fc.constantFrom(...files)).map(([field, file]): Body => ({
    kind: "form",
    fields: [[field, { file, name: "clip.mp4" }]]
  }))
  return fc.oneof(withUrl, withFile)
}

const validBody = (ctx: Context, op: Operation): fc.Arbitrary<Body | undefined> => {
  if (op.body === undefined) return fc.constant(undefined)
  const { contentType, schema } = op.body
  if (contentType === "application/json") return jsonBody(ctx, schema).map((v): Body => ({ kind: "text", text: toJson(v) }))
  if (contentType.startsWith("multipart/") || contentType === "application/x-www-form-urlencoded") return formBody(ctx, contentType)
  const bodies = ctx.binaries[contentType] ?? []
  return fc.oneof(fc.uint8Array({ maxLength: 64 }), ...(bodies.length > 0 ? [fc.constantFrom(...bodies)] : []))
    .map((bytes): Body => ({ kind: "bytes", bytes }))
}

/** A valid request of `op`, as any actor. */
export const validRequest = (ctx: Context, op: Operation): fc.Arbitrary<FuzzRequest> => {
  const inPath = op.parameters.filter((p) => p.in === "path")
  const optional = op.parameters.filter((p) => p.in !== "path")
  return fc.record({
    actor: fc.constantFrom(...actors),
    pathParams: fc.record(Object.fromEntries(inPath.map((p) => [p.name, hinted(ctx, p.name, p.schema).map(asText)]))),
    others: fc.tuple(...optional.map((p) => p.required ? queryValues(ctx, p) : fc.option(queryValues(ctx, p), { nil: undefined }))),
    body: validBody(ctx, op),
    preset: fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, fc.constant(ctx.presets[op.path]))
  }).map(({ actor, pathParams: drawn, others, body, preset }) => {
    const inPreset = (p: Parameter) => preset !== undefined && p.name in preset
    const pathParams = { ...drawn, ...Object.fromEntries(inPath.filter(inPreset).map((p) => [p.name, preset![p.name]!])) }
    const query: Array<readonly [string, string]> = []
    const headers: Record<string, string> = {}
    optional.forEach((p, i) => {
      const values = inPreset(p) ? [preset![p.name]!] : others[i]
      if (values === undefined) return
      if (p.in === "query") for (const v of values) query.push([p.name, v])
      else headers[p.name] = values[0]!.replace(/[^\x20-\x7e]/g, "")
    })
    if (op.body?.contentType !== undefined && body?.kind !== "form") headers["content-type"] = op.body.contentType
    return { kind: "valid", actor, method: op.method, pathParams, rawPath: false, query, headers, body }
  })
}

// --- mutations -----------------------------------------------------------------------------------

type Mutation = (req: FuzzRequest) => fc.Arbitrary<FuzzRequest>

const jsonOf = (req: FuzzRequest): unknown => {
  if (req.body?.kind !== "text") return undefined
  try {
    return JSON.parse(req.body.text)
  } catch {
    return undefined
  }
}

const withJson = (req: FuzzRequest, kind: string, value: unknown): FuzzRequest => ({
  ...req,
  kind,
  body: { kind: "text", text: toJson(value) },
  headers: { ...req.headers, "content-type": "application/json" }
})

/** A body field (or a query parameter, when there is no JSON object body) given a value from `values`. */
const setField = (ctx: Context, op: Operation, kind: string, values: (schema: JsonSchema) => fc.Arbitrary<unknown>): Mutation => (req) => {
  const body = jsonOf(req)
  const props = op.body === undefined ? {} : resolve(ctx.schemas, op.body.schema).properties ?? {}
  const names = Object.keys(props)
  if (typeof body === "object" && body !== null && !Array.isArray(body) && names.length > 0) {
    return fc.constantFrom(...names).chain((name) =>
      values(props[name]!).map((v) => withJson(req, `${kind} body.${name}`, { ...body, [name]: v })))
  }
  const params = op.parameters.filter((p) => p.in === "query")
  if (params.length === 0) return fc.constant(req)
  return fc.constantFrom(...params).chain((p) =>
    values(p.schema).map((v) => ({
      ...req,
      kind: `${kind} ${p.name}`,
      query: [...req.query.filter(([k]) => k !== p.name), [p.name, asText(v)] as const]
    })))
}

const dropRequired = (ctx: Context, op: Operation): Mutation => (req) => {
  const body = jsonOf(req)
  const required = op.body === undefined ? [] : resolve(ctx.schemas, op.body.schema).required ?? []
  if (typeof body === "object" && body !== null && !Array.isArray(body) && required.length > 0) {
    return fc.constantFrom(...required).map((name) => {
      const { [name]: _, ...rest } = body as Record<string, unknown>
      return withJson(req, `drop body.${name}`, rest)
    })
  }
  const params = op.parameters.filter((p) => p.in === "query" && p.required)
  if (params.length === 0) return fc.constant({ ...req, kind: "no body", body: undefined })
  return fc.constantFrom(...params).map((p) => ({ ...req, kind: `drop ${p.name}`, query: req.query.filter(([k]) => k !== p.name) }))
}

const oddPath = (op: Operation): Mutation => (req) => {
  const names = op.parameters.filter((p) => p.in === "path").map((p) => p.name)
  if (names.length === 0) return fc.constant({ ...req, kind: "odd query", query: [...req.query, ["x", "\u0000"]] })
  return fc.tuple(fc.constantFrom(...names), fc.constantFrom(...oddStrings), fc.boolean()).map(([name, value, raw]) => ({
    ...req,
    kind: `${raw ? "raw" : "odd"} path ${name}`,
    rawPath: raw && !/[\u0000-\u001f\u007f-\uffff#?]/.test(value),
    pathParams: { ...req.pathParams, [name]: value }
  }))
}

const duplicateQuery: Mutation = (req) =>
  fc.constantFrom("1", "-1", "0", "abc", "99999999999999999999").map((other) => ({
    ...req,
    kind: "duplicate query",
    query: [...req.query.flatMap(([k, v]) => [[k, v] as const, [k, other] as const]), ["page", "2"], ["page", "-3"], ["limit", "0x10"]]
  }))

const pagesAndHugeIntegers: Mutation = (req) =>
  fc.tuple(fc.constantFrom("page", "limit", "pageSize", "star"), fc.constantFrom("-1", "0", "-99999999999", "99999999999999999999999", "1.5", "1e3", " 1", "0x10", "")).map(
    ([name, value]) => ({ ...req, kind: `${name}=${value}`, query: [...req.query.filter(([k]) => k !== name), [name, value] as const] })
  )

const brokenBodies: ReadonlyArray<readonly [string, string]> = [
  ["application/json", "{"],
  ["application/json", "{\"a\":}"],
  ["application/json", "[1,"],
  ["application/json", "\u0000"],
  ["application/json", ""],
  ["application/json", "null"],
  ["application/json", "\"text\""],
  ["application/json", "[]"],
  ["application/json", "1e999999"],
  ["application/json", "[".repeat(5_000) + "]".repeat(5_000)],
  ["application/json", "{\"a\":".repeat(3_000) + "1" + "}".repeat(3_000)],
  ["application/json; charset=latin1", "{}"],
  ["text/plain", "hello"],
  ["application/xml", "<a/>"],
  ["multipart/form-data", "--x\r\n"],
  ["multipart/form-data; boundary=zz", "--zz\r\ncontent-disposition: form-data; name=\"a\"\r\n\r\nb\r\n--zz--\r\n"],
  ["application/x-www-form-urlencoded", "a=%ZZ&b"],
  ["application/zip", "PK\u0003\u0004junk"],
  ["application/octet-stream", "\u0000\u0001"]
]

const badBody: Mutation = (req) =>
  fc.constantFrom(...brokenBodies).map(([contentType, text]) => ({
    ...req,
    kind: `body ${contentType} ${JSON.stringify(text.slice(0, 12))}`,
    headers: { ...req.headers, "content-type": contentType },
    body: { kind: "text", text }
  }))

const extraField: Mutation = (req) => {
  const body = jsonOf(req)
  if (typeof body !== "object" || body === null || Array.isArray(body)) return fc.constant({ ...req, kind: "extra query", query: [...req.query, ["unknown_param", "1"]] })
  return oddValue.map((v) => withJson(req, "extra field", { ...body, ["__proto__x"]: v, id: v }))
}

const oddHeaders: Mutation = (req) =>
  fc.constantFrom(
    { "idempotency-key": "x".repeat(5_000) },
    { "idempotency-key": "" },
    { "if-none-match": "\"" },
    { "x-api-key": "rgak_" + "0".repeat(300) },
    { "accept": "application/xml" }
  ).map((extra) => ({ ...req, kind: `header ${Object.keys(extra)[0]}`, headers: { ...req.headers, ...extra } }))

/** A request of `op` with one mutation applied. */
export const mutatedRequest = (ctx: Context, op: Operation): fc.Arbitrary<FuzzRequest> => {
  const mutations: ReadonlyArray<Mutation> = [
    dropRequired(ctx, op),
    setField(ctx, op, "wrong type", (s) => wrongType(ctx.schemas, s)),
    setField(ctx, op, "out of range", (s) => outOfRange(ctx.schemas, s)),
    setField(ctx, op, "odd value", () => oddValue),
    oddPath(op),
    duplicateQuery,
    pagesAndHugeIntegers,
    badBody,
    extraField,
    oddHeaders
  ]
  return fc.tuple(validRequest(ctx, op), fc.constantFrom(...mutations)).chain(([req, mutate]) => mutate(req))
}

/** Valid and mutated requests of `op`, half and half. */
export const requestOf = (ctx: Context, op: Operation): fc.Arbitrary<FuzzRequest> =>
  fc.oneof(validRequest(ctx, op), mutatedRequest(ctx, op))
