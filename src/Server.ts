/**
 * The service's Layers: the HTTP application over every feature's handlers (composed in App.ts)
 * and the HTTP server. `main.ts` composes them with the real configuration; the tests with a
 * configuration pointing at their own database and a server on a free port.
 */
import { HttpApiScalar } from "effect/http-api"
import { HttpIncomingMessage, HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { NodeHttpServer } from "@effect/platform-node"
import { ByteSize, type Cause, Clock, Effect, Fiber, flow, identity, Layer, type Types } from "effect"
import * as http from "node:http"
import type * as net from "node:net"
import type * as stream from "node:stream"
import { ApiLive } from "./App.ts"
import { allowedMethods } from "./Routes.ts"
import { apiDocument, documentedApi } from "./ApiDocument.ts"
import { checkingBodies, maxJsonBodyBytes } from "./BodyChecks.ts"
import { aliasRewriting } from "./Compat/Rewrite.ts"
import { AppConfig, type AppConfigShape } from "./Config.ts"
import { DatabaseOutages } from "./Db/Outages.ts"
import { BadRequest, infoOf, PayloadTooLarge, RequestTimeout, RequestTooLarge, UnsupportedMediaType } from "./Domain/ApiErrors.ts"
import { errorResponse, respondToCause, wireOf } from "./Errors.ts"
import { SimulatedModeHeader } from "./Images/Http.ts"
import { closingAfterEarlyAnswers, rememberListeners } from "./RefusedBodies.ts"
import { MetricsLive, requestMetrics } from "./Observability/MetricsEndpoint.ts"
import { namingServerSpans } from "./Observability/Otel.ts"
import { emptyTally, type InFlightKind, ShutdownReport } from "./Observability/ShutdownReport.ts"
import { Cors } from "./Web/Cors.ts"
import { DocsContentSecurityPolicy, noSniff } from "./Web/SecurityHeaders.ts"
import { Validators } from "./Web/Validators.ts"
import { Compression } from "./Web/Compression.ts"
import { observingRequests, refusedRequestLog, type RefusedRequestLog } from "./Observability/AccessLog.ts"
import { requestIdHeader, requestIdOf } from "./Observability/RequestId.ts"

/**
 * Routes that read their body as a stream and enforce their own, larger limits: the video upload
 * of the music proxy, node archives and media files (signed upload URLs).
 */
const streamedBodyRoutes = [/^\/proxy\/musicvendor\//, /^\/archives\//, /^\/media\//]
const isStreamedUpload = (method: string, url: string) =>
  method !== "GET" && method !== "HEAD" && streamedBodyRoutes.some((route) => route.test(url))
const readsStreamedBody = (request: HttpServerRequest.HttpServerRequest) => isStreamedUpload(request.method, request.url)

/**
 * A request whose client goes away still runs to its end, its answer dropped. Interrupting it
 * would cancel its SQL statement, and the driver's cancel (sent from another pooled connection,
 * given up after 5 s when the pool is busy, still queued) can land on the next statement the
 * connection runs: another request's. Streamed uploads stay interruptible: a client that leaves
 * must stop the vendor request its upload feeds.
 */
const runToCompletion = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.flatMap(Effect.forkDetach(effect), Fiber.join)

/** The text of a framework's own answer (its 415 names the content type it does not take). */
const textOf = (response: HttpServerResponse.HttpServerResponse) =>
  response.body._tag === "Uint8Array" && response.body.contentType.startsWith("text/") ? new TextDecoder().decode(response.body.body).trim() : ""

/**
 * The refusals HttpApi answers itself rather than failing (HttpApiBuilder.ts, `decodePayload`: a
 * content type the endpoint does not declare is a text 415, a declared stream over its limit an
 * empty 413), as ErrorResponse too. Any other answer, an ErrorResponse or a success, is left as it is.
 */
const asErrorResponse = (response: HttpServerResponse.HttpServerResponse) => {
  if (response.status < 400 || (response.body._tag !== "Empty" && !(response.body.contentType ?? "").startsWith("text/plain"))) return response
  if (response.status === 415) {
    return errorResponse(new UnsupportedMediaType({ message: textOf(response) || "This request's content type is not accepted here" }))
  }
  if (response.status === 413) return errorResponse(new PayloadTooLarge({ message: "The request body is too large" }))
  if (response.status === 400) return errorResponse(new BadRequest({ message: textOf(response) || "The request is not valid" }))
  return response
}

/**
 * Framework failures, typed errors and defects all leave as ErrorResponse; bodies are bounded,
 * and JSON routes refuse multipart and overly nested bodies before decoding (BodyChecks.ts).
 * The clients' aliases are renamed inside both (Compat/Rewrite.ts), so that a body read for
 * renaming has the same limit and its failures the same answers. An answer that leaves before
 * its body has arrived (a 413, a refused upload) closes the connection only after a bounded
 * drain, so that the client reads it (RefusedBodies.ts).
 *
 * A global middleware of the router: it wraps every route and the router's own failure (no route:
 * 404, or 405 for a path known under another method). The router lets its global middlewares add
 * nothing to the failures they are given (`Types.unhandled`), so this one, which answers them
 * all, says it may still fail with what it was given: it never does.
 */
const ErrorResponses = HttpRouter.middleware(Effect.map(Effect.zip(AppConfig, DatabaseOutages), ([config, outages]) => {
  const renamingAliases = aliasRewriting(config.aliases)
  const closingAfterAnswer = closingAfterEarlyAnswers(config.refusedBodies)
  const respond = (cause: Cause.Cause<unknown>) => Effect.provideService(respondToCause(allowedMethods)(cause), DatabaseOutages, outages)
  return (
    app: Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled, HttpServerRequest.HttpServerRequest> =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      (readsStreamedBody(request) ? renamingAliases(app) : checkingBodies(renamingAliases(app))).pipe(
        // the framework reads JSON bodies no further than this (they are read by BodyChecks.ts)
        readsStreamedBody(request) ? identity : Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(maxJsonBodyBytes)),
        Effect.catchCause(respond),
        Effect.map(asErrorResponse),
        readsStreamedBody(request) ? identity : runToCompletion,
        closingAfterAnswer
      ))
}), { global: true })

/** `/openapi.json` and `/docs`, of the documented Api (ApiDocument.ts) with this instance's public URL. */
const Docs = Layer.unwrap(Effect.map(AppConfig, (config) => {
  const api = documentedApi(config.publicBaseUrl)
  // worked out on the first request, then the same answer (and body) every time
  let document: HttpServerResponse.HttpServerResponse | undefined
  return Layer.mergeAll(
    HttpRouter.add("GET", "/openapi.json", Effect.sync(() => document ??= HttpServerResponse.jsonUnsafe(apiDocument(config.publicBaseUrl)))),
    HttpApiScalar.layer(api, { path: "/docs", scalar: { layout: "modern", theme: "default", withDefaultFonts: false } })
  )
}))

/**
 * The routes (the Api's, the documents', `/metrics`) under the router's global middlewares. The
 * router applies those in the order they are built, the first outermost: each line below is built
 * before, so wraps, the lines above it. Compression wraps the validators and the /docs policy,
 * which read the body as rendered; CORS and the validators' headers reach every answer the error
 * funnel gives.
 */
const Routes = Layer.mergeAll(ApiLive, Docs, MetricsLive).pipe(
  Layer.provide([ErrorResponses, SimulatedModeHeader]),
  Layer.provide([Cors, Validators, DocsContentSecurityPolicy]),
  Layer.provide(Compression)
)

/**
 * Serves the API on the provided HttpServer with the provided services. Build the services
 * before the server: a server listens as soon as it is built, and a request arriving before the
 * application is attached would wait for nothing. The access log is the outermost middleware: it
 * sees every answer, and the request id it sets annotates the metrics' work too. The router's own
 * request logger is off: the access log is this service's.
 */
export const AppLive = HttpRouter.serve(Routes, { disableLogger: true, middleware: flow(requestMetrics, observingRequests) }).pipe(
  namingServerSpans
)

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
const answerOnSocket = (socket: stream.Duplex, error: Refusal, reason: string, requestId?: string): number => {
  if (!socket.writable) {
    socket.destroy()
    return 0
  }
  const { status } = infoOf(error)
  const body = JSON.stringify(wireOf(error))
  const bytes = Buffer.byteLength(body)
  const idLine = requestId === undefined ? "" : `${requestIdHeader}: ${requestId}\r\n`
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${bytes}\r\n` +
      `${idLine}${noSniff.name}: ${noSniff.value}\r\nconnection: close\r\n\r\n${body}`
  )
  return bytes
}

type Refusal = RequestTimeout | RequestTooLarge | BadRequest

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
const limitArrival = (limits: HttpLimits, request: http.IncomingMessage, response: http.ServerResponse) => {
  if (isStreamedUpload(request.method ?? "GET", request.url ?? "/")) {
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
 * A Node HTTP server with the connection limits of `limits` (README, Configuration), whose
 * malformed or late requests (oversized headers or URL, bytes HTTP does not allow, headers past
 * their limit) are answered as ErrorResponse too, before they ever reach the application.
 */
const makeHttpServer = (limits: HttpLimits, logRefused: RefusedRequestLog) => {
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
    limitArrival(limits, request, response)
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
  return server
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
  Effect.map(Effect.all([AppConfig, refusedRequestLog, ShutdownReport]), ([config, logRefused, report]) => {
    const server = makeHttpServer(config.http, logRefused)
    const close = boundedClose(server, config.shutdownGraceMillis, report)
    const draining = Layer.effect(
      HttpServer.HttpServer,
      Effect.map(HttpServer.HttpServer, (platform) =>
        HttpServer.make({
          address: platform.address,
          // finalizers run last first: the drain, then the platform's detaching of the application
          serve: (app, middleware) =>
            Effect.andThen(middleware ? platform.serve(app, middleware) : platform.serve(app), Effect.addFinalizer(() => close))
        }))
    )
    return Layer.provideMerge(draining, NodeHttpServer.layer(() => server, { port: config.port, host: config.host }))
  })
)
