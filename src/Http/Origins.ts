/**
 * The `CORS_ORIGINS` setting: which web origins may call the API from a browser. Apart from the
 * CORS middleware (Cors.ts) so that the configuration can read it without importing the
 * middleware, which reads the configuration.
 */
import { Result } from "effect"

/** No origin (an empty set: no CORS headers at all), any origin (`*`), or these origins. */
export type CorsOrigins = "*" | ReadonlySet<string>

/**
 * `scheme://host[:port]`, an optional trailing slash and nothing else: no path, query, fragment
 * or user, and no `*` in the host (a wildcard would parse as a host name and never match).
 */
const originSyntax = /^https?:\/\/[^/?#@\s*\\]+\/?$/i

/** The origin an entry names, serialized as browsers send it in `Origin`; undefined when it names none. */
export const originOf = (entry: string): string | undefined =>
  originSyntax.test(entry) && URL.canParse(entry) ? new URL(entry).origin : undefined

/**
 * Reads `CORS_ORIGINS`: `*` alone, or a comma-separated list of origins; empty turns CORS off.
 * An entry that is not an origin fails with a message naming the setting and the entry.
 */
export const parseCorsOrigins = (raw: string): Result.Result<CorsOrigins, string> => {
  const entries = raw.split(",").map((entry) => entry.trim()).filter((entry) => entry !== "")
  if (entries.length === 1 && entries[0] === "*") return Result.succeed("*")
  const origins = new Set<string>()
  for (const entry of entries) {
    const origin = originOf(entry)
    if (origin === undefined) {
      return Result.fail(
        `CORS_ORIGINS must be "*" or a comma-separated list of origins (http(s)://host[:port], no path); got "${entry}"`
      )
    }
    origins.add(origin)
  }
  return Result.succeed(origins)
}
