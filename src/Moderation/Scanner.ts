/**
 * Scans a node pack's archive with the rule set (Rules.ts): every source and metadata file is read
 * (inflated as it streams, never past its limit) and matched line by line; every entry that may
 * be a native program has its first bytes looked at. The archive already passed the publishing
 * checks (Publishing/Checks.ts: safe names, bounded entry count and uncompressed size), and the
 * scanner bounds its own reading besides: a file over `maxFileBytes`, or past `maxReadBytes` for
 * the whole archive, is not read and is recorded as the finding `not-scanned`; binary data under
 * a source file's name is the finding `binary-source`. What it cannot read is a finding, and an
 * archive it cannot open at all is one too. The rules run where FileScanner puts them (a thread
 * of their own, in the service): the scan fails (ScanFailed) only when that gave no answer for a
 * file, in time or at all.
 */
import { Effect } from "effect"
import type yauzl from "yauzl"
import { openZip, type ZipSource } from "../Storage/Zip.ts"
import { FileScanner, ScanFailed } from "./FileScanner.ts"
import { entryRules, type Finding, ruleSetVersion, scannedFile, type Severity } from "./Rules.ts"

export interface ScanLimits {
  /** The largest file read whole. */
  readonly maxFileBytes: number
  /** The most bytes read from one archive, all files together. */
  readonly maxReadBytes: number
  /** The most findings kept (the rest are counted). */
  readonly maxFindings: number
}

export const defaultScanLimits: ScanLimits = { maxFileBytes: 1024 * 1024, maxReadBytes: 32 * 1024 * 1024, maxFindings: 200 }

export interface ScanResult {
  readonly ruleSetVersion: string
  readonly findings: ReadonlyArray<Finding>
  /** Findings past `maxFindings`, not kept. */
  readonly dropped: number
  readonly filesScanned: number
}

/** The most severe of the findings, if any. */
export const worstSeverity = (findings: ReadonlyArray<Finding>): Severity | undefined =>
  findings.some((f) => f.severity === "high")
    ? "high"
    : findings.some((f) => f.severity === "medium")
    ? "medium"
    : findings.length > 0
    ? "low"
    : undefined

/** Extensions of native programs and libraries, and of entries that might be one (none at all). */
const nativeCandidate = (name: string) => {
  const base = name.slice(name.lastIndexOf("/") + 1)
  return !base.includes(".") || /\.(exe|dll|so(\.\d+)*|dylib|pyd|node|elf|scr|com|msi|appimage)$/i.test(base)
}

/** Whether the first bytes are those of a PE, ELF or Mach-O file. */
export const nativeMagic = (head: Uint8Array) => {
  if (head.length >= 2 && head[0] === 0x4d && head[1] === 0x5a) return "a Windows executable (PE)"
  if (head.length >= 4 && head[0] === 0x7f && head[1] === 0x45 && head[2] === 0x4c && head[3] === 0x46) return "an ELF executable or library"
  const word = head.length >= 4 ? Buffer.from(head.subarray(0, 4)).readUInt32BE(0) : 0
  if ([0xfeedface, 0xfeedfacf, 0xcefaedfe, 0xcffaedfe, 0xcafebabe].includes(word)) return "a Mach-O executable or library"
  return undefined
}

/** Reads at most `limit` bytes of an entry, inflating only as far as that. */
const readEntry = (zip: yauzl.ZipFile, entry: yauzl.Entry, limit: number) =>
  new Promise<Uint8Array>((resolve, reject) => {
    zip.openReadStream(entry, (err, stream) => {
      if (err || !stream) return reject(err ?? new Error("no stream"))
      const chunks: Array<Buffer> = []
      let bytes = 0
      stream.on("data", (chunk: Buffer) => {
        chunks.push(chunk)
        bytes += chunk.length
        if (bytes >= limit) {
          stream.destroy()
          resolve(Buffer.concat(chunks).subarray(0, limit))
        }
      })
      stream.on("error", reject)
      stream.on("end", () => resolve(Buffer.concat(chunks)))
    })
  })

/** Scans the archive at `source`. */
export const scanArchive = (
  source: ZipSource,
  limits: ScanLimits = defaultScanLimits
): Effect.Effect<ScanResult, ScanFailed, FileScanner> =>
  Effect.gen(function*() {
    const scanner = yield* FileScanner
    return yield* scanWith(scanner, source, limits)
  })

const scanWith = (scanner: FileScanner["Service"], source: ZipSource, limits: ScanLimits) =>
  Effect.callback<ScanResult, ScanFailed>((resume) => {
    const findings: Array<Finding> = []
    let dropped = 0
    let filesScanned = 0
    let readBytes = 0
    let settled = false
    let zip: yauzl.ZipFile | undefined
    const add = (more: ReadonlyArray<Finding>) => {
      for (const f of more) {
        if (findings.length < limits.maxFindings) findings.push(f)
        else dropped += 1
      }
    }
    const entryFinding = (rule: { readonly id: string; readonly severity: Severity }, file: string, excerpt: string): Finding => ({
      rule: rule.id,
      severity: rule.severity,
      file,
      excerpt
    })
    const done = () => {
      if (settled) return
      settled = true
      zip?.close()
      resume(Effect.succeed({ ruleSetVersion, findings, dropped, filesScanned }))
    }
    const failed = (failure: ScanFailed) => {
      if (settled) return
      settled = true
      zip?.close()
      resume(Effect.fail(failure))
    }
    const unreadable = (message: string) => {
      add([entryFinding(entryRules.notScanned, "(archive)", `the archive could not be read: ${message}`)])
      done()
    }

    const inspect = async (zipfile: yauzl.ZipFile, entry: yauzl.Entry) => {
      const name = (entry.fileName as unknown as Buffer).toString("utf8")
      if (name.endsWith("/")) return
      if (nativeCandidate(name) && entry.uncompressedSize >= 4) {
        const kind = nativeMagic(await readEntry(zipfile, entry, 4))
        if (kind !== undefined) add([entryFinding(entryRules.nativeExecutable, name, `${kind}, ${entry.uncompressedSize} bytes`)])
        return
      }
      if (!scannedFile(name)) return
      if (entry.uncompressedSize > limits.maxFileBytes || readBytes + entry.uncompressedSize > limits.maxReadBytes) {
        const why = entry.uncompressedSize > limits.maxFileBytes ? `larger than ${limits.maxFileBytes} bytes` : "past the archive's reading budget"
        return add([entryFinding(entryRules.notScanned, name, `not read: ${entry.uncompressedSize} bytes, ${why}`)])
      }
      // read one byte past the declared size: an entry whose header lies about its size is caught
      const bytes = await readEntry(zipfile, entry, entry.uncompressedSize + 1)
      readBytes += bytes.length
      if (bytes.length > entry.uncompressedSize) {
        return add([entryFinding(entryRules.notScanned, name, "not read: it holds more than its header declares")])
      }
      const scan = await scanner.scanFile(name, bytes)
      if (!scan.text) return add([entryFinding(entryRules.notText, name, `${bytes.length} bytes that are not UTF-8 text`)])
      filesScanned += 1
      add(scan.findings)
    }

    openZip(source, { lazyEntries: true, decodeStrings: false, autoClose: false, validateEntrySizes: true }, (err, zipfile) => {
      if (err || !zipfile) return unreadable(err?.message ?? "unknown error")
      zip = zipfile
      zipfile.on("error", (e: Error) => unreadable(e.message))
      zipfile.on("entry", (entry: yauzl.Entry) => {
        inspect(zipfile, entry).then(
          () => settled || zipfile.readEntry(),
          (e: unknown) => {
            if (e instanceof ScanFailed) return failed(e)
            const name = (entry.fileName as unknown as Buffer).toString("utf8")
            add([entryFinding(entryRules.notScanned, name, `not read: ${e instanceof Error ? e.message : String(e)}`)])
            if (!settled) zipfile.readEntry()
          }
        )
      })
      zipfile.on("end", done)
      zipfile.readEntry()
    })
    return Effect.sync(() => {
      settled = true
      zip?.close()
    })
  })
