/**
 * Transactions that lost to a concurrent one (Db/Conflicts.ts): a deadlock or serialization
 * failure, and a LockRace, run again a bounded number of times; any other failure does not; one
 * that persists becomes a defect that the error funnel answers 503 with Retry-After, not 500.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Option } from "effect"
import { SqlError, UnknownError } from "effect/sql/SqlError"
import * as fc from "fast-check"
import { isConflict, LockRace, persistedConflict, retryConflicts } from "../../src/Db/Conflicts.ts"
import { DatabaseOutages } from "../../src/Db/Outages.ts"
import { respondToCause } from "../../src/Http/Failures.ts"
import { forAllSync } from "../support/Property.ts"

const sqlError = (code: string) =>
  new SqlError({
    reason: new UnknownError({ cause: Object.assign(new Error(`from the server (${code})`), { code }), message: "Failed to execute statement" })
  })

/** A transaction that fails with `failures` in turn, then succeeds; counts its runs. */
const flaky = (failures: ReadonlyArray<unknown>) => {
  let runs = 0
  const effect = Effect.suspend(() => {
    const failure = failures[runs++]
    return failure === undefined ? Effect.succeed("committed") : Effect.fail(failure)
  })
  return { effect, runs: () => runs }
}

describe("conflicting transactions", () => {
  it("deadlocks and serialization failures are conflicts; other SQLSTATEs are not", () => forAllSync([
    fc.constantFrom("40001", "40P01"),
    fc.stringMatching(/^[0-9A-Z]{5}$/).filter((code) => code !== "40001" && code !== "40P01")
  ], ([conflict, other]) => {
    expect(isConflict(sqlError(conflict))).toBe(true)
    expect(isConflict(sqlError(other))).toBe(false)
    expect(isConflict(new LockRace({ what: "A node" }))).toBe(true)
    expect(isConflict(new Error("40P01"))).toBe(false)
  }))

  it.live("a transaction that lost runs again until it commits", () =>
    Effect.gen(function*() {
      const t = flaky([sqlError("40P01"), sqlError("40001"), new LockRace({ what: "A node" })])
      expect(yield* retryConflicts(t.effect)).toBe("committed")
      expect(t.runs()).toBe(4)
    }))

  it.live("any other failure is not run again", () =>
    Effect.gen(function*() {
      const t = flaky([sqlError("23505")])
      const exit = yield* Effect.exit(retryConflicts(t.effect))
      expect(Exit.isFailure(exit)).toBe(true)
      expect(t.runs()).toBe(1)
    }))

  it.live("a conflict that persists stops after five runs; a LockRace then becomes a defect", () =>
    Effect.gen(function*() {
      const deadlocks = flaky(Array(10).fill(sqlError("40P01")))
      const failed = yield* Effect.exit(retryConflicts(deadlocks.effect))
      expect(deadlocks.runs()).toBe(5)
      expect(Exit.isFailure(failed) && Option.isSome(Cause.findErrorOption(failed.cause))).toBe(true)

      const races = flaky(Array(10).fill(new LockRace({ what: "A node" })))
      const died = yield* Effect.exit(retryConflicts(races.effect))
      expect(races.runs()).toBe(5)
      expect(Exit.isFailure(died) && persistedConflict(died.cause.reasons.filter(Cause.isDieReason).map((reason) => reason.defect))).toBe(true)
    }))

  it.effect("a persisting conflict is answered 503 database_unavailable with Retry-After, not 500", () =>
    Effect.gen(function*() {
      const respond = respondToCause(() => [])
      for (const defect of [sqlError("40P01"), sqlError("40001"), new LockRace({ what: "A node" })]) {
        const response = yield* respond(Cause.die(defect)).pipe(
          Effect.provideService(DatabaseOutages, {} as DatabaseOutages["Service"])
        )
        expect(response.status).toBe(503)
        expect(response.headers["retry-after"]).toBe("1")
        const body = JSON.parse(new TextDecoder().decode((response.body as { body: Uint8Array }).body))
        expect(body.error).toBe("database_unavailable")
      }
      const bug = yield* respond(Cause.die(sqlError("42P01"))).pipe(Effect.provideService(DatabaseOutages, {} as DatabaseOutages["Service"]))
      expect(bug.status).toBe(500)
    }))
})
