/**
 * The access log (`ACCESS_LOG`, at INFO): one line per request, annotated with its request id.
 * An answer with a body of known length gets its line as soon as it is ready to be handed over;
 * a streamed one once it has been, with the bytes that left; a request whose client went away
 * before its answer started, as soon as the connection closes, with status 499 (nginx's "client
 * closed request"). A client that left during the body keeps the status it was sent, `aborted`.
 */
import { HttpBody, HttpServerResponse } from "effect/http"
import { Effect, Stream } from "effect"
import type { AppConfig } from "../Config.ts"
import type { Exchange, Piece } from "./Exchange.ts"
import { requestIdKey } from "./RequestId.ts"

/** The line's fields. `path` has no query: signed URLs carry their signature there. */
const fieldsOf = (exchange: Exchange, status: number, bytes: number, aborted: boolean) => {
  const fields: Record<string, unknown> = {
    method: exchange.method,
    route: exchange.route?.pattern ?? "unmatched",
    path: exchange.path,
    status,
    duration_ms: Math.round((performance.now() - exchange.started) * 1000) / 1000,
    bytes
  }
  if (exchange.userId !== undefined) fields.user_id = exchange.userId
  if (exchange.tokenId !== undefined) fields.token_id = exchange.tokenId
  if (aborted) fields.aborted = true
  return fields
}

const line = (exchange: Exchange, status: number, bytes: number, aborted: boolean) =>
  Effect.annotateLogs(Effect.logInfo("http"), { ...fieldsOf(exchange, status, bytes, aborted), [requestIdKey]: exchange.id })

/** A streamed body counted as it is handed over. */
const counted = (stream: Stream.Stream<Uint8Array, unknown>, sent: { bytes: number }) =>
  Stream.mapArray(stream, (chunk) => {
    for (const bytes of chunk) sent.bytes += bytes.length
    return chunk
  })

/** The body bytes of an answer whose length is known now; undefined for a stream. */
const fixedBytes = (exchange: Exchange, response: HttpServerResponse.HttpServerResponse): number | undefined => {
  if (exchange.method === "HEAD") return 0
  const body = response.body
  switch (body._tag) {
    case "Uint8Array":
      return body.body.length
    case "Raw":
      return typeof body.body === "string" ? Buffer.byteLength(body.body) : body.contentLength ?? 0
    case "Stream":
      return undefined
    default:
      return 0
  }
}

/** The access line of every request. */
export const accessLog: Piece = (next) => (exchange) =>
  Effect.withFiber((fiber) => {
    const outgoing = exchange.outgoing
    let written = false
    // on a fiber of its own with the request's context: the request's fiber may be gone
    const writeLater = (status: number, bytes: number, aborted: boolean) => {
      if (written) return
      written = true
      Effect.runForkWith(fiber.context)(line(exchange, status, bytes, aborted))
    }
    const onClose = () => {
      if (!outgoing.writableEnded) writeLater(outgoing.headersSent ? outgoing.statusCode : 499, 0, true)
    }
    outgoing.once("close", onClose)
    return Effect.flatMap(next(exchange), (response) => {
      if (written) return Effect.succeed(response)
      const bytes = fixedBytes(exchange, response)
      if (bytes !== undefined) {
        written = true
        outgoing.off("close", onClose)
        return Effect.as(line(exchange, response.status, bytes, false), response)
      }
      // a stream: its line once it has left, or its client has
      const sent = { bytes: 0 }
      const body = response.body as HttpBody.Stream
      outgoing.off("close", onClose)
      outgoing.once("close", () => writeLater(outgoing.statusCode, sent.bytes, !outgoing.writableFinished))
      return Effect.succeed(HttpServerResponse.setBody(response, HttpBody.stream(counted(body.stream, sent), body.contentType, body.contentLength)))
    })
  })

export type RefusedRequestLog = (status: number, bytes: number, requestId: string, route?: string) => void

/**
 * The access line of a request that never reaches the application (NodeServer.ts): one Node's
 * parser refused (`clientError`), which has no method or route (`route` is `unparsed`), or one
 * that arrived while the service was starting (`starting`).
 */
export const refusedRequestLog = (config: AppConfig["Service"]): Effect.Effect<RefusedRequestLog> =>
  Effect.map(Effect.context<never>(), (context) => {
    if (!config.accessLog) return () => {}
    const run = Effect.runForkWith(context)
    return (status, bytes, requestId, route = "unparsed") =>
      void run(Effect.annotateLogs(Effect.logInfo("http"), { [requestIdKey]: requestId, route, status, bytes }))
  })
