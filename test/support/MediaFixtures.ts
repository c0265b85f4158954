/**
 * The first bytes of media files of each format the upload sniffer knows (src/MediaStorage/Sniff.ts),
 * written here from the formats' specifications, each with the type it must be served as. Each is
 * a valid file head: a real 1x1 PNG, a WAV header of PCM samples, an Ogg page with an Opus head, an
 * EBML header of a WebM file, and so on; tests append any bytes after them.
 */
import { PNG } from "pngjs"

const bytes = (...parts: ReadonlyArray<string | ReadonlyArray<number> | Buffer>) =>
  Buffer.concat(parts.map((part) => (typeof part === "string" ? Buffer.from(part, "latin1") : Buffer.isBuffer(part) ? part : Buffer.from(part))))

const le32 = (n: number) => [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, (n >>> 24) & 0xff]
const le16 = (n: number) => [n & 0xff, (n >> 8) & 0xff]

/** A real 1x1 RGBA PNG. */
export const onePixelPng = (): Buffer => {
  const png = new PNG({ width: 1, height: 1 })
  png.data.set([200, 30, 30, 255])
  return PNG.sync.write(png)
}

/** A WAV header (RIFF, `fmt ` PCM 16-bit mono 8 kHz, `data`) and two samples. */
const wav = bytes("RIFF", le32(40), "WAVE", "fmt ", le32(16), le16(1), le16(1), le32(8000), le32(16000), le16(2), le16(16), "data", le32(4), [0, 0, 0x10, 0])

/** An Ogg page (27 header bytes, one segment) whose packet is the codec's identification header. */
const oggPage = (packet: Buffer) =>
  bytes("OggS", [0, 2], [0, 0, 0, 0, 0, 0, 0, 0], le32(0x1234), le32(0), le32(0), [1, packet.length], packet)

/** An ISO BMFF `ftyp` box of `major` and compatible brands. */
const ftyp = (major: string, ...compatible: ReadonlyArray<string>) =>
  bytes([0, 0, 0, 16 + 4 * compatible.length], "ftyp", major, [0, 0, 2, 0], ...compatible)

/** An EBML header of `docType` (version 1, the element sizes of a real muxer's). */
const ebml = (docType: string) =>
  bytes([0x1a, 0x45, 0xdf, 0xa3, 0x80 | (23 + docType.length)], [0x42, 0x86, 0x81, 0x01], [0x42, 0xf7, 0x81, 0x01],
    [0x42, 0xf2, 0x81, 0x04], [0x42, 0xf3, 0x81, 0x08], [0x42, 0x82, 0x80 | docType.length], docType, [0x42, 0x87, 0x81, 0x04],
    [0x42, 0x85, 0x81, 0x02], [0x18, 0x53, 0x80, 0x67])

/** Each format's head and the type it is served as. */
export const mediaHeads: ReadonlyArray<{ readonly format: string; readonly head: Buffer; readonly type: string }> = [
  { format: "PNG", head: onePixelPng(), type: "image/png" },
  { format: "JPEG (JFIF)", head: bytes([0xff, 0xd8, 0xff, 0xe0, 0, 16], "JFIF", [0, 1, 1, 0, 0, 1, 0, 1, 0, 0]), type: "image/jpeg" },
  { format: "JPEG (Exif)", head: bytes([0xff, 0xd8, 0xff, 0xe1, 0, 0x2a], "Exif", [0, 0], "MM", [0, 0x2a]), type: "image/jpeg" },
  { format: "GIF89a", head: bytes("GIF89a", le16(1), le16(1), [0x80, 0, 0]), type: "image/gif" },
  { format: "GIF87a", head: bytes("GIF87a", le16(2), le16(2), [0, 0, 0]), type: "image/gif" },
  { format: "WebP", head: bytes("RIFF", le32(26), "WEBP", "VP8L", le32(10), [0x2f, 0, 0, 0, 0]), type: "image/webp" },
  { format: "AVIF", head: ftyp("avif", "avif", "mif1", "miaf"), type: "image/avif" },
  { format: "MP3 with ID3v2", head: bytes("ID3", [4, 0, 0, 0, 0, 0, 0]), type: "audio/mpeg" },
  { format: "MP3 frame (MPEG-1 layer III, 128 kbit/s, 44.1 kHz)", head: bytes([0xff, 0xfb, 0x90, 0x64]), type: "audio/mpeg" },
  { format: "MP3 frame (MPEG-2 layer III, 64 kbit/s, 22.05 kHz)", head: bytes([0xff, 0xf3, 0x80, 0xc4]), type: "audio/mpeg" },
  { format: "AAC (ADTS)", head: bytes([0xff, 0xf1, 0x50, 0x80, 0x02, 0x1f, 0xfc]), type: "audio/aac" },
  { format: "WAV", head: wav, type: "audio/wav" },
  { format: "FLAC", head: bytes("fLaC", [0x80, 0, 0, 34], [0x10, 0, 0x10, 0]), type: "audio/flac" },
  { format: "Ogg Opus", head: oggPage(bytes("OpusHead", [1, 2], le16(312), le32(48000), le16(0), [0])), type: "audio/ogg" },
  { format: "Ogg Vorbis", head: oggPage(bytes([1], "vorbis", le32(0), [2], le32(44100))), type: "audio/ogg" },
  { format: "Ogg Theora", head: oggPage(bytes([0x80], "theora", [3, 2, 1])), type: "video/ogg" },
  { format: "M4A", head: ftyp("M4A ", "M4A ", "mp42", "isom"), type: "audio/mp4" },
  { format: "MP4 (isom)", head: ftyp("isom", "isom", "iso2", "avc1", "mp41"), type: "video/mp4" },
  { format: "MP4 (mp42)", head: ftyp("mp42", "mp42", "isom"), type: "video/mp4" },
  { format: "QuickTime", head: ftyp("qt  ", "qt  "), type: "video/quicktime" },
  { format: "WebM", head: ebml("webm"), type: "video/webm" },
  { format: "Matroska", head: ebml("matroska"), type: "video/x-matroska" }
]
