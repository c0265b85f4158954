/**
 * Helpers of the music-proxy tests: the service configured against the fake vendor, form posts,
 * NDJSON answers read line by line, and the stream read as the host's music node reads it.
 */
import { Effect, Layer, Option, Redacted } from "effect"
import { expect } from "vitest"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { MusicEvent } from "../../src/Domain/MusicEvents.ts"
import { FakeMusicVendor, type Fake } from "./FakeMusicVendor.ts"
import { type ConfigOverrides, type Running, Service } from "./Service.ts"

export const generatePath = "/proxy/musicvendor/v2m/generate"
export const textToMusicPath = "/proxy/musicvendor/t2m/generate"

export const atFakeVendor = (fake: Fake, more: ConfigOverrides = (c) => c): ConfigOverrides => (c) =>
  more({
    ...c,
    vendorMode: "live",
    musicVendor: { baseUrl: Option.some(fake.url), apiKey: Option.some(Redacted.make(fake.apiKey)) },
    vendorTimeoutMillis: 1000,
    streamKeepAliveMillis: 200
  })

/** The service against a fresh fake vendor. */
export const serviceWithFakeVendor = (more?: ConfigOverrides) =>
  Layer.unwrap(Effect.map(FakeMusicVendor, (fake) => Service.layer(atFakeVendor(fake, more)))).pipe(
    Layer.provideMerge(FakeMusicVendor.layer)
  )

export interface StreamAnswer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  /** The lines of the body, blank keep-alive lines included, without the final empty string. */
  readonly lines: ReadonlyArray<string>
}

/** Posts a form (FormData, URLSearchParams or a raw string) to video to music (or `path`) and reads the whole answer. */
export const postForm = (
  service: Running,
  token: string | undefined,
  body: FormData | URLSearchParams | string,
  headers: Record<string, string> = {},
  path = generatePath
) =>
  Effect.promise(async (): Promise<StreamAnswer> => {
    const response = await service.fetch(path, {
      method: "POST",
      headers: { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...headers },
      body
    })
    const text = await response.text()
    const lines = text.split("\n")
    if (lines.at(-1) === "") lines.pop()
    return { status: response.status, headers: response.headers, text, lines }
  })

/** The event types the relay decodes: the members of MusicEvent. */
export const knownEventTypes: ReadonlySet<string> = new Set(MusicEvent.members.map((m) => m.schema.fields.type.literal))

/**
 * The answer's events, keep-alive lines left out. Not checked against the event schemas: the
 * relay passes the vendor's events of other shapes on unchanged.
 */
export const eventsOf = (answer: StreamAnswer): Array<Record<string, unknown>> =>
  answer.lines.filter((l) => l.trim() !== "").map((line) => JSON.parse(line) as Record<string, unknown>)

export const expectNdjson = (answer: StreamAnswer) => {
  if (answer.status !== 200) expect.fail(`expected 200, got ${answer.status}: ${answer.text.slice(0, 300)}`)
  expect(answer.headers.get("content-type")).toMatch(/^application\/x-ndjson/)
  expect(answer.headers.get("cache-control")).toBe("no-cache")
  expect(answer.headers.get("x-accel-buffering")).toBe("no")
}

/** A multipart form with a file part. */
export const fileForm = (bytes: Uint8Array, options: { field?: string; filename?: string; prompt?: string } = {}) => {
  const form = new FormData()
  form.append(options.field ?? "0.video", new Blob([bytes], { type: "video/mp4" }), options.filename ?? "clip.mp4")
  if (options.prompt !== undefined) form.append("prompt", options.prompt)
  return form
}

/**
 * Files left in the service's temporary folder, once the requests have had up to 5 s to finish:
 * a request's files go when its scope closes, just after the client read the last byte.
 */
export const leftoverTempFiles = (service: Running) =>
  Effect.promise(async () => {
    const list = () => fs.readdir(path.join(service.config.dataDir, "tmp")).catch(() => [] as Array<string>)
    for (let i = 0; i < 100 && (await list()).length > 0; i++) await new Promise((r) => setTimeout(r, 50))
    return list()
  })

/** What the host's music node made of a stream: the audio it keeps and the progress texts it showed. */
export interface HostNodeResult {
  readonly audio: Buffer
  readonly progress: ReadonlyArray<string>
}

/** Python's `base64.b64decode`: the standard alphabet, padded; anything else raises. */
const b64decode = (data: unknown) => {
  if (typeof data !== "string" || data.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(data)) {
    throw new Error(`binascii.Error: not base64: ${String(data).slice(0, 40)}`)
  }
  return Buffer.from(data, "base64")
}

/**
 * The answer's lines read as the host's music node reads them (comfy_api_nodes/nodes_sonilo.py,
 * its streaming function), step for step: blank and malformed lines skipped; `error` raises with
 * its `code` and `message`; `duration` shows `duration_sec` to one decimal; `titles` takes the
 * first of the list, `title` its `title`; `audio_chunk` appends `base64(data)` to its
 * `stream_index` (0 when absent); `complete` stops reading. The audio kept is stream 0's chunks
 * joined (else the lowest stream's); no audio at all raises.
 */
export const asHostMusicNode = (lines: ReadonlyArray<string>): HostNodeResult => {
  const streams = new Map<number, Array<Buffer>>()
  const progress: Array<string> = []
  let title: unknown = null
  for (const raw of lines) {
    const line = raw.trim()
    if (line === "") continue
    let event: Record<string, unknown>
    try {
      event = JSON.parse(line)
    } catch {
      continue
    }
    const type = event.type
    if (type === "error") {
      throw new Error(`music vendor generation error (${String(event.code ?? "UNKNOWN")}): ${String(event.message ?? "Unknown error")}`)
    }
    if (type === "duration") {
      const seconds = event.duration_sec
      if (seconds !== undefined && seconds !== null) {
        if (typeof seconds !== "number") throw new Error(`ValueError: cannot format ${JSON.stringify(seconds)} with .1f`)
        progress.push(`Status: Generating\nVideo duration: ${seconds.toFixed(1)}s`)
      }
    } else if (type === "titles" || type === "title") {
      if (type === "titles") {
        const titles = (event.titles ?? []) as ReadonlyArray<unknown>
        if (titles.length > 0) title = titles[0]
      } else {
        title = event.title || title
      }
      if (title) progress.push(`Status: Generating\nTitle: ${String(title)}`)
    } else if (type === "audio_chunk") {
      if (!("data" in event)) throw new Error("KeyError: 'data'")
      const stream = (event.stream_index ?? 0) as number
      const chunks = streams.get(stream) ?? []
      chunks.push(b64decode(event.data))
      streams.set(stream, chunks)
    } else if (type === "complete") {
      break
    }
  }
  if (streams.size === 0) throw new Error("The music vendor returned no audio data.")
  const selected = streams.has(0) ? 0 : Math.min(...streams.keys())
  return { audio: Buffer.concat(streams.get(selected)!), progress }
}
