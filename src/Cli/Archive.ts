/**
 * The node's zip: its files in the order given, each with the same fixed timestamp and a mode of
 * 0644 (0755 when the owner may execute it), so the same files always give the same bytes.
 */
import { Effect, FileSystem } from "effect"
import { createWriteStream } from "node:fs"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { pipeline } from "node:stream/promises"
import yazl from "yazl"
import { failed } from "./Failure.ts"

/**
 * 1980-01-01 00:00 in local time: zip's DOS timestamps hold local wall-clock fields, so building
 * the date from local fields writes the same bytes in every time zone.
 */
const fixedTime = () => new Date(1980, 0, 1, 0, 0, 0)

/** The path of an archive `name` in a new temporary directory, removed with everything in it when the scope closes. */
export const scratchArchive = (prefix: string, name: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const dir = yield* fs.makeTempDirectoryScoped({ prefix }).pipe(
      Effect.mapError((e) => failed("io_error", `cannot make a temporary directory: ${e.message}`))
    )
    return path.join(dir, name)
  })

/** Writes the zip of `files` (relative to `dir`) to `output`; its size in bytes. */
export const writeZip = (dir: string, files: ReadonlyArray<string>, output: string) =>
  Effect.tryPromise({
    try: async () => {
      const zip = new yazl.ZipFile()
      for (const file of files) {
        const full = path.join(dir, file)
        const stat = await fs.stat(full)
        zip.addFile(full, file, {
          mtime: fixedTime(),
          forceDosTimestamp: true,
          mode: (stat.mode & 0o100) !== 0 ? 0o100755 : 0o100644,
          compress: true
        })
      }
      zip.end()
      await pipeline(zip.outputStream, createWriteStream(output, { mode: 0o600 }))
      return (await fs.stat(output)).size
    },
    catch: (e) => failed("io_error", `cannot write the archive: ${e instanceof Error ? e.message : String(e)}`)
  })
