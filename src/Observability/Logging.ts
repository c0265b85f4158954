/**
 * The service's log output: Effect's own loggers, one entry a line on stdout (a process manager
 * collects stdout; errors go there too, so that the lines of one request stay in order).
 */
import { Console, Context, Effect, Formatter, Layer, Logger, type LogLevel, References } from "effect"
import * as util from "node:util"

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

/** The console methods dependencies print with, and the level their lines are logged at. */
const consoleLevels = { log: "Info", info: "Info", debug: "Debug", warn: "Warn", error: "Error" } as const

type Printer = (...args: Array<unknown>) => void

/**
 * Node's own printer of process warnings (lib/internal/process/warning.js), which writes them,
 * several lines each, to stderr; other listeners of `warning` are left alone.
 */
const nodeWarningPrinters = () => process.listeners("warning").filter((listener) => listener.name === "onWarning")

/**
 * What dependencies print, as entries of the current loggers, for as long as the scope lasts:
 * `console.*` (formatted as the console would, multi-line text kept in one message) and process
 * warnings in place of Node's printer. Under LOG_FORMAT=json a line of theirs would break "one
 * object a line": the object-store SDK's Node-version warning alone spans nine. The loggers
 * themselves write through the console: they are given the console as it was (the service
 * returned), so that their lines go out as they are.
 */
const printedAsLogs = Effect.acquireRelease(
  Effect.gen(function*() {
    const methods = console as unknown as Record<string, Printer>
    const current = yield* Console.Console
    const writer: Console.Console = current === globalThis.console ? { ...globalThis.console } : current
    const context = Context.add(yield* Effect.context<never>(), Console.Console, writer)
    // a line the loggers write to the patched console after all goes out as it is, not in a loop
    let logging = false
    const log = (level: LogLevel.Severity, message: string, annotations: Record<string, unknown>) => {
      logging = true
      try {
        Effect.runSyncWith(context)(Effect.annotateLogs(Effect.logWithLevel(level)(message), annotations))
      } finally {
        logging = false
      }
    }
    const replacedMethods = new Map<string, { readonly original: Printer; readonly printer: Printer }>()
    for (const [name, level] of Object.entries(consoleLevels)) {
      const original = methods[name]!
      const printer: Printer = (...args) => logging ? original.apply(console, args) : log(level, util.format(...args), { source: "console" })
      replacedMethods.set(name, { original, printer })
      methods[name] = printer
    }
    const onWarning = (warning: Error & { readonly code?: string; readonly detail?: string }) => {
      if (warning.name === "DeprecationWarning" && process.noDeprecation) return
      const detail = typeof warning.detail === "string" ? `\n${warning.detail}` : ""
      log("Warn", `${warning.name}: ${warning.message}${detail}`, { source: "warning", ...(warning.code === undefined ? {} : { code: warning.code }) })
    }
    const replacedListeners = nodeWarningPrinters()
    for (const listener of replacedListeners) process.removeListener("warning", listener)
    process.on("warning", onWarning)
    return { writer, methods, replacedMethods, replacedListeners, onWarning }
  }),
  ({ methods, onWarning, replacedListeners, replacedMethods }) =>
    Effect.sync(() => {
      process.removeListener("warning", onWarning)
      for (const listener of replacedListeners) process.on("warning", listener)
      // a method replaced again since is someone else's to restore
      for (const [name, { original, printer }] of replacedMethods) if (methods[name] === printer) methods[name] = original
    })
)

/**
 * The logger of `format` in place of Effect's default one, at `level` and above. The tracer's
 * logger stays: it records each line on the current span. Under `json`, what dependencies print
 * goes through it too (`printedAsLogs`), so that stdout holds JSON only.
 */
export const loggingLayer = (format: LogFormat, level: LogLevel.LogLevel): Layer.Layer<never> => {
  const logging = Layer.merge(
    Logger.layer([loggers[format], Logger.tracerLogger]),
    Layer.succeed(References.MinimumLogLevel, level)
  )
  return format === "json"
    ? Layer.effect(Console.Console, Effect.map(printedAsLogs, ({ writer }) => writer)).pipe(Layer.provideMerge(logging))
    : logging
}
