/**
 * The music vendor: `POST <MUSICVENDOR_BASE_URL>/v2m/generate` with a multipart form (the video
 * file as it arrives or from its spooled copy, or its URL, and the prompt), answered with an
 * NDJSON stream. The live client runs over undici; with VENDOR_MODE=simulated a built-in stand-in
 * (Simulated.ts) answers a realistic stream with decodable audio, offline.
 *
 * The key travels as `Redacted` and only in the Authorization header; nothing logged here
 * carries a request.
 */
import { HttpBody, HttpClient, HttpClientRequest, type HttpClientResponse } from "effect/http"
import { NodeHttpClient, NodeStream } from "@effect/platform-node"
import { Clock, Context, Data, Deferred, Effect, Fiber, Layer, Option, type Scope, Stream } from "effect"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import { Transform, type Writable } from "node:stream"
import { AppConfig } from "../Config.ts"
import type { MusicRequest } from "../Domain/Media.ts"
import { span } from "../Tracing.ts"
import { measuredVendor } from "../Observability/Metrics.ts"
import { simulatedAnswer } from "./Simulated.ts"
import { scavengeEvery } from "../Storage/Garbage.ts"
import {
  fromTransportError,
  fromVendorStatus,
  type VendorFailure,
  VendorTimedOut,
  VendorUnconfigured
} from "../Vendors/Failure.ts"

const vendorName = "music vendor"

/** A generation as the vendor is asked for it. */
export interface GenerateRequest {
  readonly request: MusicRequest
  /** The video's length in seconds when it is known (uploads). */
  readonly durationSeconds: Option.Option<number>
}

/** The vendor's body broke off after it had started. */
export class VendorStreamError extends Data.TaggedError("VendorStreamError")<{ readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

/**
 * A video upload forwarded to the vendor while it arrives: the vendor's request starts with the
 * file part's head, the video's bytes go to `sink` (its backpressure is the vendor's), and only
 * `finish` sends the rest of the form. Closing the scope before `finish` aborts the request: the
 * vendor sees a broken body, never a complete form.
 */
export interface VendorUpload {
  /** Where the video's bytes go as they arrive; never ended here (`finish` ends it). */
  readonly sink: Writable
  /** Fails as soon as the vendor answers a failure, even while the upload is still arriving. */
  readonly refused: Effect.Effect<never, VendorFailure>
  /** Sends the form's tail (the prompt, the closing boundary), then waits for the vendor's answer. */
  readonly finish: (prompt: Option.Option<string>) => Effect.Effect<Stream.Stream<Uint8Array, VendorStreamError>, VendorFailure>
}

/** The vendor, as the music proxy asks it. */
export interface MusicVendorShape {
  /** Fails when the vendor cannot be asked at all (live mode without its settings). */
  readonly ready: Effect.Effect<void, VendorUnconfigured>
  /**
   * Starts a generation. Succeeds with the vendor's NDJSON body once it answered 2xx; the
   * exchange is aborted when the scope closes.
   */
  readonly generate: (
    request: GenerateRequest
  ) => Effect.Effect<Stream.Stream<Uint8Array, VendorStreamError>, VendorFailure | VendorUnconfigured, Scope.Scope>
  /**
   * Live mode only: starts a generation whose video is sent as it is uploaded (see
   * `VendorUpload`); the exchange is aborted when the scope closes.
   */
  readonly upload?: (file: UploadStart) => Effect.Effect<VendorUpload, never, Scope.Scope>
}

/** The file part as it starts: what the vendor's form names it. */
export interface UploadStart {
  readonly filename: string
  readonly contentType: string
}

// --- the multipart body sent to the vendor ----------------------------------------------------

/** A form-data name or file name in a quoted header parameter (the HTML form encoding rules). */
const quoted = (value: string) => value.replace(/"/g, "%22").replace(/\r/g, "%0D").replace(/\n/g, "%0A")

const fieldPart = (boundary: string, name: string, value: string) =>
  Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="${quoted(name)}"\r\n\r\n${value}\r\n`)

/** The file part's head: its headers, up to where the file's bytes start. */
const fileHead = (boundary: string, video: UploadStart) =>
  Buffer.from(
    `--${boundary}\r\ncontent-disposition: form-data; name="0.video"; filename="${quoted(video.filename)}"\r\n` +
      `content-type: ${video.contentType.replace(/[\r\n]/g, "")}\r\n\r\n`
  )

/** What follows the file's bytes: the end of its part, the prompt, the closing boundary. */
const fileTail = (boundary: string, prompt: Option.Option<string>) =>
  Buffer.concat([
    Buffer.from("\r\n"),
    ...Option.match(prompt, { onNone: () => [], onSome: (p) => [fieldPart(boundary, "prompt", p)] }),
    Buffer.from(`--${boundary}--\r\n`)
  ])

/**
 * The form as a stream with its exact length: a spooled file is read from disk as the vendor takes
 * it. `onProgress` runs for every piece handed over.
 */
const formBody = ({ request }: GenerateRequest, boundary: string, onProgress: Effect.Effect<void>) => {
  if (request._tag === "Url") {
    const prompt = Option.match(request.prompt, { onNone: () => [], onSome: (p) => [fieldPart(boundary, "prompt", p)] })
    const bytes = Buffer.concat([fieldPart(boundary, "video", request.url), ...prompt, Buffer.from(`--${boundary}--\r\n`)])
    return { stream: Stream.make(new Uint8Array(bytes)), length: bytes.length }
  }
  const video = request.file
  const head = fileHead(boundary, video)
  const tail = fileTail(boundary, request.prompt)
  // each read is a new buffer, dead once sent: scavenges free them (Storage/Garbage.ts)
  const scavenge = scavengeEvery()
  const file = NodeStream.fromReadable({
    evaluate: () => fs.createReadStream(video.path, { highWaterMark: 1024 * 1024 }),
    onError: (cause) => new VendorStreamError({ reason: `the spooled video could not be read: ${String(cause)}` })
  })
  return {
    stream: Stream.concat(Stream.make(new Uint8Array(head)), Stream.concat(file, Stream.make(new Uint8Array(tail)))).pipe(
      Stream.tap((piece) => Effect.andThen(Effect.sync(() => scavenge(piece.length)), onProgress))
    ),
    length: head.length + video.size + tail.length
  }
}

// --- live -----------------------------------------------------------------------------------

/**
 * What every live call to the music vendor starts from (video and text to music alike): the
 * measured client, the settings, and `ready`, which fails while a setting is missing.
 */
export const liveMusicVendor = Effect.gen(function*() {
  const config = yield* AppConfig
  const client = (yield* HttpClient.HttpClient).pipe(measuredVendor("musicvendor"))
  const { baseUrl, apiKey } = config.musicVendor
  const missing = [
    ...(Option.isNone(baseUrl) ? ["MUSICVENDOR_BASE_URL"] : []),
    ...(Option.isNone(apiKey) ? ["MUSICVENDOR_API_KEY"] : [])
  ]
  const ready: Effect.Effect<void, VendorUnconfigured> = missing.length > 0
    ? Effect.fail(new VendorUnconfigured({ vendor: vendorName, settings: missing }))
    : Effect.void
  return { client, baseUrl, apiKey, timeoutMillis: config.vendorTimeoutMillis, ready }
})

/** The vendor's answer to a generation: its NDJSON body when 2xx, else the failure its status means. */
export const generationBody = (response: HttpClientResponse.HttpClientResponse, timeoutMillis: number) =>
  Effect.gen(function*() {
    if (response.status < 200 || response.status >= 300) {
      const text = yield* response.text.pipe(Effect.timeout(timeoutMillis), Effect.orElseSucceed(() => ""))
      return yield* fromVendorStatus(vendorName, response.status, response.headers, text.slice(0, 64 * 1024))
    }
    return response.stream.pipe(
      Stream.mapError((e) => new VendorStreamError({ reason: `the music vendor stream broke off: ${e.message}` }))
    )
  })

const makeLive: Effect.Effect<MusicVendorShape, never, AppConfig | HttpClient.HttpClient> = Effect.gen(function*() {
  const { apiKey, baseUrl, client, ready, timeoutMillis } = yield* liveMusicVendor

  const generate = (request: GenerateRequest) =>
    Effect.gen(function*() {
      yield* ready
      // the vendor must answer, or keep taking the upload, within the timeout: an upload that
      // takes longer than the timeout as a whole is fine as long as it moves
      let lastProgress = yield* Clock.currentTimeMillis
      const progress = Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => void (lastProgress = now)))
      const watchdog = Effect.gen(function*() {
        for (;;) {
          const idle = (yield* Clock.currentTimeMillis) - lastProgress
          if (idle >= timeoutMillis) return yield* new VendorTimedOut({ vendor: vendorName, millis: timeoutMillis })
          yield* Effect.sleep(timeoutMillis - idle)
        }
      })
      const boundary = `musicproxy${randomUUID().replace(/-/g, "")}`
      const body = formBody(request, boundary, progress)
      const httpRequest = HttpClientRequest.post(`${Option.getOrThrow(baseUrl)}/v2m/generate`).pipe(
        HttpClientRequest.bearerToken(Option.getOrThrow(apiKey)),
        HttpClientRequest.setHeader("accept", "application/x-ndjson"),
        HttpClientRequest.bodyStream(body.stream, {
          contentType: `multipart/form-data; boundary=${boundary}`,
          contentLength: body.length
        })
      )
      const response = yield* HttpClient.withScope(client).execute(httpRequest).pipe(
        Effect.catch(fromTransportError(vendorName)),
        Effect.raceFirst(watchdog)
      )
      return yield* generationBody(response, timeoutMillis)
    })

  const upload = (file: UploadStart) =>
    Effect.gen(function*() {
      const boundary = `musicproxy${randomUUID().replace(/-/g, "")}`
      // a few megabytes in flight toward the vendor at most (4 MiB on each side of this stream):
      // the rest waits in the client's socket. Bytes move through it only as the vendor's
      // connection takes them: that is its progress
      let moved = 0
      const sink = new Transform({
        readableHighWaterMark: 4 * 1024 * 1024,
        writableHighWaterMark: 4 * 1024 * 1024,
        transform(chunk: Buffer, _encoding, callback) {
          // the pieces are the form reader's (Form.ts), which scavenges for them: no second count here
          moved += chunk.length
          callback(null, chunk)
        }
      })
      // its failures reach the vendor's request (undici reads it); a write after it broke is moot
      sink.on("error", () => {})
      sink.write(fileHead(boundary, file))
      let tailSent = false
      // silence counts only while the vendor owes us something: bytes it has not taken, or its
      // answer once the form is whole (a client pausing mid-upload is not the vendor's silence)
      let lastProgress = yield* Clock.currentTimeMillis
      let lastMoved = -1
      const vendorOwes = () => tailSent || sink.readableLength > 0 || sink.writableLength > 0
      const watchdog = Effect.gen(function*() {
        for (;;) {
          const now = yield* Clock.currentTimeMillis
          if (!vendorOwes() || moved !== lastMoved) {
            lastProgress = now
            lastMoved = moved
          }
          const idle = now - lastProgress
          if (idle >= timeoutMillis) return yield* new VendorTimedOut({ vendor: vendorName, millis: timeoutMillis })
          yield* Effect.sleep(Math.min(timeoutMillis - idle, Math.max(1, Math.ceil(timeoutMillis / 10))))
        }
      })
      // the Node stream goes to undici as it is (no length up front: the request goes chunked)
      const httpRequest = HttpClientRequest.post(`${Option.getOrThrow(baseUrl)}/v2m/generate`).pipe(
        HttpClientRequest.bearerToken(Option.getOrThrow(apiKey)),
        HttpClientRequest.setHeader("accept", "application/x-ndjson"),
        HttpClientRequest.setBody(HttpBody.raw(sink, { contentType: `multipart/form-data; boundary=${boundary}` }))
      )
      const answered = yield* HttpClient.withScope(client).execute(httpRequest).pipe(
        Effect.catch(fromTransportError(vendorName)),
        Effect.raceFirst(watchdog),
        Effect.flatMap((response) => generationBody(response, timeoutMillis)),
        Effect.forkScoped
      )
      // the request scope closing before `finish` breaks the body: the vendor never sees a whole form
      yield* Effect.addFinalizer(() => Effect.sync(() => tailSent || sink.destroy(new Error("the upload was refused or broke off"))))
      const refusal = yield* Deferred.make<never, VendorFailure>()
      yield* Fiber.join(answered).pipe(
        Effect.matchEffect({ onFailure: (e) => Deferred.fail(refusal, e), onSuccess: () => Effect.void }),
        Effect.forkScoped
      )
      return {
        sink,
        refused: Deferred.await(refusal),
        finish: (prompt) =>
          Effect.andThen(
            Effect.sync(() => {
              tailSent = true
              sink.end(fileTail(boundary, prompt))
            }),
            Fiber.join(answered)
          )
      } satisfies VendorUpload
    })

  return { ready, generate, upload }
})

// --- simulated ------------------------------------------------------------------------------

const makeSimulated: Effect.Effect<MusicVendorShape> = Effect.as(
  Effect.logWarning(
    "VENDOR_MODE=simulated: POST /proxy/musicvendor/v2m/generate answers built-in simulated music, " +
      "no vendor is called (answers carry x-vendor-mode: simulated)"
  ),
  {
    ready: Effect.void,
    generate: (request) => Effect.succeed(simulatedAnswer(request))
  }
)

/** The live client, or the simulated one when VENDOR_MODE=simulated. */
export class MusicVendor extends Context.Service<MusicVendor>()("MusicVendor", {
  make: Effect.flatMap(AppConfig, (config) => config.vendorMode === "simulated" ? makeSimulated : makeLive).pipe(
    Effect.map((vendor): MusicVendorShape => ({
      ready: vendor.ready,
      generate: (request) => vendor.generate(request).pipe(span("MusicVendor.generate")),
      ...("upload" in vendor && vendor.upload !== undefined
        ? { upload: (file: UploadStart) => vendor.upload!(file).pipe(span("MusicVendor.upload")) }
        : {})
    }))
  )
}) {
  static readonly layerWithoutDependencies = Layer.effect(MusicVendor, MusicVendor.make)
  static readonly layer = MusicVendor.layerWithoutDependencies.pipe(Layer.provide(NodeHttpClient.layerUndici))
}
