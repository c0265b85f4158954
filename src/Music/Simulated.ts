/**
 * What the simulated music vendor (VENDOR_MODE=simulated) answers: the vendor's events, with
 * audio a real client can decode. Each stream is a sine tone as a WAV file (16-bit PCM, mono,
 * 22,050 Hz) as long as the video, base64 in `audio_chunk` events: the 44-byte header first, then
 * a second of samples per chunk, so that a stream's chunks, decoded and concatenated, are the WAV.
 *
 * Cheap per request: each tone's second of samples (and its base64) is made once and shared; a
 * request adds only its header and its shorter last second.
 */
import { Duration, Option, Schedule, Stream } from "effect"
import type { MusicRequest } from "../Domain/Media.ts"

export const sampleRate = 22_050
const bytesPerSample = 2
/** The music's length when the video's is unknown (a URL, which is not fetched here). */
const defaultSeconds = 30
/** How long the whole answer takes at most, paced like a generation but briefly. */
const answerMillis = 2_000

/**
 * One tone per stream. Each frequency divides the sample rate, so a period is a whole number of
 * samples (50 and 35) and a second of the tone repeats without a seam.
 */
export const streamTones = [
  { hertz: 441, tags: ["ambient", "calm", "piano"] },
  { hertz: 630, tags: ["cinematic", "strings", "uplifting"] }
] as const

/** One second of a tone at a third of full scale, as 16-bit little-endian PCM. */
const secondOf = (hertz: number): Buffer => {
  const pcm = Buffer.alloc(sampleRate * bytesPerSample)
  for (let i = 0; i < sampleRate; i++) {
    pcm.writeInt16LE(Math.round(10_000 * Math.sin((2 * Math.PI * hertz * i) / sampleRate)), i * bytesPerSample)
  }
  return pcm
}

const seconds = streamTones.map(({ hertz }) => {
  const pcm = secondOf(hertz)
  return { pcm, base64: pcm.toString("base64") }
})

/** The header of a mono 16-bit PCM WAV file of `samples` samples. */
const wavHeader = (samples: number): Buffer => {
  const dataBytes = samples * bytesPerSample
  const header = Buffer.alloc(44)
  header.write("RIFF", 0, "ascii")
  header.writeUInt32LE(36 + dataBytes, 4)
  header.write("WAVEfmt ", 8, "ascii")
  header.writeUInt32LE(16, 16) // the format chunk's size
  header.writeUInt16LE(1, 20) // PCM
  header.writeUInt16LE(1, 22) // one channel
  header.writeUInt32LE(sampleRate, 24)
  header.writeUInt32LE(sampleRate * bytesPerSample, 28) // bytes per second
  header.writeUInt16LE(bytesPerSample, 32) // bytes per frame
  header.writeUInt16LE(8 * bytesPerSample, 34) // bits per sample
  header.write("data", 36, "ascii")
  header.writeUInt32LE(dataBytes, 40)
  return header
}

/** Chunk `index` of a stream's WAV of `samples` samples, base64: the header, then a second at a time. */
const wavChunk = (stream: number, samples: number, index: number): string => {
  if (index === 0) return wavHeader(samples).toString("base64")
  const left = samples - (index - 1) * sampleRate
  const second = seconds[stream]!
  return left >= sampleRate ? second.base64 : second.pcm.subarray(0, left * bytesPerSample).toString("base64")
}

/**
 * The events of one generation, made as they are sent. Video to music names all streams first in
 * one `titles` event; text to music names each stream in its `title` only.
 */
function* events(durationSec: number, titles: ReadonlyArray<string>, chunks: number, samples: number, titleList: boolean) {
  yield { type: "duration", duration_sec: durationSec }
  if (titleList) yield { type: "titles", titles }
  for (const [stream, { tags }] of streamTones.entries()) {
    yield { type: "title", title: titles[stream], display_tags: tags, copy_index: 0, prompt_index: 0, stream_index: stream }
  }
  // the streams side by side, as the vendor generates them
  for (let index = 0; index < chunks; index++) {
    for (let stream = 0; stream < streamTones.length; stream++) {
      const data = wavChunk(stream, samples, index)
      yield { type: "audio_chunk", data, copy_index: 0, prompt_index: 0, stream_index: stream, chunk_index: index }
    }
  }
  yield { type: "cost", cost: 0, currency: "USD" }
  yield { type: "complete" }
}

const encoder = new TextEncoder()

/** The vendor's NDJSON body for a generation of `durationSec` named after `name`, paced to end within `answerMillis`. */
const answer = (durationSec: number, name: string, titleList: boolean): Stream.Stream<Uint8Array> => {
  const samples = Math.round(durationSec * sampleRate)
  const chunks = 1 + Math.ceil(samples / sampleRate)
  const titles = streamTones.map((_, stream) => `${name} (take ${stream + 1})`.slice(0, 200))
  const count = 4 + streamTones.length * (1 + chunks)
  return Stream.fromIterable({ [Symbol.iterator]: () => events(durationSec, titles, chunks, samples, titleList) }).pipe(
    Stream.map((event) => encoder.encode(`${JSON.stringify(event)}\n`)),
    Stream.schedule(Schedule.spaced(Duration.millis(Math.min(100, answerMillis / count))))
  )
}

/** Video to music: as long as the video (`defaultSeconds` for a URL), titled after the prompt. */
export const simulatedAnswer = ({ durationSeconds, request }: {
  readonly request: MusicRequest
  readonly durationSeconds: Option.Option<number>
}): Stream.Stream<Uint8Array> =>
  answer(Option.getOrElse(durationSeconds, () => defaultSeconds), Option.getOrElse(request.prompt, () => "Untitled"), true)

/** Text to music: as long as asked (`defaultSeconds` when the model is left to decide), titled after the prompt. */
export const simulatedTextAnswer = ({ duration, prompt }: { readonly prompt: string; readonly duration?: number | undefined }) =>
  answer(duration === undefined || duration === 0 ? defaultSeconds : duration, prompt.trim(), false)
