import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import semver from "semver"
import { type HostInterval, hostIntervals, semverKey } from "../../src/Domain/Semver.ts"
import { forAllSync } from "../support/Property.ts"

const MAX = Number.MAX_SAFE_INTEGER

// --- generators -------------------------------------------------------------

const num = fc.oneof(
  fc.constantFrom(0, 1, 9, 10, 99, 100, 999, 1000, MAX - 1, MAX),
  fc.nat(20),
  fc.maxSafeNat()
)
const idChar = fc.constantFrom(..."-0189aAbzZ")
const alnumId = fc.string({ unit: idChar, minLength: 1, maxLength: 4 }).filter((s) => !/^[0-9]+$/.test(s))
// a small pool of identifiers that are prefixes of each other, contain hyphens or start with digits
const pooledId = fc.constantFrom("0", "1", "2", "10", "alpha", "alpha-", "alpha-1", "alphab", "a", "a-", "A", "-", "0a", "beta")
const preId = fc.oneof({ weight: 3, arbitrary: pooledId }, { weight: 1, arbitrary: num.map(String) }, { weight: 1, arbitrary: alnumId })
const prerelease = fc.oneof(fc.constant<Array<string>>([]), fc.array(preId, { minLength: 1, maxLength: 4 }))
const build = fc.option(fc.array(fc.string({ unit: idChar, minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 2 }), {
  nil: undefined
})

type Parts = { major: number; minor: number; patch: number; pre: ReadonlyArray<string>; build: ReadonlyArray<string> | undefined }
const render = (p: Parts): string =>
  `${p.major}.${p.minor}.${p.patch}` + (p.pre.length ? `-${p.pre.join(".")}` : "") + (p.build ? `+${p.build.join(".")}` : "")

const parts = fc.record({ major: num, minor: num, patch: num, pre: prerelease, build })
const version = parts.map(render)
// pairs sharing the version core whose prereleases share a prefix: the interesting comparisons
const related = fc
  .tuple(parts, fc.nat(4), prerelease, build)
  .map(([a, cut, extra, b]): [string, string] => [render(a), render({ ...a, pre: [...a.pre.slice(0, cut), ...extra], build: b })])
const pair = fc.oneof(fc.tuple(version, version), related)

// ranges over a small pool so that bounds are hit often
const small = fc.constantFrom("0", "1", "2")
const x = fc.oneof({ weight: 4, arbitrary: small }, { weight: 1, arbitrary: fc.constantFrom("x", "X", "*") })
const smallPre = fc.option(fc.array(fc.constantFrom("0", "1", "alpha", "beta"), { minLength: 1, maxLength: 2 }), { nil: undefined })
const partial = fc.oneof(
  x,
  fc.tuple(small, x).map(([a, b]) => `${a}.${b}`),
  fc.tuple(small, small, x, smallPre).map(([a, b, c, p]) => `${a}.${b}.${c}` + (p && !/[xX*]/.test(c) ? `-${p.join(".")}` : ""))
)
const op = fc.constantFrom("", "=", "<", "<=", ">", ">=", "^", "~", "~>")
const comparator = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(op, partial).map(([o, p]) => o + p) },
  { weight: 2, arbitrary: fc.tuple(partial, partial).map(([a, b]) => `${a} - ${b}`) },
  { weight: 1, arbitrary: fc.constantFrom("*", "", `^${MAX}`, `<=${MAX}.${MAX}.${MAX}`) }
)
const comparatorSet = fc.array(comparator, { minLength: 1, maxLength: 3 }).map((cs) => cs.join(" "))
const range = fc.array(comparatorSet, { minLength: 1, maxLength: 3 }).map((ss) => ss.join(" || "))
// host versions: the range's own (desugared) bounds, versions near them, or anything
const boundsOf = (r: string): Array<string> =>
  semver.validRange(r, { includePrerelease: true })?.match(/\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?/g) ?? []
const nearby = fc.tuple(small, small, small, smallPre).map(([a, b, c, p]) => `${a}.${b}.${c}` + (p ? `-${p.join(".")}` : ""))
const rangeAndVersion = range.chain((r) => {
  const bounds = boundsOf(r)
  const hv = bounds.length ? fc.oneof(fc.constantFrom(...bounds), nearby, version) : fc.oneof(nearby, version)
  return fc.tuple(fc.constant(r), hv)
})

const key = (v: string): string => {
  const k = semverKey(v)
  if (k === undefined) throw new Error(`no key for ${v}`)
  return k
}
const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/** The predicate the SQL evaluates on `node_version_host_ranges`: does some interval contain the key? */
const admits = (intervals: ReadonlyArray<HostInterval>, versionKey: string): boolean =>
  intervals.some(
    (i) =>
      (i.lo === null || i.lo < versionKey || (i.loIncl && i.lo === versionKey)) &&
      (i.hi === null || versionKey < i.hi || (i.hiIncl && versionKey === i.hi))
  )
const withoutBuild = (v: string): string => v.replace(/\+.*$/, "")

// --- properties ---------------------------------------------------------------

describe("semverKey", () => {
  it("key order equals semver.compare", () => forAllSync({ p: pair }, ({ p: [a, b] }) => {
    expect(cmp(key(a), key(b))).toBe(semver.compare(a, b))
  }, { numRuns: 3000 }))

  it("keys are reflexive and ignore build metadata", () => forAllSync({ v: version }, ({ v }) => {
    expect(key(v)).toBe(key(v))
    expect(key(v)).toBe(key(withoutBuild(v)))
  }))

  it("keys are printable ASCII", () => forAllSync({ v: version }, ({ v }) => {
    expect(key(v)).toMatch(/^[\x20-\x7E]+$/)
  }, { numRuns: 1000 }))

  it("orders the cases a lexical sort gets wrong", () => {
    const ascending = [
      "0.0.0-0",
      "0.0.0",
      "1.0.0-alpha",
      "1.0.0-alpha.1",
      "1.0.0-alpha.9",
      "1.0.0-alpha.10",
      "1.0.0-alpha.beta",
      "1.0.0-alpha-1",
      "1.0.0-alphab",
      "1.0.0-beta",
      "1.0.0-beta.2",
      "1.0.0-beta.11",
      "1.0.0-rc.1",
      "1.0.0",
      "1.9.0",
      "1.10.0",
      "9.0.0",
      "10.0.0",
      `${MAX}.0.0`
    ]
    const keys = ascending.map(key)
    for (let i = 1; i < keys.length; i++) expect(keys[i - 1]! < keys[i]!, `${ascending[i - 1]} < ${ascending[i]}`).toBe(true)
    expect([...ascending].sort()).not.toEqual(ascending)
    expect(key("1.0.0+build.7")).toBe(key("1.0.0"))
  })

  it("rejects what is not a strict semantic version", () => {
    for (const bad of [
      "",
      "1",
      "1.2",
      "1.2.3.4",
      "v1.2.3",
      "=1.2.3",
      " 1.2.3",
      "1.2.3 ",
      "01.2.3",
      "1.2.3-01",
      "1.2.3-",
      "1.2.3+",
      "1.2.3-a..b",
      "1.2.3-ä",
      `${MAX + 1}.0.0`,
      "1.2.3-9007199254740992"
    ]) expect(semverKey(bad), bad).toBeUndefined()
  })
})

describe("hostIntervals", () => {
  it("admits exactly what semver.satisfies admits", () => forAllSync({ rv: rangeAndVersion }, ({ rv: [r, v] }) => {
    const intervals = hostIntervals(r)
    expect(intervals === undefined, r).toBe(semver.validRange(r, { includePrerelease: true }) === null)
    const got = intervals !== undefined && admits(intervals, key(v))
    expect(got, `${v} in ${r}`).toBe(semver.satisfies(v, r, { includePrerelease: true }))
  }, { numRuns: 5000 }))

  it("treats an empty range as any version", () => {
    const any = [{ lo: null, loIncl: true, hi: null, hiIncl: true }]
    expect(hostIntervals("")).toEqual(any)
    expect(hostIntervals("  ")).toEqual(any)
    expect(hostIntervals("*")).toHaveLength(1)
    expect(admits(hostIntervals("*")!, key("0.0.0-0"))).toBe(true)
  })

  it("builds one interval per comparator set and drops empty ones", () => {
    expect(hostIntervals(">=1.2.0 <2")).toEqual([{ lo: key("1.2.0"), loIncl: true, hi: key("2.0.0-0"), hiIncl: false }])
    expect(hostIntervals("^0.3.1 || 1.x")).toHaveLength(2)
    expect(hostIntervals("=1.2.3")).toEqual([{ lo: key("1.2.3"), loIncl: true, hi: key("1.2.3"), hiIncl: true }])
    expect(hostIntervals(">2 <1")).toEqual([])
    expect(hostIntervals(">=1.0.0 <1.0.0 || >1.0.0 <=1.0.0")).toEqual([])
    const tilde = hostIntervals("~1.2")!
    expect(admits(tilde, key("1.2.9"))).toBe(true)
    expect(admits(tilde, key("1.3.0-0"))).toBe(false)
    expect(hostIntervals("not a range")).toBeUndefined()
  })

  it("lets the exclusive bound win on equal keys, in either order", () => {
    for (const r of [">1.0.0 >=1.0.0 <=2.0.0 <2.0.0", ">=1.0.0 >1.0.0 <2.0.0 <=2.0.0"]) {
      const iv = hostIntervals(r)!
      expect(iv.map((i) => [admits([i], key("1.0.0")), admits([i], key("1.0.1")), admits([i], key("2.0.0"))])).toEqual([[false, true, false]])
    }
  })
})
