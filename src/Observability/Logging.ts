/**
 * The service's log output: Effect's own loggers, one entry a line on stdout (a process manager
 * collects stdout; errors go there too, so that the lines of one request stay in order).
 */
import { Layer, Logger, type LogLevel } from "effect"

export const logFormats = ["json", "logfmt", "pretty"] as const
export type LogFormat = typeof logFormats[number]

/**
 * `json`: one object a line, the annotations (`request_id`, the access log's fields) under
 * `annotations`; `logfmt`: `key=value` pairs, annotations as keys of their own; `pretty`: coloured
 * on a terminal, for people.
 */
const loggers: Record<LogFormat, Logger.Logger<unknown, void>> = {
  json: Logger.withConsoleLog(Logger.jsonLogger),
  logfmt: Logger.withConsoleLog(Logger.logfmtLogger),
  pretty: Logger.prettyLoggerDefault
}

/** Replaces Effect's default logger by the one of `format`, at `level` and above. */
export const loggingLayer = (format: LogFormat, level: LogLevel.LogLevel): Layer.Layer<never> =>
  Layer.merge(Logger.replace(Logger.defaultLogger, loggers[format]), Logger.minimumLogLevel(level))
