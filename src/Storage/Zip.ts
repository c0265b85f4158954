/**
 * Zip archives where they are stored: opened with yauzl from a file of the local store, read by
 * ranges from an object store, or from memory (the publishing checks and the moderation scanner
 * read them so).
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

/** An archive for the readers: stored content, or a small archive read whole into memory. */
export type ZipSource = StoredContent | Buffer

type Opened = (err: Error | null, zipfile?: yauzl.ZipFile) => void

/** Opens the zip at `source`: a file, content read by ranges (an object in the store), or bytes in memory. */
export const openZip = (source: ZipSource, options: yauzl.Options, callback: Opened) =>
  typeof source === "string"
    ? yauzl.open(source, options, callback)
    : Buffer.isBuffer(source)
    ? yauzl.fromBuffer(source, options, callback)
    : yauzl.fromRandomAccessReader(new RangeReader(source), source.bytes, options, callback)

