/**
 * Minimal MP4 files of a chosen duration: `ftyp`, and a `moov` with the movie header and one
 * video track whose media header carries the duration (music-metadata reads a video-only file's
 * duration from its tracks), then an `mdat` of filler bytes.
 */
const box = (type: string, ...payload: ReadonlyArray<Buffer>) => {
  const body = Buffer.concat(payload)
  const header = Buffer.alloc(8)
  header.writeUInt32BE(8 + body.length, 0)
  header.write(type, 4, "latin1")
  return Buffer.concat([header, body])
}

/** A box with version 0 and no flags. */
const fullBox = (type: string, ...payload: ReadonlyArray<Buffer>) => box(type, Buffer.alloc(4), ...payload)

const u32 = (...values: ReadonlyArray<number>) => {
  const b = Buffer.alloc(4 * values.length)
  values.forEach((v, i) => b.writeUInt32BE(v, i * 4))
  return b
}

const unityMatrix = u32(0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000)

/** An MP4 of `seconds` with `fillerBytes` of (meaningless) media data. */
export const mp4 = (seconds: number, fillerBytes = 4096): Buffer => {
  const filler = Buffer.alloc(fillerBytes)
  for (let i = 0; i < filler.length; i++) filler[i] = (i * 31 + 7) & 0xff
  return Buffer.concat([mp4Head(seconds, fillerBytes), filler])
}

/**
 * An MP4 of `seconds` laid out as a muxer writes it without a second pass (the host application's
 * uploads among them: `comfy_api/latest/_input_impl/video_types.py` writes to memory without
 * `faststart`): the media data box first, the movie box after it. Its parts, so that large
 * uploads can send `mediaBytes` made on the fly between `head` and `tail`.
 */
export const mp4MovieLast = (seconds: number, mediaBytes: number): { readonly head: Buffer; readonly tail: Buffer } => {
  const whole = mp4Head(seconds, mediaBytes)
  const ftypEnd = whole.readUInt32BE(0)
  const moovEnd = ftypEnd + whole.readUInt32BE(ftypEnd)
  return { head: Buffer.concat([whole.subarray(0, ftypEnd), whole.subarray(moovEnd)]), tail: whole.subarray(ftypEnd, moovEnd) }
}

/**
 * The start of an MP4 of `seconds` whose media data box holds `mediaBytes`, up to and including
 * that box's header: send `mediaBytes` of anything after it (large uploads made on the fly).
 */
export const mp4Head = (seconds: number, mediaBytes: number): Buffer => {
  const timescale = 1000
  const duration = Math.round(seconds * timescale)
  const ftyp = box("ftyp", Buffer.from("isom"), u32(0x200), Buffer.from("isomiso2mp41"))
  const mvhd = fullBox("mvhd", u32(0, 0, timescale, duration, 0x00010000), Buffer.from([1, 0]), Buffer.alloc(10), unityMatrix, Buffer.alloc(24), u32(2))
  const tkhd = box("tkhd", u32(3), u32(0, 0, 1, 0, duration), Buffer.alloc(16), unityMatrix, u32(320 << 16, 240 << 16))
  const mdhd = fullBox("mdhd", u32(0, 0, timescale, duration), Buffer.from([0x55, 0xc4, 0, 0]))
  const hdlr = fullBox("hdlr", u32(0), Buffer.from("vide"), Buffer.alloc(12), Buffer.from("VideoHandler\0"))
  const mdia = box("mdia", mdhd, hdlr, box("minf", box("stbl", fullBox("stsd", u32(0)))))
  return Buffer.concat([ftyp, box("moov", mvhd, box("trak", tkhd, mdia)), u32(8 + mediaBytes), Buffer.from("mdat")])
}
