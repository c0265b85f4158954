/**
 * Dependency conflicts between node versions: per package, the requirements whose PEP 440
 * specifier sets no version satisfies together.
 *
 * Satisfiability (`witness`), with the PEP 440 library's `satisfies` and no version arithmetic
 * of our own: a specifier set's truth can change only at the versions its clauses name (a
 * clause's version; for `==V.*` and `~=V` also the first version past the prefix). Between two
 * consecutive such boundaries, every final release compares alike with every boundary, so the
 * set holds on all of them or on none. We therefore test, for each boundary B: B as written, B's
 * release, and the release just above it (B's release padded to the longest release named, with
 * one more component `1`, which lies above B and below every greater boundary); and the smallest
 * release `0`. If none satisfies every clause, no final release does. Pre-releases are only tried
 * where a clause names one (PEP 440 admits them only then). test/Catalog/Conflicts.fast.test.ts
 * checks this against a brute-force search over a small version universe.
 */
import * as pep440 from "@renovatebot/pep440"
import { type Environment, evaluateMarker, parseRequirement, type Requirement } from "../Domain/Requirements.ts"

/** The release components of the versions of one clause, and the clause's version as written. */
const boundariesOf = (clause: string): ReadonlyArray<string> => {
  const m = /^(===|~=|==|!=|<=|>=|<|>)(.*)$/.exec(clause)
  if (m === null) return []
  const [, op, raw] = m as unknown as [string, string, string]
  if (op === "===") return [raw]
  const prefix = raw.endsWith(".*")
  const version = prefix ? raw.slice(0, -2) : raw
  const parsed = pep440.explain(version)
  if (parsed === null) return []
  const release = parsed.release
  const epoch = parsed.epoch === 0 ? "" : `${parsed.epoch}!`
  const out = [version]
  // the first version past a prefix: `==1.2.*` and `~=1.2.3` change at 1.3 and 1.3 too
  const bumpAt = prefix ? release.length - 1 : op === "~=" ? release.length - 2 : -1
  if (bumpAt >= 0) out.push(epoch + [...release.slice(0, bumpAt), release[bumpAt]! + 1].join("."))
  return out
}

/**
 * A final release (or a version a clause names) satisfying every specifier, or undefined when no
 * version does. Specifiers are comma-separated PEP 440 clauses; "" is any version.
 */
export const witness = (specifiers: ReadonlyArray<string>): string | undefined => {
  const all = specifiers.filter((s) => s !== "").join(",")
  if (all === "") return "0"
  const clauses = all.split(",")
  const boundaries = clauses.flatMap(boundariesOf)
  const explained = boundaries.map((b) => ({ text: b, version: pep440.explain(b) }))
  const longest = Math.max(1, ...explained.map((b) => b.version?.release.length ?? 0))
  const candidates = new Set<string>(["0"])
  for (const { text, version } of explained) {
    candidates.add(text)
    if (version === null) continue
    const epoch = version.epoch === 0 ? "" : `${version.epoch}!`
    const padded = [...version.release, ...Array<number>(longest - version.release.length).fill(0)]
    candidates.add(epoch + version.release.join("."))
    candidates.add(epoch + [...padded, 1].join("."))
  }
  for (const candidate of candidates) {
    if (pep440.valid(candidate) !== null && pep440.satisfies(candidate, all, { prereleases: true })) return candidate
  }
  return undefined
}

/** One requirement of one node version, as the check reads it. */
export interface Asked {
  readonly nodeId: string
  readonly version: string
  readonly text: string
  readonly requirement: Requirement
  /** True when the requirement has a marker that was not evaluated (no environment, or one without its variables). */
  readonly markerAssumed: boolean
}

/** What the check found. */
export interface ConflictReport {
  readonly conflicts: ReadonlyArray<{ readonly package: string; readonly requirements: ReadonlyArray<Asked> }>
  readonly unparseable: ReadonlyArray<{ readonly nodeId: string; readonly version: string; readonly text: string; readonly error: string }>
  /** Some requirement guarded by a marker counted as applicable without being evaluated. */
  readonly markersAssumed: boolean
}

/** Fewest requirements that still conflict: each one dropped while the rest still conflict. */
const minimal = (asked: ReadonlyArray<Asked>): ReadonlyArray<Asked> => {
  let kept = [...asked]
  for (const a of asked) {
    const without = kept.filter((k) => k !== a)
    if (without.length > 0 && witness(without.map((k) => k.requirement.specifier)) === undefined) kept = without
  }
  return kept
}

/**
 * The conflicts between the dependencies of `versions`. A requirement applies when its marker
 * holds in `environment`; without one (or where it lacks a marker's variable) a guarded
 * requirement is counted as applicable, and `markersAssumed` says so. Direct references
 * (`name @ url`) name no specifier and take no part.
 */
export const findConflicts = (
  versions: ReadonlyArray<{ readonly nodeId: string; readonly version: string; readonly dependencies: ReadonlyArray<string> }>,
  environment: Environment | undefined
): ConflictReport => {
  const byPackage = new Map<string, Array<Asked>>()
  const unparseable: Array<ConflictReport["unparseable"][number]> = []
  let markersAssumed = false
  for (const v of versions) {
    for (const text of v.dependencies) {
      const parsed = parseRequirement(text)
      if (parsed._tag === "Unparseable") {
        unparseable.push({ nodeId: v.nodeId, version: v.version, text, error: parsed.error })
        continue
      }
      const requirement = parsed.requirement
      const holds = requirement.marker === undefined ? true : evaluateMarker(requirement.marker, environment ?? {})
      if (holds === false || requirement.url !== undefined) continue
      if (holds === undefined) markersAssumed = true
      const asked: Asked = { nodeId: v.nodeId, version: v.version, text, requirement, markerAssumed: holds === undefined }
      byPackage.set(requirement.package, [...(byPackage.get(requirement.package) ?? []), asked])
    }
  }
  const conflicts = [...byPackage.entries()]
    .filter(([, asked]) => witness(asked.map((a) => a.requirement.specifier)) === undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, asked]) => ({ package: name, requirements: minimal(asked) }))
  return { conflicts, unparseable, markersAssumed }
}
