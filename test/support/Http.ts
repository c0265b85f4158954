/**
 * The tests' HTTP client for the service: requests with an optional bearer token and JSON body,
 * answers read whole (the text, and the JSON body), and the checks that an answer has the status
 * expected and is an ErrorResponse `{error, message}`.
 */
import { Effect, Schema } from "effect"
import { expect } from "vitest"
import { ErrorResponse } from "../../src/Domain/ErrorResponse.ts"
import type { Running } from "./Service.ts"

// --- requests ----------------------------------------------------------------------------------

/** An answer read whole, as text. */
export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

/** An answer with its JSON body parsed (`undefined` when the body is empty). */
export interface Answer<Body = unknown> extends Reply {
  readonly body: Body
}

export interface RequestOptions {
  /** Sent as `Authorization: Bearer <token>`; undefined sends no Authorization header. */
  readonly token?: string | undefined
  /** A value sent as JSON, with `content-type: application/json`. */
  readonly body?: unknown
  /** Sent as it is instead of `body` (malformed JSON, say), with `content-type: application/json`. */
  readonly raw?: string | undefined
  /** More request headers; they override the content-type above, not the token's Authorization. */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/** Sends one request and reads the answer as text: the Promise under `send`, for async code. */
export const fetchText = async (service: Running, method: string, path: string, options: RequestOptions = {}): Promise<Reply> => {
  const body = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body))
  const headers: Record<string, string> = {
    ...(body === undefined ? {} : { "content-type": "application/json" }),
    ...options.headers,
    ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` })
  }
  const response = await service.fetch(path, { method, headers, ...(body === undefined ? {} : { body }) })
  return { status: response.status, headers: response.headers, text: await response.text() }
}

/** `fetchText` as an Effect: the answer's text, whatever it holds. */
export const sendText = (service: Running, method: string, path: string, options?: RequestOptions) =>
  Effect.promise(() => fetchText(service, method, path, options))

/** Sends one request and reads its JSON body; a body that is not JSON fails the test. */
export const send = <Body = unknown>(service: Running, method: string, path: string, options?: RequestOptions) =>
  Effect.promise(async (): Promise<Answer<Body>> => {
    const reply = await fetchText(service, method, path, options)
    const body = reply.text === "" ? undefined : parseJson(reply.text, `${method} ${path} answered ${reply.status}`)
    return { ...reply, body: body as Body }
  })

type GetOptions = Pick<RequestOptions, "token" | "headers">

/** `GET` a path (with a token, or other headers) and read its JSON body. */
export const get = (service: Running, pathAndQuery: string, options: GetOptions = {}) =>
  send(service, "GET", pathAndQuery, options)

/** `GET` a path and read the answer as text. */
export const getText = (service: Running, pathAndQuery: string, options: GetOptions = {}) =>
  sendText(service, "GET", pathAndQuery, options)

/** Parses a body that must be JSON, saying what it was when it is not. */
export const parseJson = (text: string, context: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    throw new Error(`${context}: the body is not JSON: ${JSON.stringify(text.slice(0, 300))}`)
  }
}

/** `GET /openapi.json`: its status, its content type and the document, parsed. */
export const getOpenApi = (service: Running) =>
  Effect.map(getText(service, "/openapi.json"), (reply) => ({
    status: reply.status,
    contentType: reply.headers.get("content-type"),
    spec: parseJson(reply.text, "/openapi.json") as Record<string, any>
  }))

// --- checks ------------------------------------------------------------------------------------

/** The answer has `status`, or the test fails showing what came instead. */
export const expectStatus = <A extends Reply>(answer: A, status: number, what: string): A => {
  if (answer.status !== status) expect.fail(`${what}: expected ${status}, got ${answer.status}: ${answer.text.slice(0, 300)}`)
  return answer
}

/** An ErrorResponse's code: snake_case. */
const errorCode = /^[a-z][a-z0-9_]*$/

/**
 * The body without its `detail` when that is the message again, as the media proxy's errors
 * carry it (src/Http/ErrorDetail.ts); any other `detail` is kept, for the checks to refuse.
 */
const withoutEchoedDetail = (u: unknown): unknown => {
  if (typeof u !== "object" || u === null || Array.isArray(u) || !("detail" in u)) return u
  const { detail, ...rest } = u as Record<string, unknown>
  return detail === rest.message ? rest : u
}

/** Decodes ErrorResponse `{error, message}` (and the proxy's echo in `detail`), refusing any other field. */
export const decodeError = (u: unknown): ErrorResponse =>
  Schema.decodeUnknownSync(ErrorResponse)(withoutEchoedDetail(u), { onExcessProperty: "error" })

/** The body is exactly ErrorResponse `{error, message}` (`detail` echoing the message on the proxy): a snake_case code and a non-empty message. */
export const expectErrorBody = (raw: unknown, code?: string) => {
  const body = withoutEchoedDetail(raw)
  expect(body).toEqual({ error: expect.any(String), message: expect.any(String) })
  const { error, message } = body as { error: string; message: string }
  expect(error).toMatch(errorCode)
  expect(message.length).toBeGreaterThan(0)
  if (code !== undefined) expect(error).toBe(code)
}

/** A non-2xx answer: exactly `{error, message}`, with the status and code expected. */
export const expectError = (answer: Answer, status: number, code?: string) => {
  if (answer.status !== status) expect.fail(`expected ${status}, got ${answer.status}: ${answer.text}`)
  const e = decodeError(answer.body)
  expectErrorBody(e, code)
  return e
}

/** A 400 ErrorResponse whose message names the field. */
export const expectBadRequest = (answer: Answer, field: string) => {
  const e = expectError(answer, 400, "bad_request")
  expect(e.message).toContain(field)
}

/**
 * Why an answer is not exactly an ErrorResponse (JSON, `{error, message}` and nothing else, a
 * snake_case code, a message), or undefined when it is: for tests that gather every problem
 * before they fail.
 */
export const errorBodyProblem = (reply: Reply): string | undefined => {
  const contentType = reply.headers.get("content-type")
  if (!/^application\/json/.test(contentType ?? "")) return `content-type ${contentType}`
  let body: unknown
  try {
    body = JSON.parse(reply.text)
  } catch {
    return "a body that is not JSON"
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) return "a body that is not an object"
  body = withoutEchoedDetail(body) as object
  const keys = Object.keys(body as object).sort()
  if (keys.length !== 2 || keys[0] !== "error" || keys[1] !== "message") return `fields ${JSON.stringify(keys)}`
  const { error, message } = body as { error: unknown; message: unknown }
  if (typeof error !== "string" || !errorCode.test(error)) return `error ${JSON.stringify(error)}`
  if (typeof message !== "string" || message.length === 0) return `message ${JSON.stringify(message)}`
  return undefined
}
