/**
 * The `HTTP_EDGE_OFF` setting: edge pieces to leave out, to measure what they cost (bench/README.md,
 * "edge observability"). Apart from the edge (Edge.ts) so that the configuration can read it
 * without importing the edge, which reads the configuration.
 */
import { Result } from "effect"

/** The pieces that may be left out: the observing ones, which no answer depends on. */
export const optionalPieces = ["access-log", "request-metrics", "request-id"] as const
export type OptionalPiece = typeof optionalPieces[number]

const isOptional = (name: string): name is OptionalPiece => (optionalPieces as ReadonlyArray<string>).includes(name)

/** Reads `HTTP_EDGE_OFF`: a comma-separated list of optional pieces; empty leaves every piece on. */
export const parseEdgeOff = (raw: string): Result.Result<ReadonlySet<OptionalPiece>, string> => {
  const off = new Set<OptionalPiece>()
  for (const entry of raw.split(",").map((e) => e.trim()).filter((e) => e !== "")) {
    if (!isOptional(entry)) return Result.fail(`HTTP_EDGE_OFF lists pieces among ${optionalPieces.join(", ")}; got "${entry}"`)
    off.add(entry)
  }
  return Result.succeed(off)
}
