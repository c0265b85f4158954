/**
 * Waiting for what another connection tells the service. A catalogue change reaches every
 * instance's list cache by NOTIFY, a moment after the write commits (and a test's own direct
 * writes notify the service that way too), so a test reads until the expectation holds, for at
 * most a second: the bound is the test's, the service keeps no TTL.
 */
import { Effect } from "effect"
import { sendText } from "./Http.ts"
import type { Running } from "./Service.ts"

/**
 * Reads until `holds`, for at most `withinMillis`, every `everyMillis`; answers the last value read
 * and the time it took.
 */
export const eventually = <A, E, R>(read: Effect.Effect<A, E, R>, holds: (a: A) => boolean, withinMillis = 1000, everyMillis = 10) =>
  Effect.gen(function*() {
    const started = Date.now()
    let value = yield* read
    while (!holds(value) && Date.now() - started < withinMillis) {
      yield* Effect.sleep(everyMillis)
      value = yield* read
    }
    return { value, millis: Date.now() - started }
  })

/**
 * Reads a cached page until the cache answers it, and answers the `x-cache` header last seen
 * ("hit" unless it never was). A notification still on its way when the page was first read
 * drops it once more, which is the cache being right, not wrong.
 */
export const cacheOf = (service: Running, pathAndQuery: string) =>
  Effect.map(
    eventually(sendText(service, "GET", pathAndQuery), (answer) => answer.headers.get("x-cache") === "hit"),
    ({ value }) => value.headers.get("x-cache")
  )
