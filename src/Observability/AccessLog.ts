/**
 * The edge of every request's handling, around the whole application: its request id (taken or
 * made, echoed as `X-Request-Id`, annotating every log line written while it is handled) and its
 * access-log line, written once the answer has been handed to the connection or the client has
 * gone away.
 */
import { HttpBody, HttpEffect, HttpServerRequest, HttpServerResponse } from "effect/http"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Context, Effect, LogLevel, References, Stream } from "effect"
import { AppConfig } from "../Config.ts"
import { routeOf } from "../Routes.ts"
import { type CallerSlot, RequestCaller } from "./Caller.ts"
import { requestIdHeader, requestIdOf } from "./RequestId.ts"

/** The annotation that carries the request id on every log line of the request. */
const requestIdKey = "request_id"

/** Body bytes of the answer: its length when fixed, counted as they are handed over when streamed. */
interface Sent {
  bytes: number
}

const counted = (stream: Stream.Stream<Uint8Array, unknown>, sent: Sent) =>
  Stream.mapArray(stream, (chunk) => {
    for (const bytes of chunk) sent.bytes += bytes.length
    return chunk
  })

/** The answer as it leaves: with the request id, its body measured. */
const leaving = (response: HttpServerResponse.HttpServerResponse, id: string, headOnly: boolean, sent: Sent) => {
  const answer = HttpServerResponse.setHeader(response, requestIdHeader, id)
  const body = answer.body
  if (headOnly) return answer
  switch (body._tag) {
    case "Uint8Array":
      sent.bytes = body.body.length
      return answer
    case "Raw":
      sent.bytes = typeof body.body === "string" ? Buffer.byteLength(body.body) : body.contentLength ?? 0
      return answer
    case "Stream":
      return HttpServerResponse.setBody(answer, HttpBody.stream(counted(body.stream, sent), body.contentType, body.contentLength))
    default:
      return answer
  }
}

/**
 * The access-log line's fields. `path` has no query: signed URLs carry their signature there.
 * A client that went away before the status line was sent gets 499 (nginx's "client closed
 * request"); one that left during the body keeps the status it was sent, with `aborted`.
 */
const accessFields = (request: HttpServerRequest.HttpServerRequest, millis: number, sent: Sent, caller: CallerSlot, aborted: boolean) => {
  const response = NodeHttpServerRequest.toServerResponse(request)
  const query = request.url.indexOf("?")
  const path = query === -1 ? request.url : request.url.slice(0, query)
  const fields: Record<string, unknown> = {
    method: request.method,
    route: routeOf(request.method, path) ?? "unmatched",
    path,
    status: response.headersSent ? response.statusCode : 499,
    duration_ms: Math.round(millis * 1000) / 1000,
    bytes: response.headersSent ? sent.bytes : 0
  }
  if (caller.userId !== undefined) fields.user_id = caller.userId
  if (caller.tokenId !== undefined) fields.token_id = caller.tokenId
  if (aborted) fields.aborted = true
  return fields
}

/**
 * The middleware of the server (`HttpRouter.serve`): it wraps every request, error answers included. The
 * access line is written when the answer has been handed over, or as soon as the connection
 * closes before that: a request whose client left may go on running (Server.ts,
 * `runToCompletion`), or wait for a body that will never come.
 */
export const observingRequests = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, Exclude<R, RequestCaller> | AppConfig | HttpServerRequest.HttpServerRequest> =>
  Effect.withFiber((fiber) => {
    const started = performance.now()
    const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
    const { accessLog } = Context.getUnsafe(fiber.context, AppConfig)
    const id = requestIdOf(request.headers[requestIdHeader])
    const sent: Sent = { bytes: 0 }
    const caller: CallerSlot = { userId: undefined, tokenId: undefined }
    const headOnly = request.method === "HEAD"
    const handled = HttpEffect.withPreResponseHandler(app, (_, response) => Effect.succeed(leaving(response, id, headOnly, sent)))
      .pipe(Effect.provideService(RequestCaller, caller))
    // LOG_LEVEL=warn drops the line: not built then, as when ACCESS_LOG=false
    if (!accessLog || LogLevel.isLessThan("Info", fiber.getRef(References.MinimumLogLevel))) {
      return Effect.annotateLogs(handled, requestIdKey, id)
    }
    let written = false
    const accessLine = (aborted: boolean) => {
      written = true
      const fields = accessFields(request, performance.now() - started, sent, caller, aborted)
      return Effect.annotateLogs(Effect.logInfo("http"), fields)
    }
    const response = NodeHttpServerRequest.toServerResponse(request)
    response.once("close", () => {
      if (written || response.writableEnded) return
      // the request's own fiber may be gone: the line runs on a fiber of its own, with the request's context
      Effect.runForkWith(fiber.context)(Effect.annotateLogs(accessLine(true), requestIdKey, id))
    })
    return Effect.annotateLogs(Effect.ensuring(handled, Effect.suspend(() => written ? Effect.void : accessLine(false))), requestIdKey, id)
  })

export type RefusedRequestLog = (status: number, bytes: number, requestId: string) => void

/**
 * The access line of a request that Node's parser refused (Server.ts, `clientError`): it never
 * reaches the application, and has no method or route; `route` says so.
 */
export const refusedRequestLog: Effect.Effect<RefusedRequestLog, never, AppConfig> = Effect.map(
  Effect.zip(AppConfig, Effect.context<never>()),
  ([config, context]) => {
    if (!config.accessLog) return () => {}
    const run = Effect.runForkWith(context)
    return (status, bytes, requestId) =>
      void run(Effect.annotateLogs(Effect.logInfo("http"), { [requestIdKey]: requestId, route: "unparsed", status, bytes }))
  }
)
