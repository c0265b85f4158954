/**
 * The database going away, told apart from a failing statement and recorded as one event.
 *
 * A statement that fails because PostgreSQL cannot be reached (connection refused or reset, the
 * server shutting down or starting up, a connection that timed out) is an outage, not a bug: its
 * request is answered `503 database_unavailable` with `Retry-After`, and no stack trace is logged
 * for it. The first such failure logs the outage once; a probe then asks the database every half
 * second, and its first answer logs the end with a summary (how long, how many 503 answers).
 */
import { SqlClient } from "effect/sql"
import { isSqlError } from "effect/sql/SqlError"
import { Cause, Context, Effect, Layer, Option, Schedule } from "effect"

/** What a client is told to wait before trying again while the database is away. */
export const retryAfterSeconds = 5

/**
 * SQLSTATEs of an unreachable server: class 08 (connection exceptions), 57P01 (terminated by an
 * administrator: a fast shutdown), 57P02 (crash shutdown), 57P03 (cannot connect now: starting up
 * or recovering).
 */
const isOutageState = (code: string) => code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03"

/** Socket failures of the driver's connection. */
const outageErrnos = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"])

/** Words for a connection lost or never made (of the pg driver, kept for errors that carry them in a cause). */
const outageMessages = [
  "Connection terminated",
  "timeout exceeded when trying to connect",
  "timeout expired",
  "Client has encountered a connection error and is not queryable",
  "Client was closed and is not queryable"
]

/** Whether an error, or one it wraps, says the server cannot be reached. */
const isOutageError = (error: unknown, depth = 0): boolean => {
  if (typeof error !== "object" || error === null || depth > 4) return false
  const { code, message, cause, errors } = error as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown }
  if (typeof code === "string" && (outageErrnos.has(code) || (/^[0-9A-Z]{5}$/.test(code) && isOutageState(code)))) return true
  if (typeof message === "string" && outageMessages.some((m) => message.startsWith(m))) return true
  // a connection to "localhost" tries every address: Node reports them in an AggregateError
  if (Array.isArray(errors) && errors.some((e) => isOutageError(e, depth + 1))) return true
  return isOutageError(cause, depth + 1)
}

/**
 * Why the database is unreachable, when `error` is a failure of the driver (an SqlError) that
 * says it is: the innermost message, `connect ECONNREFUSED 127.0.0.1:5432` rather than
 * "PgConnection: Failed to connect". The driver classifies a lost or refused connection as a
 * `ConnectionError`; a server shutting down or starting up (57P0x) comes as another reason,
 * told by its SQLSTATE.
 */
export const unreachable = (error: unknown): Option.Option<string> =>
  isSqlError(error) && (error.reason._tag === "ConnectionError" || isOutageError(error.reason))
    ? Option.some(reasonOf(error))
    : Option.none()

/** Why the database was unreachable, when that is what a request's failure (or defect) shows. */
export const outageOf = (cause: Cause.Cause<unknown>): Option.Option<string> =>
  Option.firstSomeOf(
    cause.reasons.map((reason) =>
      Cause.isFailReason(reason) ? unreachable(reason.error) : Cause.isDieReason(reason) ? unreachable(reason.defect) : Option.none()
    )
  )

const reasonOf = (error: unknown): string => {
  let reason = String((error as { message?: unknown }).message ?? error)
  for (let e = (error as { cause?: unknown }).cause, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const message = (e as { message?: unknown }).message
    const errors = (e as { errors?: unknown }).errors
    if (typeof message === "string" && message !== "") reason = message
    else if (Array.isArray(errors) && errors.length > 0) reason = String(errors[0]?.message)
  }
  return reason
}

interface Outage {
  readonly since: number
  readonly reason: string
  answered: number
}

/** The current outage, if any: started by the first failure that shows one, ended by the probe. */
export class DatabaseOutages extends Context.Service<DatabaseOutages>()("DatabaseOutages", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const scope = yield* Effect.scope
    let current: Outage | undefined

    /**
     * Asks the database until it answers, then logs the outage's end. The first question waits
     * too: a pooled connection whose server process has not yet noticed its postmaster's death
     * could still answer, and end an outage that has only begun.
     */
    const watchUntilBack = (outage: Outage) =>
      sql`SELECT 1`.pipe(
        Effect.timeout("2 seconds"),
        // whatever fails, a defect included, asks again: an outage must not outlive its probe
        Effect.sandbox,
        Effect.retry(Schedule.spaced("500 millis")),
        Effect.delay("500 millis"),
        Effect.andThen(Effect.suspend(() => {
          current = undefined
          const seconds = ((Date.now() - outage.since) / 1000).toFixed(1)
          return Effect.logWarning(
            `database available again after ${seconds} s; ${outage.answered} request(s) were answered 503 database_unavailable`
          )
        }))
      )

    /** Records that the database is unreachable; the first report of an outage logs it and starts the probe. */
    const report = (reason: string) =>
      Effect.suspend(() => {
        if (current !== undefined) return Effect.void
        const outage: Outage = { since: Date.now(), reason, answered: 0 }
        current = outage
        return Effect.logError(`database unavailable (${reason}): answering 503 database_unavailable until it is back`).pipe(
          Effect.andThen(Effect.forkIn(watchUntilBack(outage), scope)),
          Effect.asVoid
        )
      })

    /** A request answered 503 because of the outage `reason` shows. */
    const answered = (reason: string) =>
      Effect.andThen(report(reason), Effect.sync(() => void (current !== undefined && current.answered++)))

    return {
      report,
      answered,
      /** Whether an outage is under way (its end not yet seen by the probe). */
      isDown: Effect.sync(() => current !== undefined)
    }
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
