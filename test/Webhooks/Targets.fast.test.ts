/**
 * The webhook targets' address check (src/Webhooks/Targets.ts), as properties over the ways one
 * address is written: every loopback, private, link-local, unspecified, multicast and ULA address
 * is refused in IPv4, IPv6, IPv4-mapped (dotted and hex), IPv4-compatible, NAT64 and 6to4 forms;
 * public addresses pass in each form that reaches them.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { ipv6Groups, refusalOf } from "../../src/Webhooks/Targets.ts"
import { forAllSync } from "../support/Property.ts"

const octet = fc.integer({ min: 0, max: 255 })

/** IPv4 addresses of the refused ranges, each with its prefix. */
const refusedV4 = fc.oneof(
  fc.tuple(fc.constant(127), octet, octet, octet),
  fc.tuple(fc.constant(10), octet, octet, octet),
  fc.tuple(fc.constant(172), fc.integer({ min: 16, max: 31 }), octet, octet),
  fc.tuple(fc.constant(192), fc.constant(168), octet, octet),
  fc.tuple(fc.constant(169), fc.constant(254), octet, octet),
  fc.tuple(fc.constant(0), octet, octet, octet),
  fc.tuple(fc.constant(100), fc.integer({ min: 64, max: 127 }), octet, octet),
  fc.tuple(fc.integer({ min: 224, max: 255 }), octet, octet, octet)
)

/** Public IPv4 addresses: outside every refused range. */
const publicV4 = fc.tuple(fc.integer({ min: 1, max: 223 }), octet, octet, octet).filter(([a, b, c]) =>
  ![10, 127, 0].includes(a) &&
  !(a === 172 && b >= 16 && b <= 31) && !(a === 192 && b === 168) && !(a === 169 && b === 254) &&
  !(a === 100 && b >= 64 && b <= 127) && !(a === 192 && b === 0 && c === 0) && !(a === 198 && (b === 18 || b === 19))
)

const hex = (n: number) => n.toString(16)
const pad = (n: number) => n.toString(16).padStart(4, "0")

/** The forms one IPv4 address takes where an IPv6 address is expected, all reaching it. */
const v4Forms = ([a, b, c, d]: ReadonlyArray<number>) => [
  `${a}.${b}.${c}.${d}`,
  `::ffff:${a}.${b}.${c}.${d}`,
  `::ffff:${hex((a! << 8) | b!)}:${hex((c! << 8) | d!)}`,
  `0:0:0:0:0:ffff:${pad((a! << 8) | b!)}:${pad((c! << 8) | d!)}`,
  `::FFFF:${a}.${b}.${c}.${d}`,
  `64:ff9b::${a}.${b}.${c}.${d}`,
  `2002:${hex((a! << 8) | b!)}:${hex((c! << 8) | d!)}::1`
]

/** IPv6 addresses of refused ranges, written with and without `::` and in either case. */
const refusedV6 = fc.oneof(
  fc.constant("::1"),
  fc.constant("0:0:0:0:0:0:0:1"),
  fc.constant("::"),
  fc.integer({ min: 0xfc00, max: 0xfdff }).chain((first) => fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 7, maxLength: 7 }).map((rest) => [first, ...rest])),
  fc.integer({ min: 0xfe80, max: 0xfebf }).chain((first) => fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 7, maxLength: 7 }).map((rest) => [first, ...rest])),
  fc.integer({ min: 0xff00, max: 0xffff }).chain((first) => fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 7, maxLength: 7 }).map((rest) => [first, ...rest]))
).map((a) => (typeof a === "string" ? a : a.map(hex).join(":")))

describe("webhook target addresses", () => {
  it("every form of a refused IPv4 address is refused", () =>
    forAllSync([refusedV4], ([address]) => {
      for (const form of v4Forms(address)) expect(refusalOf(form), form).toBeDefined()
    }, { numRuns: 300 }))

  it("a public IPv4 address passes, plain and IPv4-mapped", () =>
    forAllSync([publicV4], ([address]) => {
      for (const form of v4Forms(address).slice(0, 5)) expect(refusalOf(form), form).toBeUndefined()
    }, { numRuns: 300 }))

  it("loopback, unspecified, unique local, link-local and multicast IPv6 addresses are refused, in any case", () =>
    forAllSync([refusedV6, fc.boolean()], ([address, upper]) => {
      const written = upper ? address.toUpperCase() : address
      expect(refusalOf(written), written).toBeDefined()
    }, { numRuns: 300 }))

  it("public IPv6 addresses pass; compressed and full forms read alike", () =>
    forAllSync([fc.integer({ min: 0x2000, max: 0x3fff }).filter((g) => g !== 0x2002), fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 7, maxLength: 7 })], ([first, rest]) => {
      const groups = [first, ...rest].filter((_, i) => !(first === 0x2001 && i === 1 && rest[0] === 0xdb8))
      if (groups.length !== 8) return
      const full = groups.map(hex).join(":")
      expect(ipv6Groups(full)).toEqual(groups)
      if (!(first === 0x2001 && rest[0] === 0xdb8)) expect(refusalOf(full), full).toBeUndefined()
    }, { numRuns: 300 }))

  it("what is no IP address is refused", () => {
    for (const text of ["localhost", "127.1", "1.2.3", "::ffff:999.1.1.1", "1:2:3:4:5:6:7:8:9", ""]) expect(refusalOf(text), text).toBeDefined()
  })
})
