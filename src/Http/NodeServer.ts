/**
 * The Node HTTP server under the edge, and what acts on Node's own events rather than in the
 * edge's list (Edge.ts): connection limits and arrival timers, requests Node's parser refuses
 * (answered on the socket as ErrorResponse), `nosniff` on every answer, the request's route (found
 * here, once, as the request arrives: Routes.ts), and the bounded drain at shutdown.
 */
import { HttpServer } from "effect/http"
import { NodeHttpServer } from "@effect/platform-node"
import { Clock, Effect, Layer } from "effect"
import * as http from "node:http"
import type * as net from "node:net"
import type * as stream from "node:stream"
import { AppConfig, type AppConfigShape } from "../Config.ts"
import { BadRequest, infoOf, RequestTimeout, RequestTooLarge, ServiceUnavailable } from "../Domain/ApiErrors.ts"
import { emptyTally, type InFlightKind, ShutdownReport } from "../Observability/ShutdownReport.ts"
import { type RefusedRequestLog, refusedRequestLog } from "./AccessLog.ts"
import { wireOf } from "./Failures.ts"
import { rememberListeners } from "./RefusedBodies.ts"
import { requestIdHeader, requestIdOf } from "./RequestId.ts"
import { Routes, type RouteTable } from "./Routes.ts"
import { noSniff } from "./SecurityHeaders.ts"

/**
 * Runs `listener` on every request `server` receives: Node emits one that says
 * `Expect: 100-continue` as `checkContinue` instead of `request` when something listens for it,
 * as the platform's adapter does.
 */
const onEveryRequest = (server: http.Server, listener: (request: http.IncomingMessage, response: http.ServerResponse) => void) => {
  server.on("request", listener)
  server.on("checkContinue", listener)
}

/** Node checks its headers timeout on this beat; a quarter of the limit keeps the overshoot small. */
const checkingIntervalOf = (limits: HttpLimits) => Math.max(10, Math.min(1000, Math.floor(limits.headersTimeoutMillis / 4)))

type HttpLimits = AppConfigShape["http"]

/**
 * Answers `error` on the bare socket and ends it: for requests refused before (or instead of)
 * the application, as Node itself does. A socket the client keeps open is then closed by the idle
 * limit. Answers the body bytes written (0: the socket was gone).
 */
const answerOnSocket = (
  socket: stream.Duplex,
  error: Refusal,
  reason: string,
  requestId?: string,
  headers: Record<string, string> = {}
): number => {
  if (!socket.writable) {
    socket.destroy()
    return 0
  }
  const { status } = infoOf(error)
  const body = JSON.stringify(wireOf(error))
  const bytes = Buffer.byteLength(body)
  const lines = Object.entries({
    ...(requestId === undefined ? {} : { [requestIdHeader]: requestId }),
    ...headers,
    [noSniff.name]: noSniff.value
  }).map(([name, value]) => `${name}: ${value}\r\n`).join("")
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${bytes}\r\n` +
      `${lines}connection: close\r\n\r\n${body}`
  )
  return bytes
}

type Refusal = RequestTimeout | RequestTooLarge | BadRequest | ServiceUnavailable

const requestTimedOut = () => new RequestTimeout({ message: "The request did not arrive in time" })

/** What Node's parser refused: a late or oversized head, or bytes that are not HTTP. */
const refusalOf = (err: NodeJS.ErrnoException): [Refusal, string] => {
  if (err.code === "ERR_HTTP_REQUEST_TIMEOUT") return [requestTimedOut(), "Request Timeout"]
  if (err.code === "HPE_HEADER_OVERFLOW") {
    return [new RequestTooLarge({ message: "The request line or headers are too large" }), "Request Header Fields Too Large"]
  }
  return [new BadRequest({ message: "The request is not valid HTTP" }), "Bad Request"]
}

/** The connection was reset, or ended in the middle of a request. */
const clientLeft = (err: NodeJS.ErrnoException) => err.code === "ECONNRESET" || err.code === "HPE_INVALID_EOF_STATE"

/**
 * Bounds how long a request may take to arrive. Streamed uploads have no overall limit, only
 * their own idle one: a slow upload that keeps moving must finish. Node's own `requestTimeout`
 * covers every request of a server alike, so it is off and this timer replaces it.
 */
const limitArrival = (limits: HttpLimits, table: RouteTable, request: http.IncomingMessage, response: http.ServerResponse) => {
  if (table.resolve(request).entry?.info.streamed === true) {
    request.socket.setTimeout(limits.uploadIdleTimeoutMillis)
    return
  }
  const timer = setTimeout(() => {
    if (request.complete) return
    if (response.headersSent) request.socket.destroy()
    else answerOnSocket(request.socket, requestTimedOut(), "Request Timeout")
  }, limits.requestTimeoutMillis)
  response.once("close", () => clearTimeout(timer))
}

/**
 * A Node HTTP server with the connection limits of `limits` (docs/operating.md, Settings), whose
 * malformed or late requests (oversized headers or URL, bytes HTTP does not allow, headers past
 * their limit) are answered as ErrorResponse too, before they ever reach the application.
 */
const makeHttpServer = (limits: HttpLimits, table: RouteTable, logRefused: RefusedRequestLog) => {
  // the platform's adapter listens once the application is attached (`serve`); before, nothing would answer
  let attached = false
  const server = http.createServer({
    headersTimeout: limits.headersTimeoutMillis,
    requestTimeout: 0,
    connectionsCheckingInterval: checkingIntervalOf(limits)
  })
  server.keepAliveTimeout = limits.keepAliveTimeoutMillis
  // a socket silent this long is closed (Node's default keeps it forever), see the timeout below
  server.timeout = limits.idleTimeoutMillis
  const inFlight = new WeakMap<object, http.IncomingMessage>()
  onEveryRequest(server, (request, response) => {
    // before the platform's adapter adds its own listeners (RefusedBodies.ts)
    rememberListeners(response)
    inFlight.set(request.socket, request)
    // every answer, whatever writes it (the platform merges its own headers with this one)
    response.setHeader(noSniff.name, noSniff.value)
    response.once("close", () => inFlight.get(request.socket) === request && inFlight.delete(request.socket))
    limitArrival(limits, table, request, response)
    if (!attached) answerStarting(request, logRefused)
  })
  // Node answers `Expect: 100-continue` itself only while nothing listens for `checkContinue`;
  // the platform's adapter does, and acknowledges once its own body readers run. This service
  // reads bodies from the Node request (BodyChecks.ts, the upload routes): acknowledge at once, as
  // Node does by default, before the adapter takes the request (a client would otherwise wait
  // for its expect timeout before sending, curl's 1 s)
  server.prependListener("checkContinue", (_request: http.IncomingMessage, response: http.ServerResponse) => response.writeContinue())
  server.on("timeout", (socket: net.Socket) => {
    // a request that has arrived whole is being worked on (a vendor may take its time): not idle
    if (inFlight.get(socket)?.complete) return
    socket.destroy()
  })
  server.on("clientError", (err: NodeJS.ErrnoException, socket: stream.Duplex) => {
    const [error, reason] = refusalOf(err)
    const requestId = requestIdOf(undefined)
    const bytes = answerOnSocket(socket, error, reason, requestId)
    // a client that leaves (its request, if one had arrived, has its own access line) is not refused
    if (bytes > 0 && !clientLeft(err)) logRefused(infoOf(error).status, bytes, requestId)
  })
  return { server, attach: () => void (attached = true) }
}

/** Seconds a request that arrived while the service was starting is told to wait (`Retry-After`). */
const startingRetryAfterSeconds = 1

/**
 * Answers a request that arrived after the server listened but before the application was
 * attached: the layers build the routes first (App.ts), so this is a window of moments, but a
 * request in it would otherwise wait forever on its open connection.
 */
const answerStarting = (request: http.IncomingMessage, logRefused: RefusedRequestLog) => {
  const requestId = requestIdOf(undefined)
  const error = new ServiceUnavailable({ message: "The service is starting: try again in a moment" })
  const bytes = answerOnSocket(request.socket, error, "Service Unavailable", requestId, { "retry-after": String(startingRetryAfterSeconds) })
  if (bytes > 0) logRefused(infoOf(error).status, bytes, requestId, "starting")
}

/** A request being answered, and once the drain has begun, its kind at the start (or on arrival). */
interface Tracked {
  readonly request: http.IncomingMessage
  kind?: InFlightKind
}

/** What a request in flight is doing now (ShutdownReport.ts, `InFlightKind`). */
const kindOf = (request: http.IncomingMessage, response: http.ServerResponse): InFlightKind => {
  if (!request.complete) return "upload"
  if (!response.headersSent) return "request"
  return /ndjson|event-stream/.test(String(response.getHeader("content-type") ?? "")) ? "stream" : "download"
}

/**
 * The shutdown of `server`, within `graceMillis`: it stops accepting at once, lets the requests
 * in flight finish, each connection closing after its answer, and then cuts what is left (a slow
 * upload, a streamed answer, a client that keeps its connection). Node's own `close`, which the
 * platform's server calls, waits for every connection however long it lasts. `report` is told
 * what was in flight and how each request ended.
 */
const boundedClose = (server: http.Server, graceMillis: number, report: ShutdownReport["Service"]) => {
  const answering = new Map<http.ServerResponse, Tracked>()
  const outcome = { finished: emptyTally(), left: emptyTally(), cut: emptyTally(), arrived: 0 }
  let draining = false
  // an answer whose headers are still to be written tells its client that the connection ends
  const lastOnConnection = (response: http.ServerResponse) => response.headersSent || response.setHeader("connection", "close")
  onEveryRequest(server, (request, response) => {
    const tracked: Tracked = { request }
    answering.set(response, tracked)
    if (draining) {
      lastOnConnection(response)
      tracked.kind = kindOf(request, response)
      outcome.arrived++
    }
    response.once("close", () => {
      // absent: counted as cut at the grace already
      if (!answering.delete(response)) return
      if (tracked.kind !== undefined) outcome[response.writableFinished ? "finished" : "left"][tracked.kind]++
      // a keep-alive connection whose answer had already started is idle now
      if (draining) server.closeIdleConnections()
    })
  })
  const begin = Effect.sync(() => {
    draining = true
    const inFlight = emptyTally()
    answering.forEach((tracked, response) => {
      lastOnConnection(response)
      tracked.kind = kindOf(tracked.request, response)
      inFlight[tracked.kind]++
    })
    return inFlight
  })
  const drain = Effect.callback<void>((resume) => {
    const deadline = setTimeout(() => {
      answering.forEach((tracked) => outcome.cut[tracked.kind ?? "request"]++)
      answering.clear()
      server.closeAllConnections()
    }, graceMillis)
    // also closes the connections idle right now; calls back once the last connection is gone
    server.close(() => {
      clearTimeout(deadline)
      resume(Effect.void)
    })
  })
  return Effect.gen(function*() {
    const inFlight = yield* begin
    yield* report.began(inFlight, graceMillis)
    const started = yield* Clock.currentTimeMillis
    yield* drain
    yield* report.drained({ ...outcome, millis: (yield* Clock.currentTimeMillis) - started })
  })
}

/**
 * The HttpServer of the configured host and port. Its shutdown drains the server (`boundedClose`)
 * before the application is detached: the platform detaches the application first, and a
 * request arriving on an open connection after that would wait for nothing.
 */
export const HttpServerLive = Layer.unwrap(
  Effect.gen(function*() {
    const config = yield* AppConfig
    const table = yield* Routes
    const report = yield* ShutdownReport
    const { server, attach } = makeHttpServer(config.http, table, yield* refusedRequestLog(config))
    const close = boundedClose(server, config.shutdownGraceMillis, report)
    const draining = Layer.effect(
      HttpServer.HttpServer,
      Effect.map(HttpServer.HttpServer, (platform) =>
        HttpServer.make({
          address: platform.address,
          // finalizers run last first: the drain, then the platform's detaching of the application
          serve: (app, middleware) =>
            (middleware ? platform.serve(app, middleware) : platform.serve(app)).pipe(
              Effect.andThen(Effect.sync(attach)),
              // the line an operator (and the start-up benchmark) waits for: requests are answered from here on
              Effect.andThen(Effect.logInfo(`listening on ${HttpServer.formatAddress(platform.address)}`)),
              Effect.andThen(Effect.addFinalizer(() => close))
            )
        }))
    )
    return Layer.provideMerge(draining, NodeHttpServer.layer(() => server, { port: config.port, host: config.host }))
  })
)
