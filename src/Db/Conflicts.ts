/**
 * Transactions that lost to a concurrent one, retried inside the service.
 *
 * Writers take their row locks in one order (Catalog/Changes.ts, "Lock order"), so no cycle of
 * waits should form between them; PostgreSQL still breaks any that does (SQLSTATE 40P01,
 * deadlock detected) by failing one transaction, and a transaction at a stricter isolation level
 * fails with 40001 (serialization failure). Both leave nothing behind and are safe to run again:
 * PostgreSQL's documentation asks applications to retry them. `retryConflicts` does so a bounded
 * number of times with jitter; a conflict that persists is answered `503` with `Retry-After`
 * (Http/Failures.ts), never `500`.
 */
import { isSqlError } from "effect/sql/SqlError"
import { Data, Effect, Schedule } from "effect"
import { sqlState } from "./Rows.ts"

/** SQLSTATEs of a transaction that lost to another and may simply be run again. */
const conflictStates: ReadonlySet<string | undefined> = new Set(["40001", "40P01"])

/**
 * A transaction found a row moved under it between two of its locks (a node claimed by another
 * publisher after its publisher was locked): run it again, like a deadlock.
 */
export class LockRace extends Data.TaggedError("LockRace")<{ readonly what: string }> {
  override get message() {
    return `${this.what} changed while its locks were taken`
  }
}

/** Whether `error` (a failure or a defect) is a conflict that running the transaction again resolves. */
export const isConflict = (error: unknown): boolean =>
  error instanceof LockRace ||
  // the driver classifies them as SerializationError and DeadlockError
  (isSqlError(error) && conflictStates.has(sqlState(error)))

/** What a client is told to wait when a conflict persisted through every retry. */
export const conflictRetryAfterSeconds = 1

/**
 * Runs of a transaction at most: the first and four retries, about 10, 20, 40 and 80 ms apart
 * (each jittered between 0.8 and 1.2 times), so that two transactions that collided do not
 * collide again in step.
 */
const retries = Schedule.exponential("10 millis").pipe(Schedule.jittered, Schedule.upTo({ times: 4 }))

/**
 * Runs `transaction` again when it lost to a concurrent one. It must be a whole transaction (or
 * one statement outside any): a retry inside a transaction would find it aborted. A LockRace that
 * persists becomes a defect, as a database error does in the repositories.
 */
export const retryConflicts = <A, E, R>(transaction: Effect.Effect<A, E, R>) =>
  Effect.retry(transaction, { schedule: retries, while: isConflict }).pipe(
    Effect.catchIf((e): e is Extract<E, LockRace> => e instanceof LockRace, Effect.die, Effect.fail)
  )

/** A conflict that persisted (it ends as a defect: the repositories die on database errors). */
export const persistedConflict = (defects: Iterable<unknown>): boolean => {
  for (const defect of defects) if (isConflict(defect)) return true
  return false
}
