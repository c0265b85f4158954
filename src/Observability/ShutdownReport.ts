/**
 * The shutdown, logged whatever happens: one line when it begins (what is in flight), one when it
 * ends (how each in-flight request ended, and how long the whole stop took, the database's
 * included). The HTTP server's drain (Server.ts, `boundedClose`) tells what it saw; the end line
 * is written when this service's scope closes, after the layers that depend on it: it sits under
 * the database in `ServicesLive`, so it closes after the embedded PostgreSQL has stopped.
 */
import { Clock, Context, Effect, Layer } from "effect"

/**
 * What a request in flight is doing, as the HTTP server sees it: `upload`, its body still arriving;
 * `request`, arrived whole and its answer not begun; `stream`, an NDJSON answer under way;
 * `download`, any other answer under way.
 */
export type InFlightKind = "upload" | "request" | "stream" | "download"

export type Tally = Record<InFlightKind, number>

export const emptyTally = (): Tally => ({ upload: 0, request: 0, stream: 0, download: 0 })

/** How the drain ended, for the requests in flight when it began and those that arrived during it. */
export interface DrainOutcome {
  readonly finished: Tally
  /** Closed by their client before they finished. */
  readonly left: Tally
  /** Still in flight at the grace: their connections were cut. */
  readonly cut: Tally
  /** Requests that arrived during the drain on connections already open (counted in the tallies too). */
  readonly arrived: number
  readonly millis: number
}

const kinds: ReadonlyArray<readonly [InFlightKind, string, string]> = [
  ["upload", "upload", "uploads"],
  ["request", "awaiting its answer", "awaiting their answer"],
  ["stream", "streamed answer", "streamed answers"],
  ["download", "download", "downloads"]
]

const total = (tally: Tally) => tally.upload + tally.request + tally.stream + tally.download

const requests = (n: number) => `${n} request${n === 1 ? "" : "s"}`

/** `1 upload, 2 streamed answers`: the kinds with a count, in a fixed order. */
const kindsOf = (tally: Tally) =>
  kinds.filter(([kind]) => tally[kind] > 0).map(([kind, one, many]) => `${tally[kind]} ${tally[kind] === 1 ? one : many}`).join(", ")

const seconds = (millis: number) => `${(millis / 1000).toFixed(2)} s`

/** The line logged when the shutdown begins. */
export const beganLine = (inFlight: Tally, graceMillis: number) =>
  total(inFlight) === 0
    ? "shutdown began: no request in flight"
    : `shutdown began: ${requests(total(inFlight))} in flight (${kindsOf(inFlight)}), ` +
      `given up to ${graceMillis / 1000} s to finish`

/** The line logged when the shutdown has ended, `millis` after it began. */
export const endedLine = (drain: DrainOutcome | undefined, millis: number) => {
  const head = `shutdown done in ${seconds(millis)}`
  if (drain === undefined) return `${head}; the HTTP server's drain did not end`
  const outcomes = ([["finished", drain.finished], ["left by their client", drain.left], ["cut at the grace", drain.cut]] as const)
    .filter(([, tally]) => total(tally) > 0)
    .map(([how, tally]) => `${total(tally)} ${how} (${kindsOf(tally)})`)
  const arrived = drain.arrived > 0 ? `; ${requests(drain.arrived)} arrived during the drain` : ""
  return outcomes.length === 0
    ? `${head}: no request was in flight`
    : `${head} (HTTP drained in ${seconds(drain.millis)}): ${outcomes.join(", ")}${arrived}`
}

/** Writes the shutdown's two lines: `began` when the drain begins, `drained` when it ends; the end line at its scope's close. */
export class ShutdownReport extends Context.Service<ShutdownReport>()("ShutdownReport", {
  make: Effect.gen(function*() {
    let began: number | undefined
    let drain: DrainOutcome | undefined
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        if (began === undefined) return
        const line = endedLine(drain, (yield* Clock.currentTimeMillis) - began)
        yield* drain !== undefined && total(drain.cut) > 0 ? Effect.logWarning(line) : Effect.logInfo(line)
      })
    )
    return {
      began: (inFlight: Tally, graceMillis: number) =>
        Effect.gen(function*() {
          began = yield* Clock.currentTimeMillis
          yield* Effect.logInfo(beganLine(inFlight, graceMillis))
        }),
      drained: (outcome: DrainOutcome) => Effect.sync(() => void (drain = outcome))
    }
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
