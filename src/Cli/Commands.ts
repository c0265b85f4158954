/**
 * The command tree and how a run ends: every failure, whatever raised it, becomes one line on
 * stderr (`error: <code>: <message>`) and the exit code of its kind (Failure.ts).
 */
import { Command, HelpDoc } from "@effect/cli"
import * as Span from "@effect/cli/HelpDoc/Span"
import { Cause, Console, Effect, Option } from "effect"
import { login, publisher, token } from "./Account.ts"
import { nodes, search, versions } from "./Browse.ts"
import { exitCodeMeanings, exitCodes, formatReport, reportOf, exitCodeOf } from "./Failure.ts"
import { install } from "./Install.ts"
import { note } from "./Output.ts"
import { publish } from "./Publish.ts"

export const root = Command.make("registry").pipe(
  Command.withDescription("Publish, find and install extension nodes of the registry"),
  Command.withSubcommands([login, publisher, token, publish, install, search, versions, nodes])
)

const exitCodeHelp = HelpDoc.sequence(
  HelpDoc.h1("EXIT CODES"),
  HelpDoc.descriptionList(
    exitCodeMeanings.map(([code, meaning]) => [Span.text(String(code)), HelpDoc.p(meaning)] as [Span.Span, HelpDoc.HelpDoc]) as [
      [Span.Span, HelpDoc.HelpDoc],
      ...Array<[Span.Span, HelpDoc.HelpDoc]>
    ]
  )
)

const cli = Command.run(root, {
  name: "registry",
  version: "0.1.0",
  executable: "registry",
  footer: exitCodeHelp
})

/**
 * @effect/cli prints its own parse failures as a help document on stderr before failing; the
 * failure is printed here instead, as the one line every failure gets.
 */
const withoutCliErrorOutput = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Console.consoleWith((console) => Console.withConsole(effect, { ...console, error: () => Effect.void }))

/** Runs the CLI on `argv` (as `process.argv`): the exit code. */
export const run = (argv: ReadonlyArray<string>) =>
  withoutCliErrorOutput(cli(argv)).pipe(
    Effect.as(exitCodes.ok),
    Effect.catchAllCause((cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.succeed(130)
      const failure = Cause.failureOption(cause)
      const report = reportOf(Option.isSome(failure) ? failure.value : Cause.squash(cause))
      return Effect.as(note(formatReport(report)), exitCodeOf(report))
    })
  )
