/**
 * The logs of a request over real HTTP: each LOG_FORMAT's lines parse, one access line per
 * request with its route, status, bytes and caller, the request id echoed and carried by the
 * handler's own lines, and no credential in any line. The instance writes through the real
 * logging layer (Observability/Logging.ts) into a console that keeps the lines.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Console, Effect, Layer, Option, Redacted } from "effect"
import * as fc from "fast-check"
import type { LogFormat } from "../../src/Config.ts"
import { loggingLayer } from "../../src/Observability/Logging.ts"
import { seedActors, tokensFor } from "../support/Actors.ts"
import { expectStatus, fetchText, send } from "../support/Http.ts"
import { forAll } from "../support/Property.ts"
import { closedAfterPromise, rawRequestPromise } from "../support/RawHttp.ts"
import { type ConfigOverrides, type Running, Service } from "../support/Service.ts"

const uuidV4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** The service's log output, line by line, as a process manager would collect it from stdout. */
const capturedLines = (): { readonly lines: Array<string>; readonly layer: Layer.Layer<never> } => {
  const lines: Array<string> = []
  const write = (...parts: ReadonlyArray<unknown>) => void lines.push(parts.map(String).join(" "))
  const console: Console.Console = { ...globalThis.console, log: write, error: write, info: write, warn: write, debug: write, group: () => {}, groupEnd: () => {} }
  return { lines, layer: Layer.succeed(Console.Console, console) }
}

const capturing = (format: LogFormat) => {
  const captured = capturedLines()
  return { lines: captured.lines, logging: Layer.merge(loggingLayer(format, "Info"), captured.layer) }
}

/** A JSON line's fields: its annotations (request id, access fields) beside message and level. */
const parseJsonLine = (line: string): Record<string, unknown> => {
  const entry = JSON.parse(line) as { message: unknown; logLevel: string; annotations: Record<string, unknown> }
  return { ...entry.annotations, message: entry.message, level: entry.logLevel }
}

/** `key=value` pairs, values bare or JSON-quoted (Effect's logfmt); anything else fails. */
const parseLogfmtLine = (line: string): Record<string, unknown> => {
  const pair = /\s*([^\s=]+)=("(?:[^"\\]|\\.)*"|[^\s"]*)/y
  const fields: Record<string, unknown> = {}
  while (pair.lastIndex < line.length) {
    const at = pair.lastIndex
    const match = pair.exec(line)
    if (match === null) throw new Error(`not logfmt at ${at}: ${line}`)
    const [, key, value] = match
    fields[key!] = value!.startsWith("\"") ? JSON.parse(value!) : value
  }
  return fields
}

/** Effect's pretty entries: `[time] LEVEL (#fiber): message`, then one `key: value` line per annotation. */
const parsePrettyLines = (lines: ReadonlyArray<string>): Array<Record<string, unknown>> => {
  const entries: Array<Record<string, unknown>> = []
  for (const line of lines) {
    const head = /^\[[\d:.]+\] (\w+) \(#\d+\): (.*)$/.exec(line)
    if (head !== null) entries.push({ level: head[1], message: head[2] })
    else {
      const field = /^([\w.]+): (.*)$/.exec(line)
      if (field === null || entries.length === 0) throw new Error(`not a pretty log line: ${line}`)
      entries[entries.length - 1]![field[1]!] = field[2]
    }
  }
  return entries
}

const accessLines = (entries: ReadonlyArray<Record<string, unknown>>, requestId: string) =>
  entries.filter((e) => e.message === "http" && e.request_id === requestId)

/** The one access line of the request that got `requestId`, once it is written. */
const accessLineOf = (entries: () => ReadonlyArray<Record<string, unknown>>, requestId: string) =>
  Effect.promise(async () => {
    for (let i = 0; i < 400 && accessLines(entries(), requestId).length === 0; i++) await new Promise((r) => setTimeout(r, 20))
    const found = accessLines(entries(), requestId)
    expect(found, `access lines of ${requestId}`).toHaveLength(1)
    return found[0]!
  })

const call = (service: Running, method: string, path: string, options: Parameters<typeof fetchText>[3] = {}) =>
  Effect.promise(async () => {
    const reply = await fetchText(service, method, path, options)
    const requestId = reply.headers.get("x-request-id")
    expect(requestId, `${method} ${path}: X-Request-Id`).not.toBeNull()
    return { ...reply, requestId: requestId! }
  })

const json = capturing("json")
const jsonEntries = () => json.lines.map(parseJsonLine)
const tokens = tokensFor("owner", "stranger")

/** The image vendor at a closed port: its proxy logs a warning while it answers. */
const unreachableVendor: ConfigOverrides = (c) => ({
  ...c,
  imageVendor: { ...c.imageVendor, baseUrl: Option.some("http://127.0.0.1:9"), apiKey: Option.some(Redacted.make("vendor-key")) }
})

layer(Service.layer(unreachableVendor, json.logging), { excludeTestServices: true })("LOG_FORMAT=json", (it) => {
  it.effect("every line is a JSON object; a 200's access line names its route, status, bytes and duration", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const answer = yield* call(service, "GET", "/nodes?limit=5&page=1")
      expect(answer.status).toBe(200)
      expect(answer.requestId).toMatch(uuidV4)
      const line = yield* accessLineOf(jsonEntries, answer.requestId)
      expect(line).toMatchObject({ level: "INFO", method: "GET", route: "/nodes", path: "/nodes", status: 200 })
      expect(line.bytes).toBe(Buffer.byteLength(answer.text))
      expect(typeof line.duration_ms).toBe("number")
      expect(line).not.toHaveProperty("user_id")
      expect(line).not.toHaveProperty("aborted")
      for (const text of json.lines) expect(() => JSON.parse(text), text).not.toThrow()
    }))

  it.effect("an unknown path is 404 'unmatched', and its ErrorResponse echoes the request id", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const answer = yield* call(service, "GET", "/no/such/path")
      expect(answer.status).toBe(404)
      const line = yield* accessLineOf(jsonEntries, answer.requestId)
      expect(line).toMatchObject({ route: "unmatched", path: "/no/such/path", status: 404, bytes: Buffer.byteLength(answer.text) })
    }))

  it.effect("a route's pattern names it, and a wrong method is 405 under no route", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const node = yield* call(service, "GET", "/nodes/some-node")
      expect(yield* accessLineOf(jsonEntries, node.requestId)).toMatchObject({ route: "/nodes/:nodeId", status: 404 })
      const wrong = yield* call(service, "DELETE", "/nodes")
      expect(wrong.status).toBe(405)
      expect(yield* accessLineOf(jsonEntries, wrong.requestId)).toMatchObject({ method: "DELETE", route: "unmatched", status: 405 })
    }))

  it.effect("401s carry no user; an authenticated request carries its user id (bearer and API key)", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.upsertPublishers([{ id: "acme", name: "Acme" }])
      yield* seedActors(service, tokens)
      const anonymous = yield* call(service, "GET", "/users/api-keys")
      expect(anonymous.status).toBe(401)
      expect(yield* accessLineOf(jsonEntries, anonymous.requestId)).not.toHaveProperty("user_id")
      const forged = yield* call(service, "GET", "/users/api-keys", { token: "not.a.jwt" })
      expect(forged.status).toBe(401)
      expect(yield* accessLineOf(jsonEntries, forged.requestId)).not.toHaveProperty("user_id")

      const bearer = yield* call(service, "GET", "/users/api-keys", { token: tokens.stranger })
      expect(bearer.status).toBe(200)
      expect(yield* accessLineOf(jsonEntries, bearer.requestId)).toMatchObject({ route: "/customers/api-keys", status: 200, user_id: "stan" })

      const created = expectStatus(yield* send(service, "POST", "/users/api-keys", { token: tokens.stranger, body: { name: "logs" } }), 201, "key")
      const key = (created.body as { api_key: { plaintext_key: string } }).api_key.plaintext_key
      // what the host's API nodes send: the user's key in X-API-KEY (comfy_api_nodes/util)
      const byKey = yield* call(service, "POST", "/customers/storage", { headers: { "x-api-key": key }, body: { file_name: "a.png", content_type: "image/png" } })
      expect(yield* accessLineOf(jsonEntries, byKey.requestId)).toMatchObject({ user_id: "stan" })
      expect(json.lines.some((l) => l.includes(key)), "the API key in a log line").toBe(false)
    }))

  it.effect("a personal access token's publish carries the token's id, never its value", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const pat = (expectStatus(
        yield* send(service, "POST", "/publishers/acme/tokens", { token: tokens.owner, body: { name: "ci" } }),
        201,
        "token"
      ).body as { token: string }).token
      const listed = (yield* send(service, "GET", "/publishers/acme/tokens", { token: tokens.owner })).body as Array<{ id: string }>
      // what the publishing CLI sends: the token in the body, no Authorization
      const publish = yield* call(service, "POST", "/publishers/acme/nodes/logged-node/versions", {
        body: { personal_access_token: pat, node: { id: "logged-node", name: "Logged" }, node_version: { version: "1.0.0" } }
      })
      expect(publish.status).toBe(201)
      const line = yield* accessLineOf(jsonEntries, publish.requestId)
      expect(line).toMatchObject({ route: "/publishers/:publisherId/nodes/:nodeId/versions", token_id: listed[0]!.id })
      expect(line).not.toHaveProperty("user_id")
      expect(json.lines.some((l) => l.includes(pat)), "the token in a log line").toBe(false)
    }))

  it.effect("no credential reaches the log: bearer tokens, API keys, a signed URL's query", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const signed = yield* call(service, "PUT", "/archives/some-node/1.0.0?expires=1&signature=secret-signature-value", {
        headers: { "x-api-key": "rgak_secret-key-value", authorization: "Bearer secret.bearer.value" },
        raw: "zip"
      })
      const line = yield* accessLineOf(jsonEntries, signed.requestId)
      expect(line.path).toBe("/archives/some-node/1.0.0")
      for (const secret of ["secret-signature-value", "rgak_secret-key-value", "secret.bearer.value", tokens.owner, tokens.stranger]) {
        expect(json.lines.some((l) => l.includes(secret)), secret).toBe(false)
      }
    }))

  it.effect("a sane X-Request-Id is taken, and the handler's own log lines carry it", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const requestId = "proxy-7f3a:edge/1"
      const answer = yield* call(service, "POST", "/proxy/imagevendor/v1/ai/image-style-transfer", {
        token: tokens.stranger,
        headers: { "x-request-id": requestId },
        body: { image: "https://example.test/a.png", reference_image: "https://example.test/b.png" }
      })
      expect(answer.requestId).toBe(requestId)
      expect(answer.status).toBeGreaterThanOrEqual(500)
      yield* accessLineOf(jsonEntries, requestId)
      const own = jsonEntries().filter((e) => e.request_id === requestId && e.message !== "http")
      expect(own.map((e) => e.level), "the proxy's warning about the vendor").toContain("WARN")
    }))

  it.effect("a request Node's parser refuses is answered with a request id and logged as 'unparsed'", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const answer = yield* Effect.promise(() => rawRequestPromise(service.baseUrl, "GET /nodes HTTP/1.1\r\nhost: x\r\nno colon here\r\n\r\n"))
      expect(answer.status).toBe(400)
      const requestId = answer.headers["x-request-id"]!
      expect(requestId).toMatch(uuidV4)
      expect(yield* accessLineOf(jsonEntries, requestId)).toMatchObject({ route: "unparsed", status: 400, bytes: Buffer.byteLength(answer.body) })
    }))

  it.effect("a client that goes away before its answer is logged 499, aborted", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const refusals = () => jsonEntries().filter((e) => e.route === "unparsed").length
      const refusedBefore = refusals()
      // a body announced and never sent: the handler waits for it until the client leaves
      yield* Effect.promise(() =>
        closedAfterPromise(service.baseUrl, (socket) => {
          socket.write(
            "POST /bulk/nodes/versions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n" +
              "x-request-id: client-went-away\r\n\r\n{"
          )
          setTimeout(() => socket.destroy(), 300)
        })
      )
      expect(yield* accessLineOf(jsonEntries, "client-went-away")).toMatchObject({
        route: "/bulk/nodes/versions",
        status: 499,
        bytes: 0,
        aborted: true
      })
      expect(refusals(), "a client leaving is no refused request").toBe(refusedBefore)
    }))

  it.effect(
    "X-Request-Id is echoed exactly when it is 1-128 visible ASCII characters, else a UUID replaces it",
    () =>
      forAll(
        {
          given: fc.oneof(
            fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 140 }),
            fc.string({ unit: fc.constantFrom("a", "Z", "9", "-", " ", "\t", "é", "\u00ff", "~"), maxLength: 20 })
          )
        },
        ({ given }) =>
          Effect.gen(function*() {
            const service = yield* Service
            // by hand: fetch trims and refuses some values; bytes above 0x7f go as Latin-1
            const answer = yield* Effect.promise(() =>
              rawRequestPromise(service.baseUrl, Buffer.from(`GET /ready HTTP/1.1\r\nhost: x\r\nx-request-id: ${given}\r\nconnection: close\r\n\r\n`, "latin1"))
            )
            // HTTP drops the spaces and tabs around a header's value before anyone reads it
            const delivered = given.replace(/^[ \t]+|[ \t]+$/g, "")
            const sane = /^[\x21-\x7e]{1,128}$/.test(delivered)
            const echoed = answer.headers["x-request-id"]
            if (sane) expect(echoed).toBe(delivered)
            else expect(echoed).toMatch(uuidV4)
          }),
        { numRuns: 60 }
      )
  )
})

describe("the other formats", () => {
  const logfmt = capturing("logfmt")
  layer(Service.layer(undefined, logfmt.logging), { excludeTestServices: true })("LOG_FORMAT=logfmt", (it) => {
    it.effect("every line is key=value pairs; the access line's fields are keys", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const ok = yield* call(service, "GET", "/nodes?limit=2")
        const missing = yield* call(service, "GET", "/nodes/absent", { headers: { "x-request-id": "with\"quote" } })
        expect(missing.requestId).toBe("with\"quote")
        const entries = () => logfmt.lines.map(parseLogfmtLine)
        expect(yield* accessLineOf(entries, ok.requestId)).toMatchObject({ level: "INFO", method: "GET", route: "/nodes", status: "200" })
        expect(yield* accessLineOf(entries, missing.requestId)).toMatchObject({ route: "/nodes/:nodeId", status: "404" })
      }))
  })

  const pretty = capturing("pretty")
  layer(Service.layer(undefined, pretty.logging), { excludeTestServices: true })("LOG_FORMAT=pretty", (it) => {
    it.effect("each entry is a head line and one line per field", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const ok = yield* call(service, "GET", "/nodes?limit=2")
        const line = yield* accessLineOf(() => parsePrettyLines(pretty.lines), ok.requestId)
        expect(line).toMatchObject({ level: "INFO", method: "GET", route: "/nodes", status: "200" })
      }))
  })
})
