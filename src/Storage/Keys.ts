/**
 * Where an archive is stored: its key in the store, which the catalogue's SQL also renders into
 * public download URLs (Catalog/Records.ts), so the two cannot drift apart.
 */

/** What follows the version's id in its archive's key. */
export const archiveKeySuffix = ".zip"

/** An archive is stored under its version's id: never reused, and safe as a file name. */
export const archiveKey = (versionId: string) => `${versionId}${archiveKeySuffix}`
