/**
 * The form of `POST /proxy/musicvendor/v2m/generate`, read straight from the request: a video
 * URL, or a video file spooled to a temporary file as it arrives (never held in memory), and an
 * optional prompt. Also the video's duration, read from its container.
 */
import { HttpIncomingMessage, Multipart, type HttpServerRequest } from "@effect/platform"
import { NodeHttpServerRequest, NodeMultipart } from "@effect/platform-node"
import { Deferred, Effect, Exit, Option, type Scope, Stream } from "effect"
import { parseFile } from "music-metadata"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import { Transform } from "node:stream"
import { pipeline } from "node:stream/promises"
import { BadRequest, PayloadTooLarge, UnsupportedMediaType } from "../Errors.ts"

/** The largest video file accepted: 1024 MiB of file content. */
export const maxVideoBytes = 1024 * 1024 * 1024
/** The longest video accepted, in seconds. */
export const maxVideoSeconds = 6 * 60
export const maxPromptLength = 2000
export const maxUrlLength = 8192
/** Room for the form's other fields and multipart framing beside the file. */
const formOverheadBytes = 4 * 1024 * 1024
/** A form without a file (URL-encoded) is small. */
const maxFieldsBytes = 64 * 1024

/** A video file spooled to disk; the file is removed when the request's scope closes. */
export interface SpooledVideo {
  readonly _tag: "File"
  readonly path: string
  readonly size: number
  readonly filename: string
  readonly contentType: string
}

export type VideoSource = SpooledVideo | { readonly _tag: "Url"; readonly url: string }

export interface VideoForm {
  readonly video: VideoSource
  readonly prompt: Option.Option<string>
}

export type FormError = BadRequest | PayloadTooLarge | UnsupportedMediaType

export interface UploadOptions {
  /** Where temporary files go (created if missing). */
  readonly tmpDir: string
  readonly maxFileBytes: number
}

const tooLarge = (maxFileBytes: number) =>
  new PayloadTooLarge({ message: `The video file is larger than ${maxFileBytes} bytes (${Math.floor(maxFileBytes / 1024 / 1024)} MiB)` })

const bad = (message: string) => new BadRequest({ message })

/** The request's declared body length is beyond anything we would accept: refuse before reading. */
const declaredTooLarge = (request: HttpServerRequest.HttpServerRequest, maxFileBytes: number) => {
  const declared = Number(request.headers["content-length"] ?? 0)
  return Number.isFinite(declared) && declared > maxFileBytes + formOverheadBytes
}

const mediaType = (request: HttpServerRequest.HttpServerRequest) =>
  (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()

/** The text fields the endpoint knows; other text fields are ignored. */
const textFields = new Set(["video", "video_url", "prompt"])
/** The parts that may carry the video file. */
const fileFields = new Set(["0.video", "video"])

interface Collected {
  readonly fields: Map<string, string>
  file: SpooledVideo | undefined
}

const setField = (collected: Collected, key: string, value: string) =>
  collected.fields.has(key)
    ? Effect.fail(bad(`The form gives '${key}' more than once`))
    : Effect.sync(() => void collected.fields.set(key, value))

class LimitReached extends Error {}

/** A temporary file, removed when the scope closes (also on failure and interruption). */
const temporaryFile = (tmpDir: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      await fsp.mkdir(tmpDir, { recursive: true })
      return path.join(tmpDir, `video-${randomUUID()}`)
    }),
    (file) => Effect.promise(() => fsp.rm(file, { force: true }))
  )

/** Copies a file part to a temporary file, counting its bytes; past the limit it stops at once. */
const spool = (part: Multipart.File, options: UploadOptions) =>
  Effect.gen(function*() {
    const file = yield* temporaryFile(options.tmpDir)
    let size = 0
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        size += chunk.length
        if (size > options.maxFileBytes) callback(new LimitReached())
        else callback(null, chunk)
      }
    })
    yield* Effect.tryPromise({
      try: (signal) =>
        pipeline(NodeMultipart.fileToReadable(part), counter, fs.createWriteStream(file, { highWaterMark: 1024 * 1024 }), { signal }),
      catch: (cause) => cause
    }).pipe(
      Effect.catchAll((cause): Effect.Effect<never, FormError> =>
        cause instanceof LimitReached || ["MaxPartSize", "MaxTotalSize"].includes(String((cause as { limit?: unknown } | null)?.limit))
          ? Effect.fail(tooLarge(options.maxFileBytes))
          : Effect.fail(bad("The video upload could not be read: the form ended or broke off inside the file"))
      )
    )
    return { _tag: "File", path: file, size, filename: part.name, contentType: part.contentType } satisfies SpooledVideo
  })

const fromMultipartError = (e: Multipart.MultipartError, maxFileBytes: number): FormError => {
  switch (e.reason) {
    case "FileTooLarge":
    case "BodyTooLarge":
      return tooLarge(maxFileBytes)
    case "FieldTooLarge":
      return bad(`A form field is longer than ${maxFieldsBytes} bytes`)
    case "TooManyParts":
      return bad("The form has too many parts")
    default:
      return bad("The request is not a valid multipart/form-data body")
  }
}

/** The multipart boundary of the request's content type, if it names one. */
const boundaryOf = (request: HttpServerRequest.HttpServerRequest) => {
  const match = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(request.headers["content-type"] ?? "")
  return match ? (match[1] ?? match[2])! : undefined
}

/** How far after the closing delimiter a body may go on (an epilogue) and still count as complete. */
const maxEpilogueBytes = 256

/**
 * The request body, watched on its way to the parser: when it ends without the closing
 * delimiter `--boundary--` near its end, `truncated` fails. The parser itself would wait
 * forever for a form that ends inside a part's headers.
 */
const watchForClosingDelimiter = (request: HttpServerRequest.HttpServerRequest, boundary: string) =>
  Effect.gen(function*() {
    const truncated = yield* Deferred.make<never, BadRequest>()
    const closing = Buffer.from(`--${boundary}--`)
    const keep = closing.length + maxEpilogueBytes
    let tail = Buffer.alloc(0)
    const watcher = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        tail = chunk.length >= keep ? Buffer.from(chunk.subarray(chunk.length - keep)) : Buffer.concat([tail, chunk]).subarray(-keep)
        callback(null, chunk)
      },
      flush(callback) {
        if (!tail.includes(closing)) {
          Deferred.unsafeDone(truncated, Exit.fail(bad("The multipart form ended before its closing boundary")))
        }
        callback()
      }
    })
    const source = NodeHttpServerRequest.toIncomingMessage(request)
    source.pipe(watcher)
    return { body: watcher, truncated: Deferred.await(truncated) }
  })

const readMultipart = (request: HttpServerRequest.HttpServerRequest, options: UploadOptions) =>
  Effect.gen(function*() {
    const boundary = boundaryOf(request)
    if (boundary === undefined) return yield* bad("The multipart/form-data content type names no boundary")
    const { body, truncated } = yield* watchForClosingDelimiter(request, boundary)
    const collected: Collected = { fields: new Map(), file: undefined }
    yield* NodeMultipart.stream(body, request.headers).pipe(
      Multipart.withLimitsStream({
        maxParts: Option.some(32),
        maxFieldSize: maxFieldsBytes,
        // our own count of file bytes is exact; these bound what the parser lets through at all
        maxFileSize: Option.some(options.maxFileBytes + 64 * 1024),
        maxTotalSize: Option.some(options.maxFileBytes + formOverheadBytes)
      }),
      Stream.mapError((e) => fromMultipartError(e, options.maxFileBytes)),
      Stream.runForEach((part): Effect.Effect<void, FormError, Scope.Scope> => {
        if (part._tag === "Field") {
          if (part.key === "0.video") return Effect.fail(bad("'0.video' must be a file part (a form field with a file name)"))
          return textFields.has(part.key) ? setField(collected, part.key, part.value) : Effect.void
        }
        if (!fileFields.has(part.key)) {
          return Effect.fail(bad(`The form part '${part.key}' carries a file; only '0.video' (or 'video') may`))
        }
        if (collected.file !== undefined) return Effect.fail(bad("The form carries more than one video file"))
        return Effect.map(spool(part, options), (file) => void (collected.file = file))
      }),
      Effect.raceFirst(truncated)
    )
    return collected
  })

const readUrlEncoded = (request: HttpServerRequest.HttpServerRequest) =>
  request.text.pipe(
    HttpIncomingMessage.withMaxBodySize(Option.some(maxFieldsBytes)),
    Effect.mapError((e) =>
      /maxBytes|too large/i.test(String((e.cause as { message?: unknown } | undefined)?.message ?? ""))
        ? new PayloadTooLarge({ message: `A form without a file must be at most ${maxFieldsBytes} bytes` })
        : bad("The form could not be read")
    ),
    Effect.flatMap((text) =>
      Effect.gen(function*() {
        const params = new URLSearchParams(text)
        const collected: Collected = { fields: new Map(), file: undefined }
        for (const [key, value] of params) {
          if (textFields.has(key)) yield* setField(collected, key, value)
        }
        return collected
      })
    )
  )

const isHttpUrl = (raw: string) => URL.canParse(raw) && /^https?:$/.test(new URL(raw).protocol)

/** Exactly one video source, a valid URL, a bounded prompt. */
const validate = (collected: Collected): Effect.Effect<VideoForm, BadRequest> =>
  Effect.gen(function*() {
    const { fields, file } = collected
    const prompt = fields.get("prompt")
    if (prompt !== undefined && prompt.length > maxPromptLength) {
      return yield* bad(`Invalid value for 'prompt': at most ${maxPromptLength} characters`)
    }
    const urlFields = ["video", "video_url"].filter((key) => fields.has(key))
    if (urlFields.length > 1) return yield* bad("Give the video URL once, in 'video' or in 'video_url'")
    if (urlFields.length === 1 && file !== undefined) {
      return yield* bad(`Give exactly one video: a file part '0.video' or a URL in '${urlFields[0]}', not both`)
    }
    const promptOption = Option.filter(Option.fromNullable(prompt), (p) => p.trim() !== "")
    if (file !== undefined) return { video: file, prompt: promptOption }
    const key = urlFields[0]
    if (key === undefined) return yield* bad("A video is required: a file part '0.video' or a URL in 'video'")
    const url = fields.get(key)!.trim()
    if (url.length > maxUrlLength || !isHttpUrl(url)) {
      return yield* bad(`Invalid value for '${key}': must be an http(s) URL of at most ${maxUrlLength} characters`)
    }
    return { video: { _tag: "Url", url }, prompt: promptOption }
  })

/**
 * Reads the form: `multipart/form-data` (the file spooled to `tmpDir`) or
 * `application/x-www-form-urlencoded` (a URL only). Anything else is 415.
 */
export const readVideoForm = (request: HttpServerRequest.HttpServerRequest, options: UploadOptions) =>
  Effect.gen(function*() {
    const type = yield* formContentType(request)
    if (declaredTooLarge(request, options.maxFileBytes)) return yield* tooLarge(options.maxFileBytes)
    const collected = type === "multipart/form-data" ? yield* readMultipart(request, options) : yield* readUrlEncoded(request)
    return yield* validate(collected)
  })

/** The request's form encoding; anything else is 415. */
export const formContentType = (request: HttpServerRequest.HttpServerRequest) => {
  const type = mediaType(request)
  return type === "multipart/form-data" || type === "application/x-www-form-urlencoded"
    ? Effect.succeed(type)
    : Effect.fail(
      new UnsupportedMediaType({
        message: `Send the form as multipart/form-data or application/x-www-form-urlencoded, not '${type || "no content type"}'`
      })
    )
}

/**
 * The video's duration in seconds, from its container: the format's duration, else its longest
 * track's (music-metadata gives a format duration for audio tracks only). `None` when the file
 * is not a container music-metadata reads, or names no duration.
 */
export const videoDuration = (file: string): Effect.Effect<Option.Option<number>> =>
  Effect.tryPromise(() => parseFile(file, { duration: true, skipCovers: true })).pipe(
    Effect.map((metadata) => {
      const tracks = metadata.format.trackInfo.map((t) => t.duration ?? 0)
      const duration = metadata.format.duration ?? Math.max(0, ...tracks)
      return Number.isFinite(duration) && duration > 0 ? Option.some(duration) : Option.none()
    }),
    Effect.orElseSucceed(() => Option.none<number>())
  )

/** A spooled video must be readable and at most `maxVideoSeconds` long. */
export const checkDuration = (video: SpooledVideo) =>
  Effect.flatMap(videoDuration(video.path), Option.match({
    onNone: () =>
      Effect.fail(new BadRequest({
        code: "invalid_video",
        message: "The uploaded file is not a video whose duration can be read (MP4/MOV, WebM/Matroska, ...)"
      })),
    onSome: (seconds) =>
      seconds > maxVideoSeconds
        ? Effect.fail(new BadRequest({
          code: "video_too_long",
          message: `The video is ${Math.round(seconds)} s long; at most ${maxVideoSeconds} s (6 minutes) is accepted`
        }))
        : Effect.succeed(seconds)
  }))
