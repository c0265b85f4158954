/**
 * Request metrics (docs/operating.md, "Metrics"): each answered request counted and timed under its route
 * pattern (`unmatched` for none), method and status, from its arrival to its answer's headers.
 */
import { Effect } from "effect"
import { recordRequest } from "../Observability/Metrics.ts"
import type { Piece } from "./Exchange.ts"

/** Counts and times every answer under its route's pattern (`unmatched` where no route answers). */
export const requestMetrics: Piece = (next) => (exchange) =>
  Effect.tap(next(exchange), (response) =>
    recordRequest(
      exchange.route?.pattern ?? "unmatched",
      exchange.method,
      response.status,
      (performance.now() - exchange.started) / 1000
    ))
