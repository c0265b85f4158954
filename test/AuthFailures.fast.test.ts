/**
 * The failure windows of src/Auth/Failures.ts against random sequences of attempts from a few
 * addresses: no address is refused unless it failed `limit` times in the last window, none gets
 * more than `limit` failures verified in a window, a refusal's Retry-After ends within the window
 * and an attempt after it is admitted, successes are given back, and the table stays bounded.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "effect/FastCheck"
import { makeFailureWindows, TooManyFailures } from "../src/Auth/Failures.ts"

const limit = 3
const windowMillis = 1_000

interface Step {
  readonly address: string
  /** Milliseconds since the previous step. */
  readonly advance: number
  readonly outcome: "fail" | "succeed"
}

const step: fc.Arbitrary<Step> = fc.record({
  address: fc.constantFrom("a", "b", "c"),
  advance: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1_500 })),
  outcome: fc.constantFrom("fail", "fail", "succeed")
})

describe("failure windows", () => {
  it.prop("refuse only after `limit` failures in the last window, and never verify more than `limit` in one", [fc.array(step, { maxLength: 80 })], ([steps]) => {
    const windows = makeFailureWindows({ limit, windowMillis, maxAddresses: 100 })
    const failures = new Map<string, Array<number>>()
    const refusedUntil = new Map<string, number>()
    let now = 0
    for (const s of steps) {
      now += s.advance
      const mine = failures.get(s.address) ?? []
      const recent = mine.filter((t) => now - t < windowMillis)
      const admitted = windows.admit(s.address, now)
      const until = refusedUntil.get(s.address)
      if (admitted instanceof TooManyFailures) {
        // once a refusal's Retry-After has passed, the address is admitted
        if (until !== undefined && now >= until) expect.fail(`refused at ${now}, after the Retry-After of ${until}`)
        expect(recent.length).toBeGreaterThanOrEqual(limit)
        expect(admitted.retryAfterSeconds).toBeGreaterThan(0)
        expect(admitted.retryAfterSeconds).toBeLessThanOrEqual(windowMillis / 1000)
        refusedUntil.set(s.address, now + admitted.retryAfterSeconds * 1000)
        continue
      }
      // a refusal holds until its Retry-After
      if (until !== undefined && now < until) expect.fail(`admitted at ${now}, refused until ${until}`)
      if (s.outcome === "succeed") admitted.giveBack()
      else failures.set(s.address, [...mine, now])
    }
    // the failures admitted within any window's span: at most `limit` per fixed window, so at most
    // twice that in a span straddling two
    for (const times of failures.values()) {
      for (const t of times) expect(times.filter((u) => u >= t && u - t < windowMillis).length).toBeLessThanOrEqual(2 * limit)
    }
  })

  it.prop("a burst at one instant verifies exactly the limit's worth", [fc.integer({ min: 0, max: 20 })], ([n]) => {
    const windows = makeFailureWindows({ limit, windowMillis, maxAddresses: 100 })
    const answers = Array.from({ length: n }, () => windows.admit("a", 0))
    expect(answers.filter((a) => !(a instanceof TooManyFailures)).length).toBe(Math.min(n, limit))
  })

  it.prop("remembers at most `maxAddresses`, forgetting the least recently failing first", [fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 200 })], ([addresses]) => {
    const windows = makeFailureWindows({ limit, windowMillis, maxAddresses: 10 })
    for (const a of addresses) windows.admit(`10.0.0.${a}`, 0)
    expect(windows.size()).toBeLessThanOrEqual(10)
    // the last one to fail is still counted
    const last = addresses.at(-1)
    if (last !== undefined) {
      for (let i = 0; i < limit; i++) windows.admit(`10.0.0.${last}`, 0)
      expect(windows.admit(`10.0.0.${last}`, 0)).toBeInstanceOf(TooManyFailures)
    }
  })
})
