/**
 * The manifest of a publish: the request's node fields and node_version as decoded (aliases
 * resolved, ranges normalised), without the personal access token. Its SHA-256 is stored on the
 * version, so that a retry of the publish (the same manifest, its first answer lost) is told
 * apart from another publish of the same number (a conflict).
 */
import { createHash } from "node:crypto"
import type { SemanticVersion } from "../Domain/Semver.ts"
import type { NewVersion, NodePatch } from "./Repo.ts"

/** A publish's version as decoded. */
export type VersionManifest = Omit<NewVersion, "node_id" | "status" | "version" | "manifest_sha256"> & {
  readonly version: SemanticVersion
}

/** JSON with keys sorted at every level and absent fields left out: equal meaning, equal text. */
const canonicalJson = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(canonicalJson).join(",")}]`
    : typeof value === "object" && value !== null
    ? `{${
      Object.keys(value).sort().filter((k) => (value as Record<string, unknown>)[k] !== undefined)
        .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(",")
    }}`
    : JSON.stringify(value)

/**
 * The manifest's digest. Parsed values count by their text (a version's sort key, a range's
 * intervals are derived from it), so the digest stays the same when their parsed form changes.
 */
export const manifestDigest = (node: NodePatch, version: VersionManifest): Buffer =>
  createHash("sha256").update(canonicalJson({
    node,
    node_version: {
      ...version,
      version: version.version.text,
      supported_host_version: version.supported_host_version?.text,
      supported_host_frontend_version: version.supported_host_frontend_version?.text
    }
  })).digest()
