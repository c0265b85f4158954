/**
 * Which failures of the driver are an outage (answered 503 database_unavailable, logged once) and
 * which are a failing statement (answered 500, logged with its cause): the shapes below are those
 * @effect/sql-pg's SqlError wraps, from pg and pg-pool.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Option } from "effect"
import { SqlError, UnknownError } from "effect/sql/SqlError"
import * as fc from "fast-check"
import { outageOf, unreachable } from "../../src/Db/Outages.ts"
import { forAllSync } from "../support/Property.ts"

const pgError = (code: string, message = "from the server") => Object.assign(new Error(message), { code, severity: "FATAL" })
const sqlError = (cause: unknown, message = "Failed to execute statement") => new SqlError({ reason: new UnknownError({ cause, message }) })

const sqlState = (classes: ReadonlyArray<string>) =>
  fc.tuple(fc.constantFrom(...classes), fc.stringMatching(/^[0-9A-Z]{3}$/)).map(([c, rest]) => c + rest)

describe("database outages", () => {
  it("tells an unreachable server from a failing statement", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED", errno: -111 })
    const outages = [
      sqlError(refused, "Failed to acquire connection"),
      sqlError(Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" })),
      sqlError(new Error("Connection terminated unexpectedly")),
      sqlError(new Error("timeout exceeded when trying to connect"), "Failed to acquire connection"),
      sqlError(new Error("Connection terminated due to connection timeout", { cause: new Error("timeout expired") })),
      sqlError(new Error("Client has encountered a connection error and is not queryable")),
      sqlError(pgError("57P01", "terminating connection due to administrator command")),
      sqlError(pgError("57P02", "terminating connection because of crash of another server process")),
      sqlError(pgError("57P03", "the database system is starting up")),
      sqlError(pgError("08006", "connection failure")),
      // "localhost" tries each of its addresses: Node gathers their failures, with no message of its own
      sqlError(Object.assign(new AggregateError([refused], ""), { code: "ECONNREFUSED" }), "Failed to acquire connection")
    ]
    for (const error of outages) expect(Option.isSome(unreachable(error)), String(error.cause)).toBe(true)
    expect(unreachable(outages[0])).toEqual(Option.some("connect ECONNREFUSED 127.0.0.1:5432"))
    expect(unreachable(outages.at(-1))).toEqual(Option.some("connect ECONNREFUSED 127.0.0.1:5432"))

    const statements = [
      sqlError(pgError("23505", "duplicate key value violates unique constraint")),
      sqlError(pgError("42P01", "relation does not exist")),
      sqlError(pgError("57014", "canceling statement due to user request")),
      new Error("Connection terminated unexpectedly"), // not the driver's: a bug of ours
      undefined
    ]
    for (const error of statements) expect(unreachable(error), String(error)).toEqual(Option.none())
  })

  it("finds the outage in a request's cause, failed or died with, beside other failures", () => {
    const lost = sqlError(new Error("Connection terminated unexpectedly"))
    expect(outageOf(Cause.die(lost))).toEqual(Option.some("Connection terminated unexpectedly"))
    expect(outageOf(Cause.combine(Cause.fail("rolled back"), Cause.die(lost)))).toEqual(Option.some("Connection terminated unexpectedly"))
    expect(outageOf(Cause.die(sqlError(pgError("22P02"))))).toEqual(Option.none())
    expect(outageOf(Cause.interrupt())).toEqual(Option.none())
  })

  it("every SQLSTATE of class 08 is an outage, none of the statement classes is", () => forAllSync([
    sqlState(["08"]),
    sqlState(["22", "23", "25", "40", "42", "53", "54", "P0", "XX"])
  ], ([connection, statement]) => {
    expect(Option.isSome(unreachable(sqlError(pgError(connection))))).toBe(true)
    expect(Option.isNone(unreachable(sqlError(pgError(statement))))).toBe(true)
  }))
})
