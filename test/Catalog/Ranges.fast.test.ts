/**
 * Host-version ranges in both forms (src/Domain/Ranges.ts) and lenient host versions
 * (src/Domain/Semver.ts): for random versions, the stored range's key intervals admit exactly
 * what PEP 440 (the pyproject form comfy-cli's config_parser.py passes through) or node-semver
 * admits; the host's extension manager's `git describe` tags mean their base version.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import * as fc from "fast-check"
import semver from "semver"
import { normaliseRange } from "../../src/Domain/Ranges.ts"
import { HostRangeFromString, type HostInterval, hostIntervals, HostVersion, hostVersionKey, isUnknownHostVersion, NormalisedHostRange, semverKey } from "../../src/Domain/Semver.ts"
import { forAllSync } from "../support/Property.ts"

type Release = readonly [number, number, number]
const small = fc.integer({ min: 0, max: 3 })
const release = fc.tuple(small, small, small)
const text = (v: Release) => v.join(".")

// --- the PEP 440 model, on release versions -----------------------------------------------------

interface Clause {
  readonly op: "==" | "!=" | "~=" | ">=" | "<=" | ">" | "<" | "<>"
  readonly parts: ReadonlyArray<number>
  readonly star: boolean
}

const compare = (a: ReadonlyArray<number>, b: ReadonlyArray<number>) => {
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) - (b[i] ?? 0)
  return 0
}
const startsWith = (v: Release, prefix: ReadonlyArray<number>) => prefix.every((p, i) => v[i] === p)

const pepAdmits = (c: Clause, v: Release): boolean => {
  if (c.star) return (c.op === "==") === startsWith(v, c.parts)
  const d = compare(v, c.parts)
  switch (c.op) {
    case "==": return d === 0
    case "!=":
    case "<>": return d !== 0
    case ">=": return d >= 0
    case "<=": return d <= 0
    case ">": return d > 0
    case "<": return d < 0
    case "~=": return d >= 0 && startsWith(v, c.parts.slice(0, -1))
  }
}

const clause: fc.Arbitrary<Clause> = fc.oneof(
  fc.record({ op: fc.constantFrom("==" as const, "!=" as const), parts: fc.array(small, { minLength: 1, maxLength: 2 }), star: fc.constant(true) }),
  fc.record({ op: fc.constantFrom("~=" as const), parts: fc.array(small, { minLength: 2, maxLength: 3 }), star: fc.constant(false) }),
  fc.record({
    op: fc.constantFrom("==" as const, "!=" as const, ">=" as const, "<=" as const, ">" as const, "<" as const, "<>" as const),
    parts: fc.array(small, { minLength: 1, maxLength: 3 }),
    star: fc.constant(false)
  })
)
const space = fc.constantFrom("", " ")
const clauseText = fc.tuple(clause, space).map(([c, s]) => ({ c, text: `${c.op}${s}${c.parts.join(".")}${c.star ? ".*" : ""}` }))
const alternative = fc.array(clauseText, { minLength: 1, maxLength: 3 })
const pepRange = fc.tuple(fc.array(alternative, { minLength: 1, maxLength: 2 }), space).map(([alts, s]) => ({
  alts: alts.map((cs) => cs.map((x) => x.c)),
  text: alts.map((cs) => cs.map((x) => x.text).join(`,${s}`)).join(" || ")
}))
const isPepForm = (text: string) => /,|~=|==|!=|<>|\.\*/.test(text)

// --- what the stored range admits: its key intervals, as the host_version filter reads them -----

const inInterval = (key: string, i: HostInterval) =>
  (i.lo === null || key > i.lo || (i.loIncl && key === i.lo)) && (i.hi === null || key < i.hi || (i.hiIncl && key === i.hi))
const storedAdmits = (range: string, version: string) => {
  const intervals = hostIntervals(range)
  if (intervals === undefined) throw new Error(`the stored range ${range} does not read`)
  return intervals.some((i) => inInterval(semverKey(version)!, i))
}

describe("normaliseRange", () => {
  it("the stored range admits exactly what the PEP 440 range admits, or node-semver's when it is in that form", () => forAllSync([pepRange, release], ([r, v]) => {
    const normal = normaliseRange(r.text)
    expect(normal).toBeTypeOf("string")
    const expected = isPepForm(r.text)
      ? r.alts.some((cs) => cs.every((c) => pepAdmits(c, v)))
      : semver.satisfies(text(v), r.text, { includePrerelease: true })
    expect(storedAdmits(normal!, text(v))).toBe(expected)
  }))

  it("is idempotent and its result is node-semver's form", () => forAllSync([pepRange], ([r]) => {
    const normal = normaliseRange(r.text)!
    expect(normaliseRange(normal)).toBe(normal)
    expect(isPepForm(normal)).toBe(false)
    expect(semver.validRange(normal, { includePrerelease: true })).not.toBeNull()
  }))

  it("writes the forms comfy-cli passes through in node-semver's words", () => {
    expect(normaliseRange(">=0.3.0,<2.0.0")).toBe(">=0.3.0 <2.0.0")
    expect(normaliseRange("~=1.2")).toBe(">=1.2.0 <2.0.0-0")
    expect(normaliseRange("~=1.2.3")).toBe(">=1.2.3 <1.3.0-0")
    expect(normaliseRange("==1.2.*")).toBe(">=1.2.0-0 <1.3.0-0")
    expect(normaliseRange("!=1.3.0")).toBe("<1.3.0 || >1.3.0")
    expect(normaliseRange("==1.2.3")).toBe("1.2.3")
    expect(normaliseRange(" >=1.0.0   <2.0.0 ")).toBe(">=1.0.0 <2.0.0")
    expect(normaliseRange("^1.5.0")).toBe("^1.5.0")
    expect(normaliseRange("")).toBe("")
  })

  it("refuses what neither form reads", () => {
    for (const bad of ["not a range", "~=1", "===1.2", ">=1.0,", ",<2", ">=1.0,,<2", "==1.2.*-beta", ">=1.2.3.4,<2", "1.0rc1"]) {
      expect(normaliseRange(bad), bad).toBeUndefined()
    }
  })

  it("names the field's expectation and keeps the intervals in the parsed range", () => {
    const decode = Schema.decodeUnknownResult(HostRangeFromString(200))
    expect(Result.getOrThrow(decode(">=0.3.0,<2.0.0")).text).toBe(">=0.3.0 <2.0.0")
    expect(Result.getOrThrow(decode(">=0.3.0,<2.0.0")).intervals).toEqual(hostIntervals(">=0.3.0 <2.0.0"))
    expect(Result.getOrThrow(decode("")).intervals).toBeUndefined()
    expect(Result.isFailure(decode(">=0.3.0,,"))).toBe(true)
    expect(Schema.decodeUnknownSync(NormalisedHostRange(200))("~=1.2")).toBe(">=1.2.0 <2.0.0-0")
  })
})

describe("host versions", () => {
  const hash = fc.stringMatching(/^[0-9a-f]{7,12}$/)
  const decode = Schema.decodeUnknownResult(HostVersion)

  it("a git describe tag means its base version (ComfyUI-Manager manager_core.py get_comfyui_tag)", () => forAllSync([release, fc.nat(500), hash], ([v, n, h]) => {
    expect(hostVersionKey(`v${text(v)}-${n}-g${h}`)).toBe(semverKey(text(v)))
    expect(hostVersionKey(`v${text(v)}`)).toBe(semverKey(text(v)))
    expect(Result.isSuccess(decode(`v${text(v)}-${n}-g${h}`))).toBe(true)
  }))

  it("unknown or nothing filters nothing (ComfyUI-Manager cnr_utils.py sends 'unknown')", () => {
    for (const unknown of ["unknown", "", "  ", "Unknown"]) {
      expect(isUnknownHostVersion(unknown)).toBe(true)
      expect(hostVersionKey(unknown)).toBeUndefined()
      expect(Result.isSuccess(decode(unknown))).toBe(true)
    }
  })

  it("anything else that is not a version is refused", () => forAllSync([fc.string({ maxLength: 12 })], ([s]) => {
    const readable = isUnknownHostVersion(s) || hostVersionKey(s) !== undefined
    expect(Result.isSuccess(decode(s))).toBe(readable)
    for (const bad of ["latest", "1.3", "1.x", "v0.3", "0.3.60.1", "0.3.60-"]) expect(Result.isFailure(decode(bad))).toBe(true)
  }))
})
