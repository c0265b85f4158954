/**
 * PEP 508 requirements (src/Domain/Requirements.ts) and the conflict check's satisfiability
 * (src/Catalog/Conflicts.ts), property-tested: requirements written from random parts parse back
 * into those parts; any text parses or is refused with a position, never a throw; markers
 * evaluate as PEP 508 says; and `witness` finds a version exactly when a brute-force search over
 * a small universe of releases finds one, the PEP 440 library judging both.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as pep440 from "@renovatebot/pep440"
import { evaluateMarker, markerVariables, normalisedName, parseRequirement } from "../../src/Domain/Requirements.ts"
import { findConflicts, witness } from "../../src/Catalog/Conflicts.ts"
import { forAllSync } from "../support/Property.ts"

const ops = ["==", "!=", "<=", ">=", "<", ">", "~="] as const
const digit = fc.integer({ min: 0, max: 2 })
const shortVersion = fc.array(digit, { minLength: 1, maxLength: 2 }).map((parts) => parts.join("."))
const clause = fc.oneof(
  fc.tuple(fc.constantFrom(...ops.filter((o) => o !== "~=")), shortVersion).map(([op, v]) => `${op}${v}`),
  fc.tuple(digit, digit).map(([a, b]) => `~=${a}.${b}`),
  fc.tuple(fc.constantFrom("==", "!="), digit).map(([op, a]) => `${op}${a}.*`)
)
const specifierSet = fc.array(clause, { minLength: 0, maxLength: 3 }).map((cs) => cs.join(","))

/** Every final release with components 0..3 and one to three of them: denser than the boundaries the clauses above name (two components at most, so a release just above one has three). */
const universe: ReadonlyArray<string> = (() => {
  const out: Array<string> = []
  const grow = (prefix: ReadonlyArray<number>) => {
    if (prefix.length > 0) out.push(prefix.join("."))
    if (prefix.length < 3) for (let d = 0; d <= 3; d++) grow([...prefix, d])
  }
  grow([])
  return out
})()

const name = fc.stringMatching(/^[A-Za-z0-9]([A-Za-z0-9._-]{0,8}[A-Za-z0-9])?$/)
const extra = fc.stringMatching(/^[a-z][a-z0-9]{0,5}$/)
const spaces = fc.constantFrom("", " ", "  ")

describe("parseRequirement", () => {
  it("a requirement written from parts reads back as those parts", () =>
    forAllSync(
      [name, fc.array(extra, { maxLength: 2 }), fc.array(clause, { maxLength: 3 }), fc.boolean(), spaces, fc.option(fc.constantFrom(
        "python_version >= \"3.10\"",
        "sys_platform == 'win32' and python_version < '3.12'",
        "(os_name == \"nt\" or platform_machine in 'x86_64 amd64') and extra == \"gpu\"",
        "os.name == 'posix'"
      ), { nil: undefined })],
      ([n, extras, clauses, parens, sp, marker]) => {
        const spec = clauses.length === 0 ? "" : parens ? `(${clauses.join(`${sp},${sp}`)})` : clauses.join(`${sp},`)
        const text = `${sp}${n}${sp}${extras.length > 0 ? `[${extras.join(`,${sp}`)}]` : ""}${sp}${spec}${marker === undefined ? "" : `${sp};${sp}${marker}`}${sp}`
        const parsed = parseRequirement(text)
        if (parsed._tag !== "Parsed") expect.fail(`${text}: ${parsed.error}`)
        const r = parsed.requirement
        expect(r.name).toBe(n)
        expect(r.package).toBe(normalisedName(n))
        expect(r.extras).toEqual(extras)
        expect(r.specifier).toBe(clauses.join(","))
        expect(r.markerText).toBe(marker)
        expect(r.marker === undefined).toBe(marker === undefined)
      },
      { numRuns: 500 }
    ))

  it("direct references keep their URL and take no specifier", () => {
    const parsed = parseRequirement("pip @ https://example.org/pip-23.0.zip ; python_version >= '3.8'")
    expect(parsed._tag === "Parsed" && parsed.requirement.url).toBe("https://example.org/pip-23.0.zip")
    expect(parseRequirement("pip @ https://example.org/p.zip; python_version >= '3.8'")._tag).toBe("Unparseable")
  })

  it("any text parses or is refused with where, never a throw", () =>
    forAllSync([fc.oneof(fc.string({ maxLength: 40 }), fc.stringMatching(/^[a-z0-9 [\],;<>=!~.*()'"@:/_-]{0,40}$/))], ([text]) => {
      const parsed = parseRequirement(text)
      if (parsed._tag === "Unparseable") expect(parsed.error.length).toBeGreaterThan(0)
      else expect(parsed.requirement.package).toBe(normalisedName(parsed.requirement.name))
    }, { numRuns: 2000 }))

  it("refuses what PEP 508 does not write", () => {
    for (const text of ["", "numpy>=", "numpy >= 1.0 <2", "numpy[", "numpy[a,]", "-numpy", "numpy>=1.0;", "numpy; python_version >> '3'",
      "numpy; foo == 'x'", "numpy; python_version == '3", "numpy ~= 1", "numpy (>=1.0", "numpy==1.0 extra", "x".repeat(1001)]) {
      expect(parseRequirement(text)._tag, JSON.stringify(text)).toBe("Unparseable")
    }
    expect(parseRequirement("numpy>=").toString()).toBeDefined()
    const e = parseRequirement("numpy >= 1.0 <2")
    expect(e._tag === "Unparseable" && e.error).toMatch(/at character \d+/)
  })
})

describe("evaluateMarker", () => {
  const marker = (text: string) => {
    const parsed = parseRequirement(`x; ${text}`)
    if (parsed._tag !== "Parsed" || parsed.requirement.marker === undefined) throw new Error(text)
    return parsed.requirement.marker
  }
  it("compares versions by PEP 440, strings by their text; unknown variables are unknown", () => {
    expect(evaluateMarker(marker("python_version >= '3.10'"), { python_version: "3.9" })).toBe(false)
    expect(evaluateMarker(marker("python_version >= '3.10'"), { python_version: "3.12" })).toBe(true)
    expect(evaluateMarker(marker("sys_platform == 'win32'"), { sys_platform: "linux" })).toBe(false)
    expect(evaluateMarker(marker("'x86' in platform_machine"), { platform_machine: "x86_64" })).toBe(true)
    expect(evaluateMarker(marker("sys_platform == 'win32'"), {})).toBeUndefined()
    expect(evaluateMarker(marker("sys_platform == 'win32' and python_version < '3'"), { python_version: "3.11" })).toBe(false)
    expect(evaluateMarker(marker("sys_platform == 'win32' or python_version >= '3'"), { python_version: "3.11" })).toBe(true)
    expect(evaluateMarker(marker("extra == 'gpu'"), {})).toBe(false)
  })

  it("three-valued and/or agree with Kleene's tables for every assignment", () =>
    forAllSync([fc.constantFrom("linux", "win32", undefined), fc.constantFrom("3.9", "3.12", undefined)], ([platform, python]) => {
      const env = { ...(platform === undefined ? {} : { sys_platform: platform }), ...(python === undefined ? {} : { python_version: python }) }
      const a = platform === undefined ? undefined : platform === "win32"
      const b = python === undefined ? undefined : python === "3.12"
      const and = a === false || b === false ? false : a === undefined || b === undefined ? undefined : true
      const or = a === true || b === true ? true : a === undefined || b === undefined ? undefined : false
      expect(evaluateMarker(marker("sys_platform == 'win32' and python_version >= '3.10'"), env)).toBe(and)
      expect(evaluateMarker(marker("sys_platform == 'win32' or python_version >= '3.10'"), env)).toBe(or)
    }))

  it("knows every PEP 508 variable", () => {
    for (const v of markerVariables) expect(parseRequirement(`x; ${v} == 'a'`)._tag).toBe("Parsed")
  })
})

describe("witness", () => {
  it("finds a version exactly when brute force over the universe does, and its version satisfies every set", () =>
    forAllSync([fc.array(specifierSet, { minLength: 1, maxLength: 3 })], ([sets]) => {
      const all = sets.filter((s) => s !== "").join(",")
      const found = witness(sets)
      const brute = all === "" ? "0" : universe.find((v) => pep440.satisfies(v, all))
      expect(found === undefined, `${JSON.stringify(sets)}: witness ${found}, brute force ${brute}`).toBe(brute === undefined)
      if (found !== undefined && all !== "") expect(pep440.satisfies(found, all, { prereleases: true })).toBe(true)
    }, { numRuns: 1000 }))

  it("examples", () => {
    expect(witness([">=1.24", "<2"])).toBeDefined()
    expect(witness([">=2", "<1.5"])).toBeUndefined()
    expect(witness(["==1.2.*", "!=1.2.*"])).toBeUndefined()
    expect(witness(["~=1.4", ">=1.9.1"])).toBe("1.9.1")
    expect(witness([">1.0", "<1.0.1"])).toBeDefined()
  })
})

describe("findConflicts", () => {
  it("per package, the fewest requirements that conflict, with who asked; markers evaluated or assumed", () => {
    const versions = [
      { nodeId: "a", version: "1.0.0", dependencies: ["numpy>=2", "torch", "Pillow<10; sys_platform == 'win32'"] },
      { nodeId: "b", version: "2.0.0", dependencies: ["NumPy<1.27,>=1.20", "pillow>=10", "not a requirement!"] },
      { nodeId: "c", version: "0.1.0", dependencies: ["numpy>=1.0"] }
    ]
    const assumed = findConflicts(versions, undefined)
    expect(assumed.conflicts.map((c) => [c.package, c.requirements.map((r) => `${r.nodeId}@${r.version}: ${r.text}`)])).toEqual([
      ["numpy", ["a@1.0.0: numpy>=2", "b@2.0.0: NumPy<1.27,>=1.20"]],
      ["pillow", ["a@1.0.0: Pillow<10; sys_platform == 'win32'", "b@2.0.0: pillow>=10"]]
    ])
    expect(assumed.markersAssumed).toBe(true)
    expect(assumed.unparseable).toEqual([{ nodeId: "b", version: "2.0.0", text: "not a requirement!", error: expect.any(String) }])
    const linux = findConflicts(versions, { sys_platform: "linux" })
    expect(linux.conflicts.map((c) => c.package)).toEqual(["numpy"])
    expect(linux.markersAssumed).toBe(false)
  })
})
