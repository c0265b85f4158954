/**
 * The HTTP edge: everything that acts on a request before or after its handler, in one list, in
 * the order a request meets it. Each piece wraps the ones below it: a request goes down the list
 * to the handler, its answer comes back up. docs/edge.md says how to add one.
 *
 * Before the list, on Node's own events (NodeServer.ts): the connection limits and arrival
 * timers, requests Node's parser refuses (answered on the socket), `nosniff` on every answer, the
 * request's route (found once, Routes.ts), and the bounded drain at shutdown. After the list, the
 * router runs the route's handler (Router.ts).
 */
import { HttpServer, HttpServerRequest } from "effect/http"
import { Context, Effect, Layer, LogLevel } from "effect"
import { AppConfig } from "../Config.ts"
import { DatabaseOutages } from "../Db/Outages.ts"
import { accessLog } from "./AccessLog.ts"
import { anonymousLimit } from "./AnonymousLimit.ts"
import { aliasRewriting } from "./Aliases.ts"
import { answerAliasing } from "./AnswerAliases.ts"
import { bodyChecks } from "./BodyChecks.ts"
import { coding } from "./Coding.ts"
import { conditional } from "./Conditional.ts"
import { cors } from "./Cors.ts"
import type { OptionalPiece } from "../Config.ts"
import { makeExchange, type Next, type Piece } from "./Exchange.ts"
import { errorDetail } from "./ErrorDetail.ts"
import { failures } from "./Failures.ts"
import { ranges } from "./Ranges.ts"
import { closingAfterEarlyAnswers } from "./RefusedBodies.ts"
import { requestIds } from "./RequestId.ts"
import { requestMetrics } from "./RequestMetrics.ts"
import { dispatch } from "./Router.ts"
import { Routes } from "./Routes.ts"
import { pagePolicy } from "./SecurityHeaders.ts"
import { vendorModeHeader } from "./VendorMode.ts"

/** The list, outermost first. A piece that is off for this configuration is `undefined`. */
const pieces = (
  config: AppConfig["Service"],
  table: Routes["Service"],
  outages: DatabaseOutages["Service"]
): ReadonlyArray<Piece | undefined> => {
  const on = (piece: OptionalPiece) => !config.edgeOff.has(piece)
  return [
    // first: every line logged while the request is answered carries its id, and so does every answer
    on("request-id") ? requestIds : undefined,
    // they see the answer as it leaves, errors included (LOG_LEVEL=warn drops the lines: no piece)
    on("access-log") && config.accessLog && !LogLevel.isLessThan("Info", config.logLevel) ? accessLog : undefined,
    on("request-metrics") ? requestMetrics : undefined,
    // outside the funnel, so that error answers get them too; preflights are answered here
    cors(config.corsOrigins, table),
    vendorModeHeader(config.vendorMode),
    // anonymous reads per address: below the log and metrics, which count its 429s, and CORS, which
    // lets browsers read them; above everything that works for an answer, so a refusal costs nothing
    anonymousLimit({
      perWindow: config.rateLimit.anonymousPerWindow,
      windowMillis: config.rateLimit.windowMillis,
      trustProxy: config.trustProxy
    }),
    // a refusal sent before its body arrived (a 413 from anywhere below) closes after a bounded drain
    closingAfterEarlyAnswers(config.refusedBodies),
    // outside the funnel and the validators: every JSON answer may be coded, and a 304 has no body
    coding(),
    // 206 and 416 of a download, outside the validators: an answer comes back up the list, so a
    // 304 for If-None-Match is decided first, and a range is taken of a 200 only
    ranges,
    // ETag and 304 on the body as the handler rendered it
    conditional,
    // the page's policy is of its bytes as rendered, before any coding
    pagePolicy(config.publicBaseUrl),
    // the clients' names beside the interface's in JSON answers (ANSWER_ALIASES), before their ETag
    answerAliasing(config.aliases),
    // `detail` on the media proxy's ErrorResponses (the host's music node reads it), as the funnel
    // and the body checks below render them
    errorDetail,
    // the funnel: whatever the pieces below and the handler fail with leaves as ErrorResponse
    failures(table, outages),
    // JSON bodies are read here, within their limit, before anything decodes them
    bodyChecks,
    // the clients' aliases, renamed in the query and in the body read above
    aliasRewriting(config.aliases)
  ]
}

/** The list composed over the router's dispatch. */
export const makeEdge = (list: ReadonlyArray<Piece | undefined>): Next =>
  list.reduceRight<Next>((next, piece) => piece === undefined ? next : piece(next), dispatch)

/**
 * Serves the routes of the table (their handlers added by the layers this one is provided with)
 * through the edge, on the provided HttpServer.
 */
export const EdgeLive = Layer.unwrap(
  Effect.map(Effect.all([AppConfig, Routes, DatabaseOutages]), ([config, table, outages]) => {
    const edge = makeEdge(pieces(config, table, outages))
    const app = Effect.withFiber((fiber) => {
      const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
      return edge(makeExchange(request, table.resolve))
    })
    return HttpServer.serve(app)
  })
)
