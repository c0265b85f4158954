/**
 * The automated checks of an uploaded archive, run on the complete upload before its verdict commits: a
 * readable zip, every entry a plain relative path (no absolute path, no `..` segment, no drive
 * letter, no backslash, no NUL), at least one file, and a bounded total of the sizes its entries
 * declare once uncompressed (a zip bomb fails here without a byte being inflated).
 */
import { Data, Effect } from "effect"
import yauzl from "yauzl"
import type { RangedContent, StoredContent } from "../Storage/Storage.ts"

class RangeReader extends yauzl.RandomAccessReader {
  constructor(private readonly content: RangedContent) {
    super()
  }
  override _readStreamForRange(start: number, end: number) {
    return this.content.range(start, end)
  }
}

type Opened = (err: Error | null, zipfile?: yauzl.ZipFile) => void

const openZip = (source: StoredContent, options: yauzl.Options, callback: Opened) =>
  typeof source === "string"
    ? yauzl.open(source, options, callback)
    : yauzl.fromRandomAccessReader(new RangeReader(source), source.bytes, options, callback)

export interface CheckLimits {
  /** The most bytes all entries may declare once uncompressed. */
  readonly maxUncompressedBytes: number
  readonly maxEntries: number
}

/** What the checks concluded. */
export type ArchiveVerdict = Data.TaggedEnum<{
  Passed: { readonly files: number; readonly uncompressedBytes: number }
  Failed: { readonly reason: string }
}>
export const ArchiveVerdict = Data.taggedEnum<ArchiveVerdict>()

/** Why an entry name is not a plain relative path, or undefined when it is one. */
export const unsafeEntryName = (name: string): string | undefined => {
  if (name === "") return "an entry has an empty name"
  if (name.includes("\u0000")) return `entry '${name.replace(/\u0000/g, "\\0")}' has a NUL character in its name`
  if (name.includes("\\")) return `entry '${name}' has a backslash in its name`
  if (name.startsWith("/")) return `entry '${name}' is an absolute path`
  if (/^[A-Za-z]:/.test(name)) return `entry '${name}' starts with a drive letter`
  if (name.split("/").some((segment) => segment === "..")) return `entry '${name}' has a '..' segment`
  return undefined
}

/** Checks the zip at `source`; never fails: a bad archive is a result, not an error. */
export const checkArchive = (source: StoredContent, limits: CheckLimits): Effect.Effect<ArchiveVerdict> =>
  Effect.callback<ArchiveVerdict>((resume) => {
    let settled = false
    let zip: yauzl.ZipFile | undefined
    const done = (result: ArchiveVerdict) => {
      if (settled) return
      settled = true
      zip?.close()
      resume(Effect.succeed(result))
    }
    // names stay bytes: yauzl's own decoding refuses unsafe names with errors we want to word ourselves
    openZip(source, { lazyEntries: true, decodeStrings: false, autoClose: false, validateEntrySizes: true }, (err, zipfile) => {
      if (err || !zipfile) return done(ArchiveVerdict.Failed({ reason: `not a readable zip archive: ${err?.message ?? "unknown error"}` }))
      zip = zipfile
      let files = 0
      let entries = 0
      let uncompressedBytes = 0
      zipfile.on("error", (e: Error) => done(ArchiveVerdict.Failed({ reason: `not a readable zip archive: ${e.message}` })))
      zipfile.on("entry", (entry: yauzl.Entry) => {
        entries += 1
        const raw = entry.fileName as unknown as Buffer
        const unsafe = unsafeEntryName(raw.toString("utf8"))
        if (unsafe !== undefined) return done(ArchiveVerdict.Failed({ reason: unsafe }))
        if (entries > limits.maxEntries) return done(ArchiveVerdict.Failed({ reason: `more than ${limits.maxEntries} entries` }))
        uncompressedBytes += entry.uncompressedSize
        if (uncompressedBytes > limits.maxUncompressedBytes) {
          return done(ArchiveVerdict.Failed({ reason: `the entries uncompress to more than ${limits.maxUncompressedBytes} bytes` }))
        }
        if (!raw.toString("utf8").endsWith("/")) files += 1
        zipfile.readEntry()
      })
      zipfile.on("end", () =>
        done(
          files === 0
            ? ArchiveVerdict.Failed({ reason: "the archive holds no file" })
            : ArchiveVerdict.Passed({ files, uncompressedBytes })
        ))
      zipfile.readEntry()
    })
    return Effect.sync(() => {
      settled = true
      zip?.close()
    })
  })
