/**
 * Zip archives for the publishing tests: well-formed ones from yazl, and hand-written ones with
 * entry names yazl refuses to write (`../evil`, `/etc/passwd`, `C:\x`), which the registry's
 * checks must catch.
 */
import { Buffer } from "node:buffer"
import { crc32 } from "node:zlib"
import yazl from "yazl"

/** A well-formed zip of these files (deflated), built by yazl. */
export const zipOf = (files: Readonly<Record<string, string | Uint8Array>>): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const zip = new yazl.ZipFile()
    for (const [name, content] of Object.entries(files)) {
      zip.addBuffer(Buffer.from(content), name)
    }
    zip.end()
    const chunks: Array<Buffer> = []
    zip.outputStream.on("data", (c: Buffer) => chunks.push(c))
    zip.outputStream.on("error", reject)
    zip.outputStream.on("end", () => resolve(Buffer.concat(chunks)))
  })

/**
 * A zip of stored (uncompressed) entries with exactly these names, written byte by byte; an
 * entry may declare a larger uncompressed size than it holds (a zip bomb's header).
 */
export const rawZip = (
  entries: ReadonlyArray<{ readonly name: string; readonly content: string | Uint8Array; readonly declaredSize?: number }>
): Buffer => {
  const locals: Array<Buffer> = []
  const centrals: Array<Buffer> = []
  let offset = 0
  for (const e of entries) {
    const name = Buffer.from(e.name, "utf8")
    // bytes are used as they are (the benchmark's archive holds 100 MiB of them), not copied
    const data = typeof e.content === "string" ? Buffer.from(e.content, "utf8") : Buffer.from(e.content.buffer, e.content.byteOffset, e.content.byteLength)
    const crc = crc32(data)
    const size = e.declaredSize ?? data.length
    const local = Buffer.alloc(30)
    local.writeUInt32LE(0x04034b50, 0)
    local.writeUInt16LE(20, 4) // version needed
    local.writeUInt16LE(0x0800, 6) // names are UTF-8
    local.writeUInt16LE(0, 8) // stored
    local.writeUInt32LE(crc, 14)
    local.writeUInt32LE(data.length, 18)
    local.writeUInt32LE(size, 22)
    local.writeUInt16LE(name.length, 26)
    locals.push(local, name, data)
    const central = Buffer.alloc(46)
    central.writeUInt32LE(0x02014b50, 0)
    central.writeUInt16LE(20, 4)
    central.writeUInt16LE(20, 6)
    central.writeUInt16LE(0x0800, 8)
    central.writeUInt16LE(0, 10)
    central.writeUInt32LE(crc, 16)
    central.writeUInt32LE(data.length, 20)
    central.writeUInt32LE(size, 24)
    central.writeUInt16LE(name.length, 28)
    central.writeUInt32LE(offset, 42)
    centrals.push(central, name)
    offset += local.length + name.length + data.length
  }
  const directory = Buffer.concat(centrals)
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0)
  end.writeUInt16LE(entries.length, 8)
  end.writeUInt16LE(entries.length, 10)
  end.writeUInt32LE(directory.length, 12)
  end.writeUInt32LE(offset, 16)
  return Buffer.concat([...locals, directory, end])
}
