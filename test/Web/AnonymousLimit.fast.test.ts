/**
 * The anonymous reads' limit without a service (issue 30, item 6): the windows' arithmetic on an
 * injected clock, their counting against a model for random sequences of reads, the table's bound
 * under a flood of addresses, and the address an IPv6 client is counted under (its /64).
 */
import { expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { addressKey, makeWindows } from "../../src/Http/ClientAddress.ts"
import { limitField, policyField } from "../../src/Domain/RateLimit.ts"
import { forAllSync } from "../support/Property.ts"

const minute = 60_000

it("a window opens with an address's first read, counts to its end, and a read at its end opens the next", () => {
  const windows = makeWindows({ windowMillis: minute, maxAddresses: 10 })
  expect(windows.count("a", 1_000)).toEqual({ started: 1_000, count: 1 })
  expect(windows.count("a", 30_000)).toEqual({ started: 1_000, count: 2 })
  expect(windows.count("a", 1_000 + minute - 1)).toEqual({ started: 1_000, count: 3 })
  // another address has a window of its own
  expect(windows.count("b", 2_000)).toEqual({ started: 2_000, count: 1 })
  expect(windows.count("a", 1_000 + minute)).toEqual({ started: 1_000 + minute, count: 1 })
  // long after, a fresh window, not one aligned to the old
  expect(windows.count("b", 10 * minute + 7)).toEqual({ started: 10 * minute + 7, count: 1 })
})

it("windows that are over are forgotten as new ones open, so quiet addresses take no room", () => {
  const windows = makeWindows({ windowMillis: minute, maxAddresses: 1_000 })
  for (let i = 0; i < 100; i++) windows.count(`old-${i}`, i)
  expect(windows.size()).toBe(100)
  windows.count("new", minute + 100)
  expect(windows.size()).toBe(1)
})

it("a flood of distinct addresses keeps the table at its bound; the oldest window is forgotten first", () => {
  const windows = makeWindows({ windowMillis: minute, maxAddresses: 50 })
  windows.count("first", 0)
  windows.count("first", 0)
  for (let i = 0; i < 10_000; i++) expect(windows.count(`flood-${i}`, 1 + i % 1_000).count).toBe(1)
  expect(windows.size()).toBe(50)
  // forgotten: it starts afresh (the bound errs towards letting reads through)
  expect(windows.count("first", 2_000).count).toBe(1)
})

/** Reads: an address among a few, and the milliseconds since the read before. */
const reads = fc.array(fc.tuple(fc.constantFrom("a", "b", "c", "d", "e"), fc.integer({ min: 0, max: 25_000 })), { maxLength: 200 })

/** Each read in turn: its address, its time, and the times of all its address's reads so far. */
function* replay(steps: ReadonlyArray<readonly [string, number]>) {
  const times = new Map<string, Array<number>>()
  let now = 0
  for (const [address, gap] of steps) {
    now += gap
    const own = [...(times.get(address) ?? []), now]
    times.set(address, own)
    yield { address, now, own }
  }
}

it("the count of each read is the model's: reads of its address since the window it falls in opened", () =>
  forAllSync({ reads, windowMillis: fc.integer({ min: 1, max: minute }) }, ({ reads, windowMillis }) => {
    const windows = makeWindows({ windowMillis, maxAddresses: 5 })
    // the model: per address, all its reads' times; a window opens at the first read at or after the last one's end
    for (const { address, now, own } of replay(reads)) {
      let started = own[0]!
      for (const t of own) if (t - started >= windowMillis) started = t
      const expected = own.filter((t) => t >= started).length
      const window = windows.count(address, now)
      expect(window).toEqual({ started, count: expected })
      expect(windows.size()).toBeLessThanOrEqual(5)
    }
  }))

it("with fewer places than addresses, the table stays within its bound and a read's count is at most its address's reads in the last window", () =>
  forAllSync({ reads, places: fc.integer({ min: 1, max: 4 }) }, ({ places, reads }) => {
    const windows = makeWindows({ windowMillis: minute, maxAddresses: places })
    for (const { address, now, own } of replay(reads)) {
      const count = windows.count(address, now).count
      expect(count).toBeGreaterThanOrEqual(1)
      expect(count).toBeLessThanOrEqual(own.filter((t) => t > now - minute).length)
      expect(windows.size()).toBeLessThanOrEqual(places)
    }
  }))

it("the fields of the anonymous policy: a named item with quota, unit and window; what is left never below 0", () =>
  forAllSync({
    quota: fc.integer({ min: 1, max: 1_000_000 }),
    remaining: fc.integer({ min: -1_000, max: 1_000_000 }),
    reset: fc.double({ min: 0, max: 60, noNaN: true })
  }, ({ quota, remaining, reset }) => {
    const policy = { name: "anonymous", quota, unit: "requests", windowSeconds: 60 } as const
    expect(policyField(policy)).toBe(`"anonymous";q=${quota};qu="requests";w=60`)
    expect(limitField(policy, remaining, reset)).toBe(`"anonymous";r=${Math.max(0, remaining)};t=${Math.ceil(reset)}`)
  }))

const group = fc.integer({ min: 0, max: 0xffff }).map((n) => n.toString(16))
const groups = (n: number) => fc.array(group, { minLength: n, maxLength: n })

it("IPv6 addresses count by their /64, however written; IPv4 (and IPv4-mapped) by themselves", () =>
  forAllSync({ prefix: groups(4), a: groups(4), b: groups(4), other: groups(4) }, ({ a, b, other, prefix }) => {
    const full = (g: ReadonlyArray<string>) => [...prefix, ...g].join(":")
    expect(addressKey(full(a))).toBe(addressKey(full(b)))
    expect(addressKey(full(a)).endsWith("::/64")).toBe(true)
    // an upper-case, zero-padded, zoned spelling is the same client
    expect(addressKey(`${[...prefix, ...a].map((g) => g.padStart(4, "0").toUpperCase()).join(":")}%eth0`)).toBe(addressKey(full(a)))
    const differs = other.join(":") !== prefix.map((g) => parseInt(g, 16).toString(16)).join(":")
    expect(addressKey([...other, ...a].join(":")) !== addressKey(full(a))).toBe(differs)
  }))

it("compressed IPv6 forms expand before the /64 is taken", () => {
  expect(addressKey("2001:db8::1")).toBe("2001:db8:0:0::/64")
  expect(addressKey("2001:db8:0:0:ffff::2")).toBe("2001:db8:0:0::/64")
  expect(addressKey("2001:db8:1::")).toBe("2001:db8:1:0::/64")
  expect(addressKey("::1")).toBe("0:0:0:0::/64")
  expect(addressKey("64:ff9b::192.0.2.1")).toBe("64:ff9b:0:0::/64")
  expect(addressKey("::ffff:127.0.0.2")).toBe("127.0.0.2")
  expect(addressKey("203.0.113.9")).toBe("203.0.113.9")
  // not an address: stands for itself
  expect(addressKey("unknown")).toBe("unknown")
  expect(addressKey("1:2:3")).toBe("1:2:3")
})
