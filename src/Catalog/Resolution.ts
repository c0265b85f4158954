/**
 * Choosing the version to install under a range and a host version, and saying why none fits.
 *
 * Why here, in TypeScript, rather than in SQL: the bulk resolve reads every candidate version of
 * every named node in one statement and chooses for each item here, and a refusal names the
 * constraint that excluded the versions (the range, yanking, the host), which takes the excluded
 * versions themselves. The host check is the list filter's own (`host_version` on `GET /nodes`):
 * a version admits a host when it admits any host or one of its stored key intervals
 * (`node_version_host_ranges`) holds the host's key.
 */
import * as pep440 from "@renovatebot/pep440"
import semver from "semver"
import type { HostInterval, VersionRange } from "../Domain/Semver.ts"

/** An installable version (active, with an archive) as the chooser reads it. */
export interface Candidate {
  readonly version: string
  readonly yanked: boolean
  /** The version's host range as stored, for the message; null when it admits any host. */
  readonly supportedHostVersion: string | null
  readonly admitsAnyHost: boolean
  readonly hostIntervals: ReadonlyArray<HostInterval>
  readonly downloadUrl: string | null
}

/** What an install or a resolve item asks. */
export interface Wanted {
  /** An exact version (yanked ones included): the install's `version` parameter. */
  readonly pinned?: string | undefined
  readonly range?: VersionRange | undefined
  /** The host's version as given, with its key; none when the caller did not say (or said `unknown`). */
  readonly host?: { readonly text: string; readonly key: string } | undefined
}

/** The outcome: a version, or which constraint excluded what. */
export type Choice =
  | { readonly _tag: "Chosen"; readonly candidate: Candidate }
  /** Nothing installable, or nothing the range (or pin) admits, or only yanked versions: 404. */
  | { readonly _tag: "NoMatch"; readonly reason: string }
  /** Versions the range admits exist, none for this host: 409. */
  | { readonly _tag: "HostExcluded"; readonly reason: string }

/**
 * The test of a range, built once: node-semver's with npm's rules; PEP 440's with the library's.
 * A semantic pre-release that PEP 440 does not read as a pre-release (`1.0.0-0` reads as a
 * post-release there) satisfies no PEP 440 range rather than being misplaced.
 */
export const rangeTest = (range: VersionRange): ((version: string) => boolean) => {
  if (range.kind === "semver") {
    const parsed = new semver.Range(range.normal)
    return (version) => parsed.test(version)
  }
  return (version) => {
    if (version.includes("-") && pep440.explain(version)?.pre == null) return false
    return pep440.satisfies(version, range.normal)
  }
}

/** Whether a version admitting `c`'s intervals admits the host with key `key` (the list filter's comparisons). */
export const admitsHost = (c: Pick<Candidate, "admitsAnyHost" | "hostIntervals">, key: string): boolean =>
  c.admitsAnyHost || c.hostIntervals.some((i) =>
    (i.lo === null || i.lo < key || (i.loIncl && i.lo === key)) &&
    (i.hi === null || key < i.hi || (i.hiIncl && i.hi === key))
  )

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`

const requires = (c: Candidate) => `${c.version} requires host ${c.supportedHostVersion ?? "(any)"}`

/**
 * The newest candidate satisfying `wanted`. `candidates` are the node's installable versions,
 * newest first. A pinned version may be yanked (as `version=` always allowed); a range never
 * chooses a yanked one.
 */
export const choose = (candidates: ReadonlyArray<Candidate>, wanted: Wanted): Choice => {
  const host = wanted.host
  const forHost = (cs: ReadonlyArray<Candidate>, what: string): Choice => {
    const fit = host === undefined ? cs : cs.filter((c) => admitsHost(c, host.key))
    if (fit.length > 0) return { _tag: "Chosen", candidate: fit[0]! }
    return { _tag: "HostExcluded", reason: `${what} but none supports host ${host!.text}; newest excluded: ${requires(cs[0]!)}` }
  }
  if (wanted.pinned !== undefined) {
    const pinned = candidates.find((c) => c.version === wanted.pinned)
    return pinned === undefined
      ? { _tag: "NoMatch", reason: `no installable version '${wanted.pinned}'` }
      : forHost([pinned], `version ${pinned.version} is installable`)
  }
  if (candidates.length === 0) return { _tag: "NoMatch", reason: "no installable version" }
  const test = wanted.range === undefined ? undefined : rangeTest(wanted.range)
  const inRange = test === undefined ? candidates : candidates.filter((c) => test(c.version))
  const rangeText = wanted.range?.text
  if (inRange.length === 0) {
    return {
      _tag: "NoMatch",
      reason: `none of ${plural(candidates.length, "installable version", "installable versions")} satisfies ${rangeText}; newest: ${candidates[0]!.version}`
    }
  }
  const live = inRange.filter((c) => !c.yanked)
  const satisfying = rangeText === undefined
    ? plural(inRange.length, "installable version", "installable versions")
    : `${plural(inRange.length, "version satisfies", "versions satisfy")} ${rangeText}`
  if (live.length === 0) {
    return { _tag: "NoMatch", reason: `${satisfying} but ${inRange.length === 1 ? "it is" : "all are"} yanked; newest: ${inRange[0]!.version}` }
  }
  const yanked = inRange.length - live.length
  return forHost(live, yanked === 0 ? satisfying : `${satisfying} (${yanked} yanked)`)
}
