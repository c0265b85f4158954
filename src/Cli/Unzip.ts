/**
 * Unpacking a downloaded archive without trusting it. An archive is refused, before anything is
 * in place, when an entry's name is absolute (`/etc/x`, `C:x`), has a `..` (or `.`, or empty)
 * segment or a backslash, when it is a symbolic link or a special file, when two entries have the
 * same name (also up to case and Unicode normalisation: they would overwrite each other on some
 * file systems) or a file is also a directory, when it is encrypted, or when it has more entries
 * or more uncompressed bytes than the limits allow.
 *
 * Files are written into a new directory beside the target, which is renamed into place only
 * once every entry is written; a refusal removes it. Nothing outside that directory is touched.
 */
import { Effect, Result } from "effect"
import { createWriteStream } from "node:fs"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Transform } from "node:stream"
import { pipeline } from "node:stream/promises"
import yauzl from "yauzl"
import { CliFailure, failed, serverFault, usage } from "./Failure.ts"

export interface Limits {
  readonly maxEntries: number
  /** Sum of the entries' uncompressed sizes. */
  readonly maxBytes: number
}

export const defaultLimits: Limits = { maxEntries: 10_000, maxBytes: 1024 * 1024 * 1024 }

const unsafe = (message: string) => serverFault("unsafe_archive", message)

/**
 * An entry name as a relative path under the target (no trailing `/`), or why it is refused.
 * `/`-separated as zip names are; directories end in `/`.
 */
export const checkEntryName = (name: string): Result.Result<string, string> => {
  if (name === "" || name === "/") return Result.fail("an entry has an empty name")
  if (name.includes("\0")) return Result.fail(`entry ${JSON.stringify(name)} has a NUL character`)
  if (name.includes("\\")) return Result.fail(`entry ${JSON.stringify(name)} has a backslash`)
  if (name.startsWith("/") || /^[A-Za-z]:/.test(name)) return Result.fail(`entry ${JSON.stringify(name)} is an absolute path`)
  const relative = name.endsWith("/") ? name.slice(0, -1) : name
  const segments = relative.split("/")
  if (segments.includes("..")) return Result.fail(`entry ${JSON.stringify(name)} has a '..' segment`)
  if (segments.some((s) => s === "" || s === ".")) return Result.fail(`entry ${JSON.stringify(name)} has an empty or '.' segment`)
  // the name is already plain; resolving it is the last word on where it would land
  const root = path.posix.join("/", "target")
  const landed = path.posix.resolve(root, relative)
  if (!landed.startsWith(root + "/")) return Result.fail(`entry ${JSON.stringify(name)} escapes the target directory`)
  return Result.succeed(relative)
}

/** The key under which two names would land on the same file on a case-insensitive file system. */
const foldKey = (relative: string) => relative.normalize("NFC").toLowerCase()

/** What a unix-made entry is, by the mode in its external attributes; unknown for other makers. */
const entryType = (entry: yauzl.Entry): "file" | "directory" | "symlink" | "special" | "unknown" => {
  const madeBy = entry.versionMadeBy >> 8
  // 3: unix, 19: OS X; other makers keep no unix mode there
  if (madeBy !== 3 && madeBy !== 19) return "unknown"
  const type = (entry.externalFileAttributes >>> 16) & 0o170000
  return type === 0 ? "unknown" : type === 0o100000 ? "file" : type === 0o040000 ? "directory" : type === 0o120000 ? "symlink" : "special"
}

/** The mode a file is written with: 0755 if its owner could execute it in the archive, 0644 otherwise. */
const fileMode = (entry: yauzl.Entry) => ((entry.externalFileAttributes >>> 16) & 0o100) !== 0 ? 0o755 : 0o644

/** Counts the bytes passing through, failing beyond the limit left. */
const byteCounter = (name: string, state: { written: number }, limit: number) =>
  new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      state.written += chunk.length
      if (state.written > limit) callback(unsafe(`the archive holds more than ${limit} bytes (at ${name})`))
      else callback(null, chunk)
    }
  })

/** Writes the archive's entries into `into`, an empty directory; the number of files and bytes. */
const extractInto = async (zipFile: string, into: string, limits: Limits) => {
  const zip = await yauzl.openPromise(zipFile, { decodeStrings: false, validateEntrySizes: true, autoClose: false })
  try {
    if (zip.entryCount > limits.maxEntries) {
      throw unsafe(`the archive has ${zip.entryCount} entries, more than the limit of ${limits.maxEntries}`)
    }
    const names = new Set<string>()
    const folded = new Map<string, string>()
    const files = new Set<string>()
    const directories = new Set<string>()
    const state = { written: 0 }
    let declared = 0
    let fileCount = 0
    for await (const entry of zip.eachEntry()) {
      const raw = yauzl.getFileNameLowLevel(
        entry.generalPurposeBitFlag,
        entry.fileNameRaw,
        entry.extraFields,
        // strict: a backslash is kept, and so refused, rather than read as a separator
        true
      )
      const checked = checkEntryName(raw)
      if (Result.isFailure(checked)) throw unsafe(checked.failure)
      const relative = checked.success
      const type = entryType(entry)
      const isDirectory = raw.endsWith("/") || type === "directory"
      if (type === "symlink") throw unsafe(`entry ${JSON.stringify(raw)} is a symbolic link`)
      if (type === "special") throw unsafe(`entry ${JSON.stringify(raw)} is not a regular file or directory`)
      if (entry.isEncrypted()) throw unsafe(`entry ${JSON.stringify(raw)} is encrypted`)
      if (names.has(relative)) throw unsafe(`entry ${JSON.stringify(relative)} appears twice`)
      const key = foldKey(relative)
      const twin = folded.get(key)
      if (twin !== undefined) throw unsafe(`entries ${JSON.stringify(twin)} and ${JSON.stringify(relative)} differ only in case`)
      names.add(relative)
      folded.set(key, relative)
      // every parent is a directory, and no directory is a file
      const segments = relative.split("/")
      for (let depth = 1; depth < segments.length; depth++) {
        const parent = segments.slice(0, depth).join("/")
        if (files.has(parent)) throw unsafe(`entry ${JSON.stringify(parent)} is both a file and a directory`)
        directories.add(parent)
      }
      if (isDirectory) {
        if (files.has(relative)) throw unsafe(`entry ${JSON.stringify(relative)} is both a file and a directory`)
        directories.add(relative)
        await fs.mkdir(path.join(into, relative), { recursive: true, mode: 0o755 })
        continue
      }
      if (directories.has(relative)) throw unsafe(`entry ${JSON.stringify(relative)} is both a file and a directory`)
      files.add(relative)
      declared += entry.uncompressedSize
      if (declared > limits.maxBytes) {
        throw unsafe(`the archive unpacks to more than ${limits.maxBytes} bytes (at ${relative})`)
      }
      const destination = path.join(into, ...segments)
      // the last word: whatever the checks above missed, nothing lands outside `into`
      if (!destination.startsWith(into + path.sep)) throw unsafe(`entry ${JSON.stringify(raw)} escapes the target directory`)
      await fs.mkdir(path.dirname(destination), { recursive: true, mode: 0o755 })
      const content = await zip.openReadStreamPromise(entry)
      await pipeline(
        content,
        byteCounter(relative, state, limits.maxBytes),
        // "wx": never through an existing file (or a link someone put there)
        createWriteStream(destination, { flags: "wx", mode: fileMode(entry) })
      )
      fileCount++
    }
    return { files: fileCount, bytes: state.written }
  } finally {
    zip.close()
  }
}

/** Refusals pass through; yauzl's own complaints (a corrupt zip, sizes that lie) are unsafe archives too. */
const asFailure = (e: unknown): CliFailure =>
  e instanceof CliFailure
    ? e
    : typeof e === "object" && e !== null && "code" in e && typeof e.code === "string" && e.code.startsWith("E")
    ? failed("io_error", e instanceof Error ? e.message : String(e))
    : unsafe(`the archive is not a valid zip: ${e instanceof Error ? e.message : String(e)}`)

export interface ExtractOptions {
  readonly limits?: Limits | undefined
  /** Replace an existing target; otherwise an existing target is refused. */
  readonly replace?: boolean | undefined
}

/**
 * Unpacks `zipFile` into the directory `target`, which must not exist (unless `replace`): all of it
 * or, on any refusal or failure, nothing.
 */
export const extractZip = (zipFile: string, target: string, options: ExtractOptions = {}) =>
  Effect.tryPromise({
    try: async () => {
      const limits = options.limits ?? defaultLimits
      const absolute = path.resolve(target)
      const parent = path.dirname(absolute)
      const exists = await fs.lstat(absolute).then(() => true, () => false)
      if (exists && options.replace !== true) throw usage("target_exists", `${absolute} exists: pass --force to replace it`)
      await fs.mkdir(parent, { recursive: true })
      const staging = await fs.mkdtemp(path.join(parent, `.${path.basename(absolute)}.partial-`))
      try {
        const result = await extractInto(zipFile, staging, limits)
        await fs.chmod(staging, 0o755)
        if (exists) {
          const old = await fs.mkdtemp(path.join(parent, `.${path.basename(absolute)}.old-`))
          await fs.rename(absolute, path.join(old, "previous"))
          await fs.rename(staging, absolute)
          await fs.rm(old, { recursive: true, force: true })
        } else {
          await fs.rename(staging, absolute)
        }
        return { ...result, target: absolute }
      } catch (e) {
        await fs.rm(staging, { recursive: true, force: true })
        throw e
      }
    },
    catch: asFailure
  })
