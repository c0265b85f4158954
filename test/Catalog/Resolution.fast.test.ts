/**
 * Ranges over a node's versions (`versionRangeOf`, `VersionRangeFromString`) and the chooser
 * (src/Catalog/Resolution.ts), property-tested: node-semver ranges admit exactly what node-semver
 * admits; PEP 440 specifier sets admit, on release versions, exactly what the PEP 440 library
 * admits; any text either parses into a usable range or is refused (never a throw); and the
 * chooser's answer equals a brute-force oracle's, its refusal naming the right constraint.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import * as fc from "fast-check"
import * as pep440 from "@renovatebot/pep440"
import semver from "semver"
import { type HostInterval, hostIntervals, semverKey, VersionRangeFromString, versionRangeOf } from "../../src/Domain/Semver.ts"
import { admitsHost, type Candidate, choose, rangeTest } from "../../src/Catalog/Resolution.ts"
import { forAllSync } from "../support/Property.ts"

const small = fc.integer({ min: 0, max: 3 })
const release = fc.tuple(small, small, small).map((v) => v.join("."))
const prerelease = fc.tuple(release, fc.constantFrom("alpha", "beta.1", "rc.2", "0")).map(([v, p]) => `${v}-${p}`)
const version = fc.oneof({ weight: 3, arbitrary: release }, { weight: 1, arbitrary: prerelease })

/** A node-semver comparator set as clients write them. */
const partial = fc.tuple(small, fc.option(small, { nil: undefined }), fc.option(small, { nil: undefined }))
  .map(([a, b, c]) => [a, b, b === undefined ? undefined : c].filter((x) => x !== undefined).join("."))
const semverRange = fc.oneof(
  fc.tuple(fc.constantFrom("^", "~", ">=", "<=", ">", "<", "=", ""), partial).map(([op, v]) => `${op}${v}`),
  fc.tuple(small, fc.constantFrom("x", "*")).map(([a, x]) => `${a}.${x}`),
  fc.tuple(partial, partial).map(([a, b]) => `>=${a} <${b}`),
  fc.tuple(release, release).map(([a, b]) => `${a} - ${b}`),
  fc.tuple(prerelease, release).map(([a, b]) => `>=${a} <${b}`),
  fc.tuple(partial, partial).map(([a, b]) => `^${a} || ~${b}`)
)

/** A PEP 440 specifier set as the host's tools write them. */
const pepClause = fc.oneof(
  fc.tuple(fc.constantFrom(">=", "<=", ">", "<", "==", "!="), partial).map(([op, v]) => `${op}${v}`),
  fc.tuple(small, small, fc.option(small, { nil: undefined })).map(([a, b, c]) => `~=${[a, b, c].filter((x) => x !== undefined).join(".")}`),
  fc.tuple(fc.constantFrom("==", "!="), small, fc.option(small, { nil: undefined })).map(([op, a, b]) =>
    `${op}${[a, b].filter((x) => x !== undefined).join(".")}.*`
  )
)
const pepSet = fc.array(pepClause, { minLength: 1, maxLength: 3 }).map((clauses) => clauses.join(","))

describe("versionRangeOf", () => {
  it("a node-semver range admits exactly what node-semver admits (npm's pre-release rule included)", () =>
    forAllSync([semverRange, version], ([range, v]) => {
      const read = versionRangeOf(range)
      expect(read, range).toBeDefined()
      expect(read!.kind).toBe("semver")
      expect(rangeTest(read!)(v), `${v} in ${range}`).toBe(semver.satisfies(v, range))
    }, { numRuns: 500 }))

  it("a PEP 440 specifier set admits exactly what the PEP 440 library admits; one node-semver also reads is node-semver's", () =>
    forAllSync([pepSet, version], ([range, v]) => {
      const read = versionRangeOf(range)
      expect(read, range).toBeDefined()
      // `>=1.2` or `<2` alone read as npm reads them (node-semver's `>1` is `>=2.0.0`)
      const pepOnly = /,|~=|==|!=/.test(range)
      expect(read!.kind).toBe(pepOnly || semver.validRange(range) === null ? "pep440" : "semver")
      const expected = read!.kind === "semver"
        ? semver.satisfies(v, range)
        : !(v.includes("-") && pep440.explain(v)?.pre == null) && pep440.satisfies(v, range)
      expect(rangeTest(read!)(v), `${v} in ${range}`).toBe(expected)
    }, { numRuns: 500 }))

  it("any text parses into a usable range or is refused, never a throw; the schema agrees", () =>
    forAllSync([fc.oneof(fc.string({ maxLength: 30 }), fc.stringMatching(/^[0-9.*x^~<>=!, |-]{0,20}$/))], ([text]) => {
      const read = versionRangeOf(text)
      const decoded = Schema.decodeUnknownResult(VersionRangeFromString)(text)
      expect(Result.isSuccess(decoded)).toBe(read !== undefined)
      if (read !== undefined) expect(() => rangeTest(read)("1.2.3")).not.toThrow()
    }, { numRuns: 1000 }))

  it("refuses what is no range; blank is every version", () => {
    for (const text of ["^^1", ">=1,,<2", "~=1", "banana", "1.2.3.4.5.6", "==1.*.2", ">=1,", "x".repeat(201)]) {
      expect(Result.isFailure(Schema.decodeUnknownResult(VersionRangeFromString)(text)), text).toBe(true)
    }
    expect(versionRangeOf("  ")).toEqual({ text: "", kind: "semver", normal: "*" })
  })
})

// --- the chooser against a brute-force oracle ----------------------------------------------------

const hostRange = fc.option(fc.constantFrom(">=0.3.0", ">=0.3.2", "<0.3.1", ">=0.2 <0.4", "0.3.x"), { nil: undefined })
const candidate = fc.record({ version, yanked: fc.boolean(), host: hostRange })

const candidatesOf = (drawn: ReadonlyArray<{ version: string; yanked: boolean; host: string | undefined }>): ReadonlyArray<Candidate> => {
  const unique = [...new Map(drawn.map((d) => [d.version, d])).values()]
  return unique
    .sort((a, b) => semver.rcompare(a.version, b.version))
    .map((d) => ({
      version: d.version,
      yanked: d.yanked,
      supportedHostVersion: d.host ?? null,
      admitsAnyHost: d.host === undefined,
      hostIntervals: (d.host === undefined ? [] : hostIntervals(d.host)!) as ReadonlyArray<HostInterval>,
      downloadUrl: null
    }))
}

describe("choose", () => {
  it("admitsHost on key intervals agrees with node-semver on the host range", () =>
    forAllSync([hostRange, version], ([range, host]) => {
      const intervals = range === undefined ? [] : hostIntervals(range)!
      const admits = admitsHost({ admitsAnyHost: range === undefined, hostIntervals: intervals }, semverKey(host)!)
      expect(admits).toBe(range === undefined || semver.satisfies(host, range, { includePrerelease: true }))
    }, { numRuns: 1000 }))

  it("chooses what the oracle chooses, and refuses for the constraint the oracle names", () =>
    forAllSync(
      [fc.array(candidate, { maxLength: 8 }), fc.option(fc.oneof(semverRange, pepSet), { nil: undefined }), fc.option(release, { nil: undefined })],
      ([drawn, rangeText, hostText]) => {
        const candidates = candidatesOf(drawn)
        const range = rangeText === undefined ? undefined : versionRangeOf(rangeText)!
        const host = hostText === undefined ? undefined : { text: hostText, key: semverKey(hostText)! }
        const choice = choose(candidates, { range, host })
        // the oracle: every filter written out, the newest by semver precedence
        const inRange = candidates.filter((c) =>
          range === undefined ||
          (range.kind === "semver"
            ? semver.satisfies(c.version, range.normal)
            : !(c.version.includes("-") && pep440.explain(c.version)?.pre == null) && pep440.satisfies(c.version, range.normal))
        )
        const live = inRange.filter((c) => !c.yanked)
        const fit = live.filter((c) => c.supportedHostVersion === null || host === undefined ||
          semver.satisfies(hostText!, c.supportedHostVersion, { includePrerelease: true }))
        const newest = [...fit].sort((a, b) => semver.rcompare(a.version, b.version))[0]
        if (newest !== undefined) {
          expect(choice).toEqual({ _tag: "Chosen", candidate: newest })
        } else {
          expect(choice._tag).toBe(live.length === 0 ? "NoMatch" : "HostExcluded")
          if (choice._tag === "HostExcluded") expect(choice.reason).toContain(`newest excluded: ${live[0]!.version} requires host`)
          if (choice._tag === "NoMatch" && rangeText !== undefined && candidates.length > 0 && inRange.length === 0) {
            expect(choice.reason).toContain(`satisfies ${range!.text}`)
          }
        }
      },
      { numRuns: 500 }
    ))

  it("a pinned version is found by its number, yanked or not, and still must admit the host", () =>
    forAllSync([fc.array(candidate, { maxLength: 6 }), version, fc.option(release, { nil: undefined })], ([drawn, pinned, hostText]) => {
      const candidates = candidatesOf(drawn)
      const host = hostText === undefined ? undefined : { text: hostText, key: semverKey(hostText)! }
      const choice = choose(candidates, { pinned, host })
      const found = candidates.find((c) => c.version === pinned)
      if (found === undefined) expect(choice._tag).toBe("NoMatch")
      else if (host === undefined || admitsHost(found, host.key)) expect(choice).toEqual({ _tag: "Chosen", candidate: found })
      else expect(choice._tag).toBe("HostExcluded")
    }, { numRuns: 1000 }))
})
