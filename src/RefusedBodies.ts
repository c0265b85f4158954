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
 * Bodies under a limit are read here too, without ever destroying the request on the way (the
 * framework's own limit does, and so closes the connection before anything is answered).
 */
import { type HttpApp, HttpServerError, HttpServerRequest, HttpServerResponse, UrlParams } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect } from "effect"
import type * as http from "node:http"

/** How much of a refused body is read after the answer, and for how long (README, Configuration). */
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
export const readWithin = (incoming: NodeJS.ReadableStream, maxBytes: number): Effect.Effect<Buffer, BodyOverLimit | Error> =>
  Effect.async((resume) => {
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

/**
 * `request` with its body reading as `body` (read once, by `readWithin`), the way the framework
 * would have read it: empty JSON is null, unparsable JSON a RequestError.
 */
export const withBody = (request: HttpServerRequest.HttpServerRequest, body: Buffer): HttpServerRequest.HttpServerRequest => {
  const text = body.toString("utf8")
  const json = Effect.try({
    try: (): unknown => text === "" ? null : JSON.parse(text),
    catch: (cause) => new HttpServerError.RequestError({ request, reason: "Decode", cause })
  })
  return Object.create(request, {
    text: { value: Effect.succeed(text) },
    json: { value: json },
    urlParamsBody: { value: Effect.sync(() => UrlParams.fromInput(new URLSearchParams(text))) },
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

/**
 * Wraps the whole application: an answer that leaves before its request's body has arrived closes
 * the connection, after the bounded drain above.
 */
export const closingAfterEarlyAnswers = (limits: DrainLimits) => <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    Effect.map(app, (response) => {
      const incoming = NodeHttpServerRequest.toIncomingMessage(request)
      if (!hasUnreadBody(incoming)) return response
      lingerAfterAnswer(incoming, limits)
      return HttpServerResponse.setHeader(response, "connection", "close")
    }))
