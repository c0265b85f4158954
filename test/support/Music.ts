/**
 * Helpers of the music-proxy tests: the service configured against the fake vendor, form posts,
 * NDJSON answers read line by line and checked against the event schemas.
 */
import { Effect, Layer, Option, Redacted, Schema } from "effect"
import { expect } from "vitest"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { MusicEvent } from "../../src/Domain/MusicEvents.ts"
import { FakeMusicVendor, type Fake } from "./FakeMusicVendor.ts"
import { type ConfigOverrides, type Running, Service } from "./Service.ts"

export const generatePath = "/proxy/musicvendor/v2m/generate"

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
  Layer.unwrapEffect(Effect.map(FakeMusicVendor, (fake) => Service.layer(atFakeVendor(fake, more)))).pipe(
    Layer.provideMerge(FakeMusicVendor.layer)
  )

export interface StreamAnswer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  /** The lines of the body, blank keep-alive lines included, without the final empty string. */
  readonly lines: ReadonlyArray<string>
}

/** Posts a form (FormData, URLSearchParams or a raw string) and reads the whole answer. */
export const postForm = (
  service: Running,
  token: string | undefined,
  body: FormData | URLSearchParams | string,
  headers: Record<string, string> = {}
) =>
  Effect.promise(async (): Promise<StreamAnswer> => {
    const response = await service.fetch(generatePath, {
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
export const knownEventTypes: ReadonlySet<string> = new Set(MusicEvent.members.map((m) => m.fields.type.literals[0]))

/** The answer's events (keep-alive lines left out), each one decoded by the event schemas when its type is known. */
export const eventsOf = (answer: StreamAnswer): Array<Record<string, unknown>> =>
  answer.lines.filter((l) => l.trim() !== "").map((line) => {
    const event = JSON.parse(line) as Record<string, unknown>
    if (typeof event.type === "string" && knownEventTypes.has(event.type)) {
      Schema.decodeUnknownSync(MusicEvent)(event, { onExcessProperty: "preserve" })
    }
    return event
  })

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
