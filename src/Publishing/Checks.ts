/**
 * The automated checks of an uploaded archive, run on the complete upload before its verdict commits: a
 * readable zip, every entry a plain relative path (no absolute path, no `..` segment, no drive
 * letter, no backslash, no NUL), at least one file, and a bounded total of the sizes its entries
 * declare once uncompressed (a zip bomb fails here without a byte being inflated).
 */
import { Data, Effect } from "effect"
import type yauzl from "yauzl"
import { openZip, type ZipSource } from "../Storage/Zip.ts"

export interface CheckLimits {
  /** The most bytes all entries may declare once uncompressed. */
  readonly maxUncompressedBytes: number
  readonly maxEntries: number
}

/** One check an archive failed: its stable name (the 422's `details`) and what it found. */
export interface CheckFailure {
  readonly check: "readable_zip" | "entry_names" | "entry_count" | "uncompressed_size" | "has_files"
  readonly message: string
}

/** What the checks concluded: every check that failed, not only the first, so one fix can cover them all. */
export type ArchiveVerdict = Data.TaggedEnum<{
  Passed: { readonly files: number; readonly uncompressedBytes: number }
  Failed: { readonly failures: ReadonlyArray<CheckFailure> }
}>
export const ArchiveVerdict = Data.taggedEnum<ArchiveVerdict>()

/** At most this many unsafe entry names are named: the rest are counted. */
const namedUnsafeEntries = 10

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

/**
 * Checks the zip at `source`; never fails: a bad archive is a result, not an error. Unsafe entry
 * names are all gathered (the first ten named); a limit passed (entries, uncompressed size) ends
 * the reading, with what was found until then.
 */
export const checkArchive = (source: ZipSource, limits: CheckLimits): Effect.Effect<ArchiveVerdict> =>
  Effect.callback<ArchiveVerdict>((resume) => {
    let settled = false
    let zip: yauzl.ZipFile | undefined
    const done = (result: ArchiveVerdict) => {
      if (settled) return
      settled = true
      zip?.close()
      resume(Effect.succeed(result))
    }
    const unreadable = (message: string) =>
      ArchiveVerdict.Failed({ failures: [{ check: "readable_zip", message: `not a readable zip archive: ${message}` }] })
    // names stay bytes: yauzl's own decoding refuses unsafe names with errors we want to word ourselves
    openZip(source, { lazyEntries: true, decodeStrings: false, autoClose: false, validateEntrySizes: true }, (err, zipfile) => {
      if (err || !zipfile) return done(unreadable(err?.message ?? "unknown error"))
      zip = zipfile
      let files = 0
      let entries = 0
      let uncompressedBytes = 0
      const unsafe: Array<string> = []
      const limit: Array<CheckFailure> = []
      const verdict = (): ArchiveVerdict => {
        const failures: Array<CheckFailure> = []
        if (unsafe.length > 0) {
          const more = unsafe.length > namedUnsafeEntries ? `; and ${unsafe.length - namedUnsafeEntries} more` : ""
          failures.push({ check: "entry_names", message: unsafe.slice(0, namedUnsafeEntries).join("; ") + more })
        }
        failures.push(...limit)
        // a limit ends the reading early: the archive's files were not all counted
        if (limit.length === 0 && files === 0) failures.push({ check: "has_files", message: "the archive holds no file" })
        return failures.length > 0 ? ArchiveVerdict.Failed({ failures }) : ArchiveVerdict.Passed({ files, uncompressedBytes })
      }
      // what was found before the zip turned out unreadable is kept beside it
      zipfile.on("error", (e: Error) => {
        limit.push({ check: "readable_zip", message: `not a readable zip archive: ${e.message}` })
        done(verdict())
      })
      zipfile.on("entry", (entry: yauzl.Entry) => {
        entries += 1
        const raw = entry.fileName as unknown as Buffer
        const name = raw.toString("utf8")
        const why = unsafeEntryName(name)
        if (why !== undefined) unsafe.push(why)
        if (entries > limits.maxEntries) {
          limit.push({ check: "entry_count", message: `more than ${limits.maxEntries} entries` })
          return done(verdict())
        }
        uncompressedBytes += entry.uncompressedSize
        if (uncompressedBytes > limits.maxUncompressedBytes) {
          limit.push({ check: "uncompressed_size", message: `the entries uncompress to more than ${limits.maxUncompressedBytes} bytes` })
          return done(verdict())
        }
        if (!name.endsWith("/")) files += 1
        zipfile.readEntry()
      })
      zipfile.on("end", () => done(verdict()))
      zipfile.readEntry()
    })
    return Effect.sync(() => {
      settled = true
      zip?.close()
    })
  })
