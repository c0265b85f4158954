/**
 * Host-version ranges as clients write them, normalised into node-semver's range language.
 *
 * Why: publishing CLIs pass pyproject's `requires-comfyui`-style specifiers through (PEP 440:
 * `>=0.3.0,<2.0.0`, `~=1.2`, `==1.2.*`, `!=1.3.0`), while the registry's filter (`hostIntervals`)
 * and the web clients read node-semver ranges (`>=0.3.0 <2.0.0`, `^1.4`, `1.x || >=3`). The
 * normal form is node-semver text: a range already in it is kept (whitespace collapsed); a range
 * in the PEP 440 form is rewritten into explicit comparators that admit the same versions.
 *
 * A range is in the PEP 440 form when it has a comma or an operator node-semver lacks (`~=`,
 * `==`, `!=`, `<>`, `.*`). Its comparisons then pad partial versions with zeros as PEP 440 does
 * (`>1.2` is `>1.2.0`), where node-semver reads `>1.2` as `>=1.3.0`. Pre-releases are compared
 * as node-semver does with prereleases included.
 */
import semver from "semver"

/** Alternatives (any may hold), each a list of comparator texts (all must hold). */
type Alternatives = ReadonlyArray<ReadonlyArray<string>>

const pepOnly = /,|~=|==|!=|<>|\.\*/

// operator, release components, pre-release, prefix star
const pepClause = /^(~=|==|!=|<>|<=|>=|<|>|=)?\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(\.\*)?$/

/** The version `major.minor.patch[-pre]` with missing components as zero. */
const padded = (parts: ReadonlyArray<number>, pre: string | undefined) =>
  [0, 1, 2].map((i) => parts[i] ?? 0).join(".") + (pre === undefined ? "" : `-${pre}`)

/** The first version after every version starting with `parts` (`1.2` -> `1.3.0`). */
const afterPrefix = (parts: ReadonlyArray<number>) =>
  padded([...parts.slice(0, -1), parts[parts.length - 1]! + 1], undefined)

/** One PEP 440 clause as alternatives of node-semver comparators, or undefined when it is not one. */
const pepAlternatives = (clause: string): Alternatives | undefined => {
  const m = pepClause.exec(clause)
  if (m === null) return undefined
  const [, rawOp, ...rest] = m
  const op = rawOp === "<>" ? "!=" : rawOp ?? "=="
  const parts = rest.slice(0, 3).filter((p): p is string => p !== undefined).map(Number)
  const pre = rest[3]
  const star = rest[4] !== undefined
  if (star) {
    // a prefix match: every version starting with the prefix, its pre-releases included
    if (pre !== undefined || (op !== "==" && op !== "!=")) return undefined
    const lo = `${padded(parts, undefined)}-0`
    const hi = `${afterPrefix(parts)}-0`
    return op === "==" ? [[`>=${lo}`, `<${hi}`]] : [[`<${lo}`], [`>=${hi}`]]
  }
  const version = padded(parts, pre)
  switch (op) {
    case "~=":
      // compatible release: at least this, and the same prefix without its last component
      return parts.length < 2 ? undefined : [[`>=${version}`, `<${afterPrefix(parts.slice(0, -1))}-0`]]
    case "==":
    case "=":
      return [[version]]
    case "!=":
      return [[`<${version}`], [`>${version}`]]
    default:
      return [[`${op}${version}`]]
  }
}

/** Whether a list of comparators admits some version. */
const admitsSome = (comparators: ReadonlyArray<string>) => {
  const options = { loose: false, includePrerelease: true }
  return semver.minVersion(new semver.Range(comparators.join(" "), options), options) !== null
}

/** All of `a` and all of `b`; combinations that admit nothing are dropped while others remain. */
const both = (a: Alternatives, b: Alternatives): Alternatives => {
  const all = a.flatMap((x) => b.map((y) => [...x, ...y]))
  const some = all.filter(admitsSome)
  // a range that admits nothing stays such a range, as its publisher wrote it
  return some.length > 0 ? some : all.slice(0, 1)
}

const readsAsSemver = (text: string) => semver.validRange(text, { includePrerelease: true }) !== null

/** One `,`-separated piece of a PEP 440 form range: a clause, or node-semver text. */
const pieceAlternatives = (piece: string): Alternatives | undefined =>
  pepAlternatives(piece) ?? (pepOnly.test(piece) || !readsAsSemver(piece) ? undefined : [[piece]])

/** One `||` alternative of a PEP 440 form range. */
const pepAlternative = (alternative: string): Alternatives | undefined => {
  let out: Alternatives = [[]]
  for (const piece of alternative.split(",").map((p) => p.trim())) {
    const next = pieceAlternatives(piece)
    if (piece === "" || next === undefined) return undefined
    out = both(out, next)
  }
  return out
}

const collapse = (text: string) => text.trim().replace(/\s+/g, " ")

/**
 * The node-semver text of a host-version range in either form, or undefined when it cannot be
 * read. The empty range stays empty (every host).
 */
export const normaliseRange = (text: string): string | undefined => {
  const range = collapse(text)
  if (range === "") return ""
  if (!pepOnly.test(range)) return readsAsSemver(range) ? range.split("||").map(collapse).join(" || ") : undefined
  const alternatives: Array<ReadonlyArray<string>> = []
  for (const alternative of range.split("||")) {
    const read = pepAlternative(alternative)
    if (read === undefined) return undefined
    alternatives.push(...read)
  }
  const normal = alternatives.map((comparators) => comparators.length === 0 ? "*" : comparators.join(" ")).join(" || ")
  return readsAsSemver(normal) ? normal : undefined
}
