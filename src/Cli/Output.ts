/**
 * What the CLI prints: results on stdout (human tables, or with `--json` the service's JSON), and
 * on stderr only notes, the upload's progress and the one line of a failure.
 */
import { Config, Context, Effect, Option, Schema } from "effect"
import { Flag } from "effect/cli"

/** A stream the CLI writes text to. */
export interface Sink {
  readonly write: (text: string) => unknown
  readonly isTTY?: boolean
}

/**
 * Where a run writes: the process's stdout and stderr, unless the CLI runs inside another process
 * (the tests call `run` of Commands.ts in theirs and collect what it writes).
 */
export class Streams extends Context.Reference<{ readonly stdout: Sink; readonly stderr: Sink }>("cli/Streams", {
  defaultValue: () => ({ stdout: process.stdout, stderr: process.stderr })
}) {}

const setting = (name: string) => Effect.map(Effect.orDie(Config.option(Config.NonEmptyString(name))), Option.getOrUndefined)

/**
 * Whether text written to `sink` may carry colour (ANSI escapes): never with NO_COLOR set to
 * anything or TERM=dumb, always with FORCE_COLOR set (but to 0 or false), else only on a
 * terminal. Read from the run's environment and its own stream, not the process's, so that
 * a run inside another process (the tests) decides as a child process would.
 */
export const canColor = (sink: Sink) =>
  Effect.gen(function*() {
    if ((yield* setting("NO_COLOR")) !== undefined || (yield* setting("TERM")) === "dumb") return false
    const force = (yield* setting("FORCE_COLOR"))?.toLowerCase()
    if (force !== undefined && force !== "0" && force !== "false") return true
    return sink.isTTY === true
  })

/** A line on stdout. */
export const print = (line: string) => Effect.flatMap(Streams, ({ stdout }) => Effect.sync(() => void stdout.write(line + "\n")))

/** A line on stderr. */
export const note = (line: string) => Effect.flatMap(Streams, ({ stderr }) => Effect.sync(() => void stderr.write(line + "\n")))

/**
 * A value as the service sent it: encoded back through the schema it was decoded with (dates as
 * ISO strings, absent fields absent), two-space indented.
 */
export const printJson = <A, I>(schema: Schema.Codec<A, I>, value: A) =>
  Effect.flatMap(Effect.orDie(Schema.encodeEffect(schema)(value)), (json) => print(JSON.stringify(json, null, 2)))

/** `--json`: the commands that print a table print `printJson` of the same value instead. */
export const jsonOption = Flag.Boolean("json").pipe(
  Flag.withoutNegation,
  Flag.withDescription("Print the JSON the service returned instead of a table"),
  Flag.withDefault(false)
)

/** Cells longer than this are cut short in tables. */
const maxCell = 60

const cell = (value: string) => {
  const flat = value.replace(/\s+/g, " ").trim()
  return flat.length > maxCell ? flat.slice(0, maxCell - 1) + "…" : flat
}

/** Rows under a header, columns padded to their widest cell; the last column is not padded. */
export const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const lines = [header, ...rows].map((row) => row.map(cell))
  const widths = header.map((_, i) => Math.max(...lines.map((row) => (row[i] ?? "").length)))
  return lines
    .map((row) => row.map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i]!))).join("  ").trimEnd())
    .join("\n")
}

/** `key  value` lines, keys padded; empty values left out. */
export const fields = (pairs: ReadonlyArray<readonly [string, string | undefined]>): string => {
  const shown = pairs.filter((p): p is readonly [string, string] => p[1] !== undefined && p[1] !== "")
  const width = Math.max(0, ...shown.map(([key]) => key.length))
  return shown.map(([key, value]) => `${key.padEnd(width)}  ${value}`).join("\n")
}

/** `NodeVersionStatusActive` -> `Active`. */
export const shortStatus = (status: string) => status.replace(/^(NodeVersionStatus|NodeStatus|PublisherStatus)/, "")

/** A date as `2024-05-01`. */
export const day = (date: Date | undefined) => (date === undefined ? "" : date.toISOString().slice(0, 10))

/** A byte count for people: `512 B`, `1.5 KiB`, `12.0 MiB`. */
export const bytes = (n: number): string => {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"]
  let value = n
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return unit === 0 ? `${n} B` : `${value.toFixed(1)} ${units[unit]}`
}

/** One frame of a progress bar: `uploading [#########-----------]  45%  1.2 MiB / 2.6 MiB`. */
export const progressLine = (label: string, sent: number, total: number, width = 30): string => {
  const fraction = total <= 0 ? 1 : Math.min(1, sent / total)
  const filled = Math.round(fraction * width)
  const percent = `${Math.floor(fraction * 100)}%`.padStart(4)
  return `${label} [${"#".repeat(filled)}${"-".repeat(width - filled)}] ${percent}  ${bytes(sent)} / ${bytes(total)}`
}

export interface Progress {
  readonly onProgress: (sent: number, total: number) => void
  /** Ends the bar (a newline on a terminal, one summary line otherwise). */
  readonly done: Effect.Effect<void>
}

/**
 * Progress on stderr: a bar redrawn in place when stderr is a terminal (at most once per percent),
 * otherwise a single line once the transfer is complete, so logs stay readable.
 */
export const progress = (label: string) => Effect.map(Streams, ({ stderr }) => progressOn(label, stderr))

const progressOn = (label: string, stderr: Sink): Progress => {
  const isTerminal = stderr.isTTY === true
  let last = -1
  let latest = { sent: 0, total: 0 }
  return {
    onProgress: (sent, total) => {
      latest = { sent, total }
      if (!isTerminal) return
      const percent = total <= 0 ? 100 : Math.floor((sent / total) * 100)
      if (percent === last) return
      last = percent
      stderr.write(`\r${progressLine(label, sent, total)}`)
    },
    done: Effect.sync(() => {
      if (isTerminal) {
        if (last >= 0) stderr.write("\n")
      } else {
        stderr.write(`${label}: ${bytes(latest.sent)} sent\n`)
      }
    })
  }
}
