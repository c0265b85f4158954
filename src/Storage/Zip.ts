/**
 * Zip archives where they are stored: opened with yauzl from a file of the local store, or read by
 * ranges from an object store (the publishing checks and the moderation scanner read them so).
 */
import yauzl from "yauzl"
import type { RangedContent, StoredContent } from "./Storage.ts"

class RangeReader extends yauzl.RandomAccessReader {
  constructor(private readonly content: RangedContent) {
    super()
  }
  override _readStreamForRange(start: number, end: number) {
    return this.content.range(start, end)
  }
}

type Opened = (err: Error | null, zipfile?: yauzl.ZipFile) => void

/** Opens the zip at `source`: a file, or content read by ranges (an object in the store). */
export const openZip = (source: StoredContent, options: yauzl.Options, callback: Opened) =>
  typeof source === "string"
    ? yauzl.open(source, options, callback)
    : yauzl.fromRandomAccessReader(new RangeReader(source), source.bytes, options, callback)

