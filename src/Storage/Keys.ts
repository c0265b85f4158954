/**
 * Where an archive is stored: its key in the store, which the catalogue's SQL also renders into
 * public download URLs (Catalog/Records.ts), so the two cannot drift apart; and how the store
 * serves it to a client that fetches it there.
 */
import type { Served } from "./Storage.ts"

/** What follows the version's id in its archive's key. */
export const archiveKeySuffix = ".zip"

/** An archive is stored under its version's id: never reused, and safe as a file name. */
export const archiveKey = (versionId: string) => `${versionId}${archiveKeySuffix}`

/** How a store serves an archive: as a download named after the node and version, to anyone. */
export const archiveServed = (nodeId: string, version: string): Served => ({
  contentDisposition: `attachment; filename="${nodeId}-${version}.zip"`,
  public: true
})
