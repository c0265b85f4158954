/**
 * PEP 508 dependency specifiers (`numpy[extra]>=1.24,<2; python_version >= "3.10"`), parsed, and
 * their environment markers evaluated.
 *
 * Why a parser of our own: no well-kept npm package parses PEP 508 (the grammar is small, and the
 * packages that exist are unmaintained or parse only names). This is the grammar of PEP 508's
 * "Complete Grammar" section, written as a recursive descent; the specifier's versions and
 * operators are checked, and later compared, by @renovatebot/pep440, never by hand.
 */
import * as pep440 from "@renovatebot/pep440"

/** The environment marker variables of PEP 508 (`extra` is a requirement's own). */
export const markerVariables = [
  "python_version",
  "python_full_version",
  "os_name",
  "sys_platform",
  "platform_release",
  "platform_system",
  "platform_version",
  "platform_machine",
  "platform_python_implementation",
  "implementation_name",
  "implementation_version",
  "extra"
] as const
export type MarkerVariable = typeof markerVariables[number]

/** A marker as a tree: comparisons joined by `and` and `or`. */
export type Marker =
  | { readonly _tag: "Compare"; readonly left: MarkerValue; readonly op: string; readonly right: MarkerValue }
  | { readonly _tag: "And" | "Or"; readonly left: Marker; readonly right: Marker }

export type MarkerValue = { readonly _tag: "Variable"; readonly name: MarkerVariable } | { readonly _tag: "String"; readonly value: string }

/** A parsed requirement. */
export interface Requirement {
  /** As written. */
  readonly name: string
  /** PEP 503's normal form: lower case, runs of `-`, `_`, `.` as one `-`; what requirements are grouped by. */
  readonly package: string
  readonly extras: ReadonlyArray<string>
  /** The version specifiers, comma-joined without spaces (`>=1.24,<2`); "" for any version. */
  readonly specifier: string
  /** A direct reference (`name @ https://...`) instead of a specifier. */
  readonly url?: string | undefined
  /** The marker as written after `;`, without surrounding spaces. */
  readonly markerText?: string | undefined
  readonly marker?: Marker | undefined
}

/** PEP 503's normal form of a distribution name. */
export const normalisedName = (name: string) => name.toLowerCase().replace(/[-_.]+/g, "-")

class Failure extends Error {}

const comparisons = ["===", "~=", "==", "!=", "<=", ">=", "<", ">"] as const

/** A recursive-descent reader of one PEP 508 specification. */
class Reader {
  at = 0
  constructor(readonly text: string) {}

  fail(what: string): never {
    throw new Failure(`${what} at character ${this.at + 1}`)
  }
  spaces() {
    while (this.at < this.text.length && (this.text[this.at] === " " || this.text[this.at] === "\t")) this.at++
  }
  peek(s: string) {
    return this.text.startsWith(s, this.at)
  }
  take(s: string) {
    if (!this.peek(s)) return false
    this.at += s.length
    return true
  }
  match(re: RegExp): string | undefined {
    const m = re.exec(this.text.slice(this.at))
    if (m === null || m.index !== 0) return undefined
    this.at += m[0].length
    return m[0]
  }

  identifier(what: string) {
    return this.match(/^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?/) ?? this.fail(`expected ${what}`)
  }

  extras(): Array<string> {
    this.spaces()
    if (!this.take("[")) return []
    const extras: Array<string> = []
    this.spaces()
    if (this.take("]")) return extras
    for (;;) {
      this.spaces()
      extras.push(this.identifier("an extra's name"))
      this.spaces()
      if (this.take("]")) return extras
      if (!this.take(",")) this.fail("expected , or ] in the extras")
    }
  }

  /** `op version` clauses joined by commas, optionally in parentheses; "" for none. */
  versionSpec(): string {
    this.spaces()
    const parenthesised = this.take("(")
    const clauses: Array<string> = []
    for (;;) {
      this.spaces()
      const op = comparisons.find((c) => this.peek(c))
      if (op === undefined) {
        if (clauses.length === 0 && !parenthesised) return ""
        this.fail("expected a version comparison (==, !=, <=, >=, <, >, ~=, ===)")
      }
      this.at += op.length
      this.spaces()
      const version = this.match(/^[A-Za-z0-9_.*+!-]+/) ?? this.fail("expected a version")
      const clause = `${op}${version}`
      if (!pep440.validRange(clause)) {
        this.at -= version.length
        this.fail(`'${clause}' is not a PEP 440 version specifier`)
      }
      clauses.push(clause)
      this.spaces()
      if (!this.take(",")) break
    }
    if (parenthesised) {
      this.spaces()
      if (!this.take(")")) this.fail("expected )")
    }
    return clauses.join(",")
  }

  markerValue(): MarkerValue {
    this.spaces()
    const quote = this.peek("'") ? "'" : this.peek("\"") ? "\"" : undefined
    if (quote !== undefined) {
      this.at++
      const end = this.text.indexOf(quote, this.at)
      if (end < 0) this.fail("unterminated string")
      const value = this.text.slice(this.at, end)
      this.at = end + 1
      return { _tag: "String", value }
    }
    const word = this.match(/^[a-z_.]+/)
    // `os.name`, `sys.platform`, `platform.version`, ...: PEP 345's spellings, which PEP 508 keeps for compatibility
    const name = word?.replace(/\./g, "_")
    if (name === undefined || !(markerVariables as ReadonlyArray<string>).includes(name)) {
      if (word !== undefined) this.at -= word.length
      return this.fail("expected a marker variable or a quoted string")
    }
    return { _tag: "Variable", name: name as MarkerVariable }
  }

  markerOp(): string {
    this.spaces()
    const op = comparisons.find((c) => this.peek(c))
    if (op !== undefined) {
      this.at += op.length
      return op
    }
    if (this.match(/^in(?![A-Za-z0-9_])/)) return "in"
    if (this.match(/^not[ \t]+in(?![A-Za-z0-9_])/)) return "not in"
    return this.fail("expected a marker comparison (==, !=, <, in, not in, ...)")
  }

  markerAtom(): Marker {
    this.spaces()
    if (this.take("(")) {
      const inner = this.markerOr()
      this.spaces()
      if (!this.take(")")) this.fail("expected ) in the marker")
      return inner
    }
    const left = this.markerValue()
    const op = this.markerOp()
    const right = this.markerValue()
    return { _tag: "Compare", left, op, right }
  }

  markerAnd(): Marker {
    let left = this.markerAtom()
    for (;;) {
      this.spaces()
      if (!this.match(/^and(?![A-Za-z0-9_])/)) return left
      left = { _tag: "And", left, right: this.markerAtom() }
    }
  }

  markerOr(): Marker {
    let left = this.markerAnd()
    for (;;) {
      this.spaces()
      if (!this.match(/^or(?![A-Za-z0-9_])/)) return left
      left = { _tag: "Or", left, right: this.markerAnd() }
    }
  }

  requirement(): Requirement {
    this.spaces()
    const name = this.identifier("a package name")
    const extras = this.extras()
    this.spaces()
    let specifier = ""
    let url: string | undefined
    if (this.take("@")) {
      this.spaces()
      url = this.match(/^[^ \t;]+/) ?? this.fail("expected a URL after @")
      if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(url)) this.fail("expected a URL with a scheme after @")
      // PEP 508: a URL is ended by whitespace before its marker
      if (this.peek(";")) this.fail("expected a space between the URL and ;")
    } else {
      specifier = this.versionSpec()
    }
    this.spaces()
    let markerText: string | undefined
    let marker: Marker | undefined
    if (this.take(";")) {
      const start = this.at
      marker = this.markerOr()
      this.spaces()
      markerText = this.text.slice(start, this.at).trim()
    }
    this.spaces()
    if (this.at < this.text.length) this.fail(`unexpected '${this.text[this.at]}'`)
    return { name, package: normalisedName(name), extras, specifier, url, markerText, marker }
  }
}

/** A requirement read from its text: the parsed form, or why it is none. */
export type ParsedRequirement =
  | { readonly _tag: "Parsed"; readonly requirement: Requirement }
  | { readonly _tag: "Unparseable"; readonly error: string }

/** Reads one PEP 508 requirement. Never throws. */
export const parseRequirement = (text: string): ParsedRequirement => {
  if (text.length > 1000) return { _tag: "Unparseable", error: "longer than 1000 characters" }
  try {
    return { _tag: "Parsed", requirement: new Reader(text).requirement() }
  } catch (e) {
    if (e instanceof Failure) return { _tag: "Unparseable", error: e.message }
    return { _tag: "Unparseable", error: "not a PEP 508 requirement" }
  }
}

/** The caller's environment: marker variables' values; those absent are unknown. */
export type Environment = Partial<Readonly<Record<MarkerVariable, string>>>

/**
 * A marker's value in `env`: true, false, or undefined when it reads a variable `env` lacks
 * (three-valued: `false and unknown` is false, `true or unknown` is true). `extra` is "" unless
 * given: a node's own requirements are read without extras. Comparisons follow PEP 508: PEP 440's
 * when both sides are versions and the operator is a version comparison, else string ones.
 */
export const evaluateMarker = (marker: Marker, env: Environment): boolean | undefined => {
  switch (marker._tag) {
    case "And": {
      const l = evaluateMarker(marker.left, env)
      const r = evaluateMarker(marker.right, env)
      return l === false || r === false ? false : l === undefined || r === undefined ? undefined : true
    }
    case "Or": {
      const l = evaluateMarker(marker.left, env)
      const r = evaluateMarker(marker.right, env)
      return l === true || r === true ? true : l === undefined || r === undefined ? undefined : false
    }
    case "Compare": {
      const value = (v: MarkerValue) => v._tag === "String" ? v.value : env[v.name] ?? (v.name === "extra" ? "" : undefined)
      const left = value(marker.left)
      const right = value(marker.right)
      if (left === undefined || right === undefined) return undefined
      return compareMarker(left, marker.op, right)
    }
  }
}

const compareMarker = (left: string, op: string, right: string): boolean => {
  if (op === "in") return right.includes(left)
  if (op === "not in") return !right.includes(left)
  if (op !== "===" && pep440.valid(left) !== null && pep440.validRange(`${op}${right}`)) {
    return pep440.satisfies(left, `${op}${right}`, { prereleases: true })
  }
  switch (op) {
    case "==":
    case "===": return left === right
    case "!=": return left !== right
    case "<": return left < right
    case "<=": return left <= right
    case ">": return left > right
    case ">=": return left >= right
    default: return false
  }
}

/** The stored and answered form of one dependency (`DependencyRequirement` in Node.ts). */
export const requirementRecord = (text: string) => {
  const parsed = parseRequirement(text)
  if (parsed._tag === "Unparseable") return { requirement: text, error: parsed.error }
  const r = parsed.requirement
  return {
    requirement: text,
    name: r.name,
    package: r.package,
    extras: r.extras,
    specifier: r.specifier,
    ...(r.url === undefined ? {} : { url: r.url }),
    ...(r.markerText === undefined ? {} : { marker: r.markerText })
  }
}
