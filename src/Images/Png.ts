/**
 * A minimal PNG encoder (8-bit RGB, no interlace, one IDAT chunk), enough for the simulated
 * vendor's images to open in any image library. The CRC is computed here: `zlib.crc32` needs a
 * newer Node than the service still runs on.
 */
import { deflateSync } from "node:zlib"

/** An RGB picture: `pixels` holds `width * height` triples, row by row from the top. */
export interface RgbImage {
  readonly width: number
  readonly height: number
  readonly pixels: Uint8Array
}

const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

/** The CRC-32 table of PNG's polynomial (ISO 3309, reflected 0xedb88320). */
const crcTable = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})

export const crc32 = (bytes: Uint8Array): number => {
  let c = 0xffffffff
  for (const byte of bytes) c = crcTable[(c ^ byte) & 0xff]! ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}

/** A chunk: its length, its type, its data and the CRC of type and data. */
const chunk = (type: string, data: Uint8Array) => {
  const typed = Buffer.concat([Buffer.from(type, "latin1"), data])
  const length = Buffer.alloc(4)
  length.writeUInt32BE(data.length)
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(typed))
  return Buffer.concat([length, typed, crc])
}

const header = (width: number, height: number) => {
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr[8] = 8 // bits per sample
  ihdr[9] = 2 // colour type: RGB
  // compression, filter method and interlace stay 0: deflate, adaptive filtering, none
  return ihdr
}

/** The scanlines as PNG filters them: each row after its filter type byte, 0 (none). */
const scanlines = ({ height, pixels, width }: RgbImage) => {
  const stride = width * 3
  const raw = Buffer.alloc(height * (stride + 1))
  for (let y = 0; y < height; y++) raw.set(pixels.subarray(y * stride, (y + 1) * stride), y * (stride + 1) + 1)
  return raw
}

export const encodePng = (image: RgbImage): Buffer => {
  if (!Number.isInteger(image.width) || !Number.isInteger(image.height) || image.width < 1 || image.height < 1) {
    throw new RangeError(`a PNG is at least 1x1 pixels, not ${image.width}x${image.height}`)
  }
  if (image.pixels.length !== image.width * image.height * 3) {
    throw new RangeError(`${image.width}x${image.height} RGB pixels are ${image.width * image.height * 3} bytes, not ${image.pixels.length}`)
  }
  return Buffer.concat([
    signature,
    chunk("IHDR", header(image.width, image.height)),
    chunk("IDAT", deflateSync(scanlines(image))),
    chunk("IEND", new Uint8Array(0))
  ])
}
