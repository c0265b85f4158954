/**
 * The service's log output: Effect's own loggers, one entry a line on stdout (a process manager
 * collects stdout; errors go there too, so that the lines of one request stay in order).
 */
import { Effect, FiberRef, HashSet, Layer, Logger, type LogLevel } from "effect"

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

/**
 * The logger of `format` in place of Effect's default one, at `level` and above. `runMain` has
 * already swapped the default for its pretty logger (platform Runtime.ts, `addPrettyLogger`):
 * both go, or every entry would be written twice.
 */
export const loggingLayer = (format: LogFormat, level: LogLevel.LogLevel): Layer.Layer<never> =>
  Layer.merge(
    Layer.scopedDiscard(Effect.locallyScopedWith(FiberRef.currentLoggers, (current) =>
      current.pipe(HashSet.remove(Logger.defaultLogger), HashSet.remove(Logger.prettyLoggerDefault), HashSet.add(loggers[format])))),
    Logger.minimumLogLevel(level)
  )
