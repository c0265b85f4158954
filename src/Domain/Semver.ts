/**
 * Semantic-version sort keys and host-version ranges as key intervals, and the schemas that parse
 * versions and ranges into them where they enter the service.
 *
 * Why: PostgreSQL orders node versions with a plain btree on a `text COLLATE "C"`
 * column and checks `supported_host_version` with nothing but comparisons on that key.
 *
 * Key layout (printable ASCII only; byte order == SemVer precedence):
 *   number       = chr(0x40 + digit count) + digits        ("A0", "A9", "B10", "P9007199254740991")
 *   key          = major "." minor "." patch (release "~" | prerelease id*)
 *   numeric id   = "." number
 *   alphanum id  = ":" id "!"
 * Ordering of the separators: end-of-key < "!" < "-" (smallest id char) and "." < ":" < "~".
 */
import { Effect, Schema, SchemaIssue, SchemaTransformation } from "effect"
import * as pep440 from "@renovatebot/pep440"
import semver from "semver"
import { normaliseRange } from "./Ranges.ts"

// why: the length prefix makes longer numbers sort after shorter ones; semver forbids leading zeros
const encodeNumber = (n: number | string): string => {
  const digits = String(n)
  return String.fromCharCode(0x40 + digits.length) + digits
}

// why: numeric prerelease ids above this are compared as lossy floats by node-semver (and need a wider prefix)
const isSafeNumeric = (id: string): boolean => /^[0-9]+$/.test(id) && id.length <= 16 && Number(id) <= Number.MAX_SAFE_INTEGER

const keyOf = (v: semver.SemVer): string | undefined => {
  let key = `${encodeNumber(v.major)}.${encodeNumber(v.minor)}.${encodeNumber(v.patch)}`
  // why: "~" outranks every prerelease tag, so a release sorts after all its prereleases
  if (v.prerelease.length === 0) return key + "~"
  for (const raw of v.prerelease) {
    const id = String(raw)
    if (/^[0-9]+$/.test(id)) {
      if (!isSafeNumeric(id)) return undefined
      key += "." + encodeNumber(id)
    } else {
      // why: "!" sorts below every identifier character, so "alpha" < "alpha-1" < "alphab"
      key += ":" + id + "!"
    }
  }
  return key
}

/**
 * Order-preserving key of a strict semantic version (build metadata ignored), or undefined
 * when the input is not one (leading "v", "=", whitespace, loose forms, or numeric
 * prerelease ids above Number.MAX_SAFE_INTEGER are rejected).
 */
export const semverKey = (version: string): string | undefined => {
  const v = semver.parse(version)
  // why: semver.parse tolerates "v1.2.3" and surrounding whitespace; we only accept the canonical text
  if (v === null || version !== v.version + (v.build.length > 0 ? "+" + v.build.join(".") : "")) return undefined
  return keyOf(v)
}

/** A key interval; null bounds are unbounded. */
export type HostInterval = {
  readonly lo: string | null
  readonly loIncl: boolean
  readonly hi: string | null
  readonly hiIncl: boolean
}

const isEmpty = (i: HostInterval): boolean =>
  i.lo !== null && i.hi !== null && (i.lo > i.hi || (i.lo === i.hi && !(i.loIncl && i.hiIncl)))

/**
 * The union of intervals admitting exactly what `semver.satisfies(v, range, { includePrerelease: true })`
 * admits, or undefined when the range does not parse (or has an unrepresentable bound).
 */
export const hostIntervals = (range: string): ReadonlyArray<HostInterval> | undefined => {
  let parsed: semver.Range
  try {
    parsed = new semver.Range(range, { includePrerelease: true })
  } catch {
    return undefined
  }
  const out: Array<HostInterval> = []
  for (const set of parsed.set) {
    let i: HostInterval = { lo: null, loIncl: true, hi: null, hiIncl: true }
    for (const c of set) {
      // why: the ANY comparator ("", "*") has an empty value and a non-SemVer `semver` field
      if (c.value === "") continue
      const key = keyOf(c.semver)
      if (key === undefined) return undefined
      const op = c.operator === "=" ? "" : c.operator
      // why: the tightest bound wins; on equal keys an exclusive bound is the tighter one
      if (op === "" || op === ">=" || op === ">") {
        const incl = op !== ">"
        if (i.lo === null || key > i.lo || (key === i.lo && !incl)) i = { ...i, lo: key, loIncl: incl }
      }
      if (op === "" || op === "<=" || op === "<") {
        const incl = op !== "<"
        if (i.hi === null || key < i.hi || (key === i.hi && !incl)) i = { ...i, hi: key, hiIncl: incl }
      }
    }
    if (!isEmpty(i)) out.push(i)
  }
  return out
}

// --- schemas: versions and ranges parsed once, where they enter --------------------------------

/** A strict semantic version with its sort key. */
export interface SemanticVersion {
  /** As the publisher wrote it. */
  readonly text: string
  readonly key: string
}

/**
 * A published version: a strict semantic version without build metadata (which takes no part in
 * precedence, so versions differing only in it could not be told apart), parsed into its key.
 */
export const PublishedVersion = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100)).pipe(
  Schema.decodeTo(
    Schema.Struct({ text: Schema.String, key: Schema.String }),
    SchemaTransformation.transformEffect({
      decode: (text: string, options) => {
        const key = semverKey(text)
        if (key === undefined) {
          return Effect.fail(
            new SchemaIssue.InvalidValue({ message: "expected a semantic version such as 1.2.3 or 2.0.0-beta.1" }, text, options)
          )
        }
        if (text.includes("+")) {
          return Effect.fail(
            new SchemaIssue.InvalidValue(
              { message: "build metadata (+...) is not accepted: versions differing only in it could not be told apart" },
              text,
              options
            )
          )
        }
        return Effect.succeed({ text, key })
      },
      encode: (version: SemanticVersion) => Effect.succeed(version.text)
    })
  )
).annotate({ description: "A semantic version such as 1.2.3 or 2.0.0-beta.1 (no build metadata)" })

const rangeExpected = "expected a version range such as >=1.2.0 <2.0.0, ^1.4 or >=1.2.0,<2.0.0"
const rangeMeaning = "A version range, as node-semver (>=1.2.0 <2.0.0, ^1.4) or PEP 440 (>=1.2.0,<2.0.0, ~=1.2, ==1.2.*, !=1.3.0) " +
  "writes them; stored in node-semver's form"

/** A host-version range, normalised (Ranges.ts), with the key intervals it admits; an empty range admits every host. */
export interface HostRange {
  readonly text: string
  /** `undefined` for an empty range: every host. */
  readonly intervals: ReadonlyArray<HostInterval> | undefined
}

/** A host-version range in either form (Ranges.ts), normalised and parsed into key intervals. */
export const HostRangeFromString = (maxLength: number) =>
  Schema.String.check(Schema.isMaxLength(maxLength)).pipe(
    Schema.decodeTo(
      Schema.Struct({
        text: Schema.String,
        intervals: Schema.UndefinedOr(Schema.Array(Schema.Struct({
          lo: Schema.NullOr(Schema.String),
          loIncl: Schema.Boolean,
          hi: Schema.NullOr(Schema.String),
          hiIncl: Schema.Boolean
        })))
      }),
      SchemaTransformation.transformEffect({
        decode: (raw: string, options) => {
          const text = normaliseRange(raw)
          if (text === "") return Effect.succeed({ text, intervals: undefined })
          const intervals = text === undefined ? undefined : hostIntervals(text)
          return text === undefined || intervals === undefined
            ? Effect.fail(new SchemaIssue.InvalidValue({ message: rangeExpected }, raw, options))
            : Effect.succeed({ text, intervals })
        },
        encode: (range: HostRange) => Effect.succeed(range.text)
      })
    )
  ).annotate({ description: rangeMeaning })

/** A host-version range in either form, normalised (Ranges.ts) where no filter reads its intervals. */
export const NormalisedHostRange = (maxLength: number) =>
  Schema.String.check(Schema.isMaxLength(maxLength)).pipe(
    Schema.decodeTo(
      Schema.String,
      SchemaTransformation.transformEffect({
        decode: (raw: string, options) => {
          const text = normaliseRange(raw)
          return text === undefined || (text !== "" && hostIntervals(text) === undefined)
            ? Effect.fail(new SchemaIssue.InvalidValue({ message: rangeExpected }, raw, options))
            : Effect.succeed(text)
        },
        encode: (text: string) => Effect.succeed(text)
      })
    )
  ).annotate({ description: rangeMeaning })

// why: `git describe --tags` names a commit after a tag as <tag>-<commits since>-g<abbreviated hash>
const gitDescribeSuffix = /-\d+-g[0-9a-f]{4,40}$/i

/**
 * The key of a host application's version as a client gives it, or undefined when it names none.
 * A leading "v", surrounding spaces and a `git describe` suffix are tolerated: the host's
 * extension manager sends `git describe --tags` (`v0.3.60-1-g05b2453`, meaning 0.3.60).
 */
export const hostVersionKey = (text: string): string | undefined =>
  semverKey(text.trim().replace(/^v/i, "").replace(gitDescribeSuffix, ""))

/** `unknown` or nothing: the client does not know its host's version, so nothing is filtered. */
export const isUnknownHostVersion = (text: string): boolean => /^(unknown)?$/i.test(text.trim())

/**
 * The host application's version as a client gives it, checked, kept as given: a client sends
 * back what it holds, and the server takes its key with `hostVersionKey` (none when unknown).
 */
export const HostVersion = Schema.String.check(
  Schema.isMaxLength(200),
  Schema.makeFilter((text: string) =>
    isUnknownHostVersion(text) || hostVersionKey(text) !== undefined || `'${text}' is not a semantic version`
  )
).annotate({
  description: "A semantic version such as 1.2.3 (a leading v and a git describe suffix such as -1-g05b2453 are tolerated; " +
    "unknown or empty: no filter)"
})

// --- ranges of a node's own versions (install and resolve) ------------------------------------

/**
 * A range over a node's versions as a client gave it, read in the language it is written in:
 * node-semver's (npm's rules, pre-releases only for a range naming one of the same release) or
 * PEP 440's (the library's rules). Unlike host ranges (Ranges.ts), it is not rewritten from one
 * into the other: each form keeps the meaning its own tools give it.
 */
export interface VersionRange {
  /** As the client wrote it, trimmed. */
  readonly text: string
  readonly kind: "semver" | "pep440"
  /** The range in its own language (`*` for blank). */
  readonly normal: string
}

// what only PEP 440 writes: a comma between clauses, and operators node-semver lacks
const pepOnlyOperator = /,|~=|==|!=|<>/

const validPep440Range = (text: string) => {
  try {
    return pep440.validRange(text)
  } catch {
    return false
  }
}

/**
 * The range `text` reads as, or undefined when it is none: PEP 440 when it has a comma or an
 * operator only PEP 440 has (`>=1.2,<2`, `~=1.2`, `==1.2.*`); else node-semver when node-semver
 * reads it (`^1.2`, `>=1 <2`, `1.x`, `2.*`, and the ambiguous `>=1.2`, as npm would); else PEP 440
 * when that reads it. Blank is every version.
 */
export const versionRangeOf = (raw: string): VersionRange | undefined => {
  const text = raw.trim()
  if (text === "") return { text, kind: "semver", normal: "*" }
  if (pepOnlyOperator.test(text)) return validPep440Range(text) ? { text, kind: "pep440", normal: text } : undefined
  const semverForm = semver.validRange(text)
  if (semverForm !== null) return { text, kind: "semver", normal: text }
  return validPep440Range(text) ? { text, kind: "pep440", normal: text } : undefined
}

const versionRangeMeaning = "A range of the node's versions, as node-semver (^1.2, ~1.2.3, >=1 <2, 1.x) or PEP 440 " +
  "(>=1.2,<2, ~=1.2, ==1.2.*) writes them, each with its own rules for pre-releases"

/** A range over a node's versions, parsed where it enters (`versionRangeOf`). */
export const VersionRangeFromString = Schema.String.check(Schema.isMaxLength(200)).pipe(
  Schema.decodeTo(
    Schema.Struct({ text: Schema.String, kind: Schema.Literals(["semver", "pep440"]), normal: Schema.String }),
    SchemaTransformation.transformEffect({
      decode: (raw: string, options) => {
        const range = versionRangeOf(raw)
        return range === undefined
          ? Effect.fail(new SchemaIssue.InvalidValue({ message: "expected a version range such as ^1.2, >=1 <2, ~=1.2 or >=1.2,<2" }, raw, options))
          : Effect.succeed(range)
      },
      encode: (range: VersionRange) => Effect.succeed(range.text)
    })
  )
).annotate({ description: versionRangeMeaning })
