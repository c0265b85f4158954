/**
 * Answers that leave before their request's body has arrived: a 413 past a size limit (JSON
 * routes, archive, media and video uploads), or any other early refusal of an upload (403, 415,
 * ...). Closing such a connection with the answer loses the answer: the kernel meets the bytes
 * still arriving with a reset, a client still writing fails (EPIPE, ECONNRESET) before it reads
 * what was answered, and clients that send the whole body before they read (Python requests)
 * never see it. So:
 * - the answer says `Connection: close`;
 * - the rest of the body is read and dropped, up to `drainBytes` more bytes and for at most
 *   `drainMillis`;
 * - the connection closes once the answer is flushed and the body has arrived whole, or the
 *   bound is reached; a client that reads while it writes (curl, Node's fetch) has the answer by
 *   then and stops on its own.
 * Bodies under a limit are read here too, without ever destroying the request on the way.
 *
 * Effect 4's Node server tears unread bodies down itself once an answer is sent
 * (@effect/platform-node, NodeHttpServer.ts, `teardownBody`): a closing connection is ended and
 * destroyed 500 ms later, another drained up to 256 KiB. Fixed bounds, and a destroy while a
 * client is still sending resets the connection before a client that reads only after sending
 * (Python requests) has read the answer. So an early answer's connection is taken over here: the
 * platform's teardown is removed from that answer (`withoutPlatformTeardown`), Node ends the
 * connection through the socket's `destroySoon` as it did before, and the drain below bounds it.
 */
import { HttpServerError, type HttpServerRequest, HttpServerResponse, UrlParams } from "effect/http"
import { Effect } from "effect"
import * as http from "node:http"
import type { Readable } from "node:stream"
import type { Piece } from "./Exchange.ts"

/** How much of a refused body is read after the answer, and for how long (docs/operating.md, Settings). */
export interface DrainLimits {
  readonly drainBytes: number
  readonly drainMillis: number
}

/** The body went past `maxBytes`; what came after is left unread, for the drain. */
export class BodyOverLimit {
  readonly _tag = "BodyOverLimit"
  constructor(readonly maxBytes: number) {}
}

/**
 * Reads `incoming`'s body whole if it is at most `maxBytes`; fails with BodyOverLimit as soon as
 * it passes them, leaving the request paused and intact (the answer still has to go out on its
 * connection), or with the stream's error.
 */
export const readWithin = (incoming: Readable, maxBytes: number): Effect.Effect<Buffer, BodyOverLimit | Error> =>
  Effect.callback((resume) => {
    const chunks: Array<Buffer> = []
    let bytes = 0
    const stop = () => {
      incoming.off("data", onData)
      incoming.off("end", onEnd)
      incoming.off("error", onError)
      incoming.off("close", onClose)
    }
    const onData = (chunk: Buffer) => {
      bytes += chunk.length
      if (bytes <= maxBytes) return void chunks.push(chunk)
      stop()
      incoming.pause()
      resume(Effect.fail(new BodyOverLimit(maxBytes)))
    }
    const onEnd = () => {
      stop()
      resume(Effect.succeed(Buffer.concat(chunks, bytes)))
    }
    const onError = (e: Error) => {
      stop()
      resume(Effect.fail(e))
    }
    const onClose = () => onError(new Error("The request ended before its body arrived"))
    incoming.on("data", onData).on("end", onEnd).on("error", onError).on("close", onClose)
    incoming.resume()
    return Effect.sync(stop)
  })

/** A body as read for the decoder: its JSON and the text of it, or why it is not JSON. */
export type ReadBody = { readonly text: string; readonly json: unknown } | { readonly error: unknown }

/**
 * `request` with its body as read once, by `readWithin`: its bytes and URL-encoded fields as they
 * came, its text and `json` as `read` gives them (or, if the body is not JSON, a RequestParseError,
 * as the framework's reader fails). `headers` may stand in for the request's own.
 */
export const withBody = (
  request: HttpServerRequest.HttpServerRequest,
  body: Buffer,
  read: ReadBody,
  headers: HttpServerRequest.HttpServerRequest["headers"] = request.headers
): HttpServerRequest.HttpServerRequest => {
  const unreadable = (cause: unknown) =>
    new HttpServerError.HttpServerError({ reason: new HttpServerError.RequestParseError({ request, reason: "Parse", cause }) })
  return Object.create(request, {
    headers: { value: headers },
    text: { value: "json" in read ? Effect.succeed(read.text) : Effect.fail(unreadable(read.error)) },
    json: { value: "json" in read ? Effect.succeed(read.json) : Effect.fail(unreadable(read.error)) },
    urlParamsBody: { value: Effect.sync(() => UrlParams.fromInput(new URLSearchParams(body.toString("utf8")))) },
    arrayBuffer: { value: Effect.sync(() => body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength)) }
  })
}

/** Where a refused connection stands (`lingerAfterAnswer`). */
interface Lingering {
  /** The answer is flushed and the sending side of the connection shut. */
  answered: boolean
  /** The body has arrived whole. */
  complete: boolean
  /** The drain's bound, of bytes or of time, is reached. */
  exhausted: boolean
}

/** Whether to close now: never before the answer is out; then as soon as reading on is pointless. */
const closesNow = (state: Lingering) => state.answered && (state.complete || state.exhausted)

/** A body is announced and has not all arrived yet. */
const hasUnreadBody = (incoming: http.IncomingMessage) =>
  !incoming.complete && !incoming.destroyed &&
  (Number(incoming.headers["content-length"] ?? 0) > 0 || incoming.headers["transfer-encoding"] !== undefined)

/**
 * Reads and drops the rest of `incoming`'s body, and closes its connection once `closesNow`.
 * Node ends a `Connection: close` answer with the socket's `destroySoon`: it shuts the sending
 * side, then destroys the socket as soon as the answer is flushed, bytes arriving or not. This
 * socket's `destroySoon` only shuts the sending side, and the close is left to `closesNow`.
 */
const lingerAfterAnswer = (incoming: http.IncomingMessage, limits: DrainLimits) => {
  const socket = incoming.socket
  const state: Lingering = { answered: false, complete: false, exhausted: false }
  let drained = 0
  const closeIfDone = () => closesNow(state) && socket.destroy()
  const timer = setTimeout(() => {
    state.exhausted = true
    closeIfDone()
  }, limits.drainMillis)
  socket.once("close", () => clearTimeout(timer))
  socket.destroySoon = () =>
    socket.end(() => {
      state.answered = true
      closeIfDone()
    })
  // whoever read the body before (a parser, a file being written) has let go of it
  incoming.unpipe()
  incoming.on("data", (chunk: Buffer) => {
    drained += chunk.length
    if (drained <= limits.drainBytes) return
    state.exhausted = true
    // a client past the bound is no longer read: it waits on its own sending until the close
    incoming.pause()
    closeIfDone()
  })
  incoming.once("end", () => {
    state.complete = true
    closeIfDone()
  })
  incoming.resume()
}

/** The `finish` listeners each answer had before the platform's adapter added its own (`rememberListeners`). */
const ownFinishListeners = new WeakMap<http.ServerResponse, ReadonlyArray<Function>>()

/**
 * Notes `response`'s `finish` listeners (Node's own) as the request arrives, before the platform's
 * adapter adds its `teardownBody`: call it from the server's first `request` listener.
 */
export const rememberListeners = (response: http.ServerResponse) => void ownFinishListeners.set(response, response.listeners("finish"))

/** `response` without the `finish` listeners the platform added: the drain below takes over their work. */
const withoutPlatformTeardown = (response: http.ServerResponse) => {
  const own = ownFinishListeners.get(response)
  if (own === undefined) return
  for (const listener of response.listeners("finish")) {
    if (!own.includes(listener)) response.removeListener("finish", listener as (...args: Array<unknown>) => void)
  }
}

/**
 * An answer that leaves before its request's body has arrived closes the connection, after the
 * bounded drain above.
 */
export const closingAfterEarlyAnswers = (limits: DrainLimits): Piece => (next) => (exchange) =>
  Effect.map(next(exchange), (response) => {
    const { incoming, outgoing } = exchange
    // this server speaks HTTP/1.1 only (NodeServer.ts)
    if (!(incoming instanceof http.IncomingMessage) || !(outgoing instanceof http.ServerResponse)) return response
    if (!hasUnreadBody(incoming)) return response
    withoutPlatformTeardown(outgoing)
    lingerAfterAnswer(incoming, limits)
    return HttpServerResponse.setHeader(response, "connection", "close")
  })
