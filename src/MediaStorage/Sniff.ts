/**
 * The media type of a file told by its first bytes, for uploads that declared none (or
 * `application/octet-stream`): the host's API nodes upload images without a content type
 * (comfy_api_nodes/util/upload_helpers.py, `upload_images_to_comfyapi` with no `mime_type`), and
 * such a file was served as `application/octet-stream`.
 *
 * Only signatures at fixed offsets in the first `sniffBytes` bytes are read, so the upload keeps
 * them as they stream by and the file is never read again. A type is answered only for a
 * signature that says it; anything else is `undefined` (the file stays `application/octet-stream`).
 * Only images, audio and video: never a type a browser would run (HTML, SVG, scripts).
 */

/** How many leading bytes the sniffer reads: enough for the EBML doctype and the Ogg codec header. */
export const sniffBytes = 64

const ascii = (head: Uint8Array, at: number, text: string) => {
  if (head.length < at + text.length) return false
  for (let i = 0; i < text.length; i++) if (head[at + i] !== text.charCodeAt(i)) return false
  return true
}

const startsWith = (head: Uint8Array, bytes: ReadonlyArray<number>) =>
  head.length >= bytes.length && bytes.every((b, i) => head[i] === b)

/** ISO base media (MP4, M4A, AVIF, QuickTime): the `ftyp` box first, its major brand after it. */
const isoMediaType = (head: Uint8Array): string | undefined => {
  if (!ascii(head, 4, "ftyp") || head.length < 12) return undefined
  const brand = String.fromCharCode(...head.subarray(8, 12))
  if (brand === "M4A " || brand === "M4B " || brand === "M4P ") return "audio/mp4"
  if (brand === "avif" || brand === "avis") return "image/avif"
  if (brand === "qt  ") return "video/quicktime"
  // a brand of printable characters: isom, iso2, mp41, mp42, avc1, dash, M4V, 3gp5, ...
  return /^[\x20-\x7e]{4}$/.test(brand) ? "video/mp4" : undefined
}

/**
 * An MPEG audio frame header (MP3 without an ID3 tag, or AAC in ADTS): 11 sync bits, then a
 * version, a layer, a bitrate and a sample rate that are not the reserved values.
 */
const mpegAudioType = (head: Uint8Array): string | undefined => {
  if (head.length < 4 || head[0] !== 0xff || (head[1]! & 0xe0) !== 0xe0) return undefined
  const layer = (head[1]! >> 1) & 0x03
  if (layer === 0) {
    // ADTS: MPEG-4 or -2 AAC, layer always 0, a sampling index below 13
    return (head[1]! & 0xf6) === 0xf0 && ((head[2]! >> 2) & 0x0f) < 13 ? "audio/aac" : undefined
  }
  const version = (head[1]! >> 3) & 0x03
  const bitrate = head[2]! >> 4
  const sampleRate = (head[2]! >> 2) & 0x03
  return version !== 1 && bitrate !== 0x0f && bitrate !== 0 && sampleRate !== 3 ? "audio/mpeg" : undefined
}

/** Matroska or WebM: the EBML magic, then the DocType among the header's first bytes. */
const ebmlType = (head: Uint8Array): string | undefined => {
  if (!startsWith(head, [0x1a, 0x45, 0xdf, 0xa3])) return undefined
  const text = String.fromCharCode(...head.subarray(4, sniffBytes))
  if (text.includes("webm")) return "video/webm"
  return text.includes("matroska") ? "video/x-matroska" : undefined
}

/** Ogg: the page's first packet says the codec (Theora is video; Vorbis, Opus, FLAC and the rest audio). */
const oggType = (head: Uint8Array): string | undefined => {
  if (!ascii(head, 0, "OggS")) return undefined
  return ascii(head, 29, "theora") ? "video/ogg" : "audio/ogg"
}

/** The media type the first bytes of a file say, or `undefined` when they say none this service knows. */
export const sniffMediaType = (head: Uint8Array): string | undefined => {
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "image/png"
  if (startsWith(head, [0xff, 0xd8, 0xff])) return "image/jpeg"
  if (ascii(head, 0, "GIF87a") || ascii(head, 0, "GIF89a")) return "image/gif"
  if (ascii(head, 0, "RIFF") && ascii(head, 8, "WEBP")) return "image/webp"
  if (ascii(head, 0, "RIFF") && ascii(head, 8, "WAVE")) return "audio/wav"
  if (ascii(head, 0, "fLaC")) return "audio/flac"
  if (ascii(head, 0, "ID3")) return "audio/mpeg"
  return oggType(head) ?? isoMediaType(head) ?? ebmlType(head) ?? mpegAudioType(head)
}

/**
 * Keeps the first `sniffBytes` bytes of a stream's chunks as they pass, whatever their sizes:
 * `take` is given each chunk (and gives it back), `head` the bytes kept so far.
 */
export const headKeeper = () => {
  const kept = new Uint8Array(sniffBytes)
  let length = 0
  return {
    take: (chunk: Uint8Array): Uint8Array => {
      if (length < sniffBytes) {
        const part = chunk.subarray(0, sniffBytes - length)
        kept.set(part, length)
        length += part.length
      }
      return chunk
    },
    head: (): Uint8Array => kept.subarray(0, length)
  }
}
