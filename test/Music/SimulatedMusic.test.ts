/**
 * The simulated music vendor (VENDOR_MODE=simulated, as `npm run demo` runs) answers audio a real
 * client can finish with: each stream's `audio_chunk`s, decoded and joined, are a WAV file that a
 * real decoder (wav-decoder) reads as a tone as long as `duration_sec`. Read once through the
 * typed client, and once exactly as the host's music node reads the stream
 * (comfy_api_nodes/nodes_sonilo.py).
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as WavDecoder from "wav-decoder"
import type { MusicEvent } from "../../src/Domain/MusicEvents.ts"
import { clientFor, withFiles } from "../support/Client.ts"
import { asHostMusicNode, expectNdjson, postForm } from "../support/Music.ts"
import { Service } from "../support/Service.ts"
import { mp4 } from "../support/Video.ts"

const sampleRate = 22_050
/** The simulation's tones: stream 0 at 441 Hz (a period of 50 samples), stream 1 at 630 Hz (35). */
const periods = [50, 35]

/**
 * A WAV file as a real decoder reads it, checked to be a mono 22,050 Hz tone of `seconds` whose
 * header declares exactly the bytes that follow it.
 */
const expectTone = (wav: Buffer, seconds: number, period: number) => {
  const audio = WavDecoder.decode.sync(wav)
  expect(audio.sampleRate).toBe(sampleRate)
  expect(audio.numberOfChannels).toBe(1)
  expect(audio.length).toBe(Math.round(seconds * sampleRate))
  expect(wav.length).toBe(44 + 2 * audio.length)
  expect(wav.readUInt32LE(4)).toBe(wav.length - 8)
  const samples = audio.channelData[0]!
  // audible: the RMS of a sine at a third of full scale is about 0.22
  const rms = Math.sqrt(samples.reduce((sum, s) => sum + s * s, 0) / samples.length)
  expect(rms).toBeGreaterThan(0.2)
  // periodic: every sample recurs one period later, and it crosses zero twice a period
  let worst = 0
  for (let i = 0; i + period < samples.length; i++) worst = Math.max(worst, Math.abs(samples[i]! - samples[i + period]!))
  expect(worst).toBeLessThan(1e-3)
  let rises = 0
  for (let i = 1; i < samples.length; i++) if (samples[i - 1]! < 0 && samples[i]! >= 0) rises++
  expect(Math.abs(rises - samples.length / period)).toBeLessThanOrEqual(1)
}

layer(Service.layer((c) => ({ ...c, vendorMode: "simulated" })), { excludeTestServices: true })("simulated music, decoded", (it) => {
  it.effect("through the typed client: each stream's chunks join into a WAV tone as long as duration_sec", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* Effect.promise(() => service.token({ sub: "wendy" }))
      const client = yield* clientFor(service, { bearer: token })
      const events: ReadonlyArray<MusicEvent> = yield* withFiles(Stream.runCollect(
        client.generateMusic({ file: mp4(4.25), filename: "clip.mp4", contentType: "video/mp4", prompt: "lofi beats" })
      ))
      expect(events.map((e) => e.type).slice(0, 4)).toEqual(["duration", "titles", "title", "title"])
      expect(events.slice(-2).map((e) => e.type)).toEqual(["cost", "complete"])
      const duration = events[0]!
      expect(duration).toEqual({ type: "duration", duration_sec: 4.25 })
      expect(events[1]).toEqual({ type: "titles", titles: ["lofi beats (take 1)", "lofi beats (take 2)"] })
      expect(events[3]).toMatchObject({ type: "title", title: "lofi beats (take 2)", stream_index: 1, display_tags: expect.any(Array) })
      for (const [stream, period] of periods.entries()) {
        const chunks = events.flatMap((e) => e.type === "audio_chunk" && e.stream_index === stream ? [e] : [])
        // a header, then a second of audio per chunk: several chunks, in order
        expect(chunks.map((c) => c.chunk_index)).toEqual([0, 1, 2, 3, 4, 5])
        expectTone(Buffer.concat(chunks.map((c) => Buffer.from(c.data!, "base64"))), 4.25, period!)
      }
    }))

  it.effect("read as the host's music node reads it (comfy_api_nodes/nodes_sonilo.py): its audio is a WAV tone", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* Effect.promise(() => service.token({ sub: "wendy" }))
      // the node's aiohttp FormData holds no file, so it is sent URL-encoded: video_url and prompt
      const answer = yield* postForm(service, token, new URLSearchParams({ video_url: "https://videos.example/v.mp4", prompt: "rain" }))
      expectNdjson(answer)
      const { audio, progress } = asHostMusicNode(answer.lines)
      // a URL's video is not fetched: the simulation makes 30 s of music
      expect(progress.slice(0, 2)).toEqual(["Status: Generating\nVideo duration: 30.0s", "Status: Generating\nTitle: rain (take 1)"])
      expectTone(audio, 30, periods[0]!)
    }))
})
