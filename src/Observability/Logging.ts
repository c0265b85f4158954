/**
 * The service's log output: Effect's own loggers, one entry a line on stdout (a process manager
 * collects stdout; errors go there too, so that the lines of one request stay in order).
 */
import { Formatter, Layer, Logger, type LogLevel, References } from "effect"

import type { LogFormat } from "../Config.ts"

/**
 * Effect's structured entry with its level under `logLevel`, where the collectors' queries (and
 * this service's lines since its first release) have it; Effect 4's own JSON logger says `level`.
 */
const jsonLine = Logger.map(Logger.formatStructured, ({ level, ...entry }) =>
  Formatter.formatJson({
    message: entry.message,
    logLevel: level,
    timestamp: entry.timestamp,
    cause: entry.cause,
    annotations: entry.annotations,
    spans: entry.spans,
    fiberId: entry.fiberId
  }))

/**
 * `json`: one object a line, the annotations (`request_id`, the access log's fields) under
 * `annotations`; `logfmt`: `key=value` pairs, annotations as keys of their own; `pretty`: coloured
 * on a terminal, for people.
 */
const loggers: Record<LogFormat, Logger.Logger<unknown, void>> = {
  json: Logger.withConsoleLog(jsonLine),
  logfmt: Logger.consoleLogFmt,
  pretty: Logger.consolePretty()
}

/**
 * The logger of `format` in place of Effect's default one, at `level` and above. The tracer's
 * logger stays: it records each line on the current span.
 */
export const loggingLayer = (format: LogFormat, level: LogLevel.LogLevel): Layer.Layer<never> =>
  Layer.merge(
    Logger.layer([loggers[format], Logger.tracerLogger]),
    Layer.succeed(References.MinimumLogLevel, level)
  )
