/**
 * The embedded PostgreSQL's supervisor (issue 12, finding 3), over a stub server and TestClock:
 * a dead postmaster is reported as an outage and restarted, and restarts that fail are tried
 * again after 0.5 s, doubling up to 10 s.
 */
import { expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { supervise } from "../../src/Db/Database.ts"
import type { EmbeddedServer } from "../../src/Db/Embedded.ts"
import { DatabaseOutages } from "../../src/Db/Outages.ts"

/** A server whose postmaster is dead from the start and whose first `failures` restarts fail. */
const dyingServer = (failures: number) => {
  const seen = { restarts: 0, alive: false }
  const server: EmbeddedServer = {
    url: "postgres://stub",
    port: 5432,
    running: () => Promise.resolve(seen.alive),
    restart: () => {
      seen.restarts++
      if (seen.restarts <= failures) return Promise.reject(new Error(`restart ${seen.restarts} failed`))
      seen.alive = true
      return Promise.resolve()
    },
    stop: () => Promise.resolve()
  }
  return { server, seen }
}

/** Lets the promises the supervisor awaits settle: they resolve outside the fiber, on the event loop. */
const settle = Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))

it.effect("a dead server is reported once and restarted; failed restarts wait 0.5, 1, 2, 4, 8 s, then 10 s at most", () =>
  Effect.gen(function*() {
    const reports: Array<string> = []
    const outages = Layer.succeed(DatabaseOutages, DatabaseOutages.of({
      report: (reason) => Effect.sync(() => void reports.push(reason)),
      answered: () => Effect.succeed(undefined),
      isDown: Effect.succeed(false)
    }))
    const { server, seen } = dyingServer(7)
    yield* Effect.forkScoped(Effect.provide(supervise(server), outages))
    yield* settle
    expect(reports).toEqual(["the embedded PostgreSQL server exited"])
    expect(seen.restarts).toBe(1)

    // the waits after each failed restart, and the attempt each one leads to
    for (const [wait, attempt] of [[500, 2], [1_000, 3], [2_000, 4], [4_000, 5], [8_000, 6], [10_000, 7], [10_000, 8]] as const) {
      yield* TestClock.adjust(wait - 1)
      yield* settle
      expect(seen.restarts, `just before attempt ${attempt}`).toBe(attempt - 1)
      yield* TestClock.adjust(1)
      yield* settle
      expect(seen.restarts, `attempt ${attempt}, after ${wait} ms`).toBe(attempt)
    }
    // the eighth restart succeeded: the server is watched again, and not restarted while it runs
    expect(seen.alive).toBe(true)
    yield* TestClock.adjust(60_000)
    yield* settle
    expect(seen.restarts).toBe(8)
    expect(reports).toHaveLength(1)
  }))
