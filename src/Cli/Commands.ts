/**
 * The command tree and how a run ends: every failure, whatever raised it, becomes one line on
 * stderr (`error: <code>: <message>`) and the exit code of its kind (Failure.ts).
 */
import { Cause, Effect, Option } from "effect"
import { CliError, CliOutput, Command, type HelpDoc, TerminalCapabilities } from "effect/cli"
import { login, publisher, token } from "./Account.ts"
import { nodes, search, versions } from "./Browse.ts"
import { exitCodeMeanings, exitCodeOf, exitCodes, formatReport, reportOf } from "./Failure.ts"
import { install } from "./Install.ts"
import { canColor, note, print, Streams } from "./Output.ts"
import { publish } from "./Publish.ts"

export const root = Command.make("registry").pipe(
  Command.withDescription("Publish, find and install extension nodes of the registry"),
  Command.withSubcommands([login, publisher, token, publish, install, search, versions, nodes])
)

const version = "0.1.0"

/** The table of exit codes, printed after every help page. */
const exitCodeSection = (bold: (text: string) => string) => {
  const width = Math.max(...exitCodeMeanings.map(([code]) => String(code).length))
  return [
    bold("EXIT CODES"),
    ...exitCodeMeanings.map(([code, meaning]) => `  ${String(code).padEnd(width)}  ${meaning}`)
  ].join("\n")
}

/** A help page as the CLI prints it: the parser's page, then the exit codes. */
const helpPage = (doc: HelpDoc.HelpDoc, colors: boolean) => {
  const formatter = CliOutput.defaultFormatter({ colors })
  const bold = colors ? (text: string) => `\x1b[1m${text}\x1b[0m` : (text: string) => text
  return `${formatter.formatHelpDoc(doc)}\n\n${exitCodeSection(bold)}`
}

/**
 * What the parser shows: help pages and the version on stdout. A bad invocation shows nothing
 * here: its failure reaches `run`, which prints it as the one line every failure gets.
 */
const presenter: CliOutput.Presenter = {
  present: (event) =>
    Effect.gen(function*() {
      switch (event._tag) {
        case "Help": {
          const { canColor } = yield* TerminalCapabilities.TerminalCapabilities
          return yield* print(helpPage(event.helpDoc, canColor))
        }
        case "Version":
          return yield* print(event.version)
        case "InvalidInvocation":
          return
      }
    })
}

const cli = Command.runWith(root, { version })

/** Help shown because a command that only groups others was named alone: not a failure. */
const isPlainHelp = (error: unknown) => CliError.isCliError(error) && error._tag === "ShowHelp" && error.errors.length === 0

/**
 * The parser's colours follow stdout and the environment of this run (Output.ts `canColor`)
 * rather than its default, which looks at the process's stdout and environment once.
 */
const withColorOfStdout = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const { stdout } = yield* Streams
    const capabilities = yield* TerminalCapabilities.TerminalCapabilities
    const color = yield* canColor(stdout)
    return yield* Effect.provideService(effect, TerminalCapabilities.TerminalCapabilities, { ...capabilities, canColor: color })
  })

/** Runs the CLI on `argv` (as `process.argv`): the exit code. */
export const run = (argv: ReadonlyArray<string>) =>
  cli(argv.slice(2)).pipe(
    Effect.provideService(CliOutput.Presenter, presenter),
    withColorOfStdout,
    Effect.as(exitCodes.ok),
    Effect.catchCause((cause) => {
      if (Cause.hasInterruptsOnly(cause)) return Effect.succeed(130)
      const failure = Cause.findErrorOption(cause)
      const error = Option.isSome(failure) ? failure.value : Cause.squash(cause)
      if (isPlainHelp(error)) return Effect.succeed(exitCodes.ok)
      const report = reportOf(error)
      return Effect.as(note(formatReport(report)), exitCodeOf(report))
    })
  )
