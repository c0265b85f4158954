/**
 * The form of `POST /proxy/musicvendor/v2m/generate`, read straight from the request: its text
 * fields, and a video file, never held in memory: forwarded to the vendor as it arrives when it
 * is an MP4 or MOV (live mode), else spooled to a temporary file. What was read is then decoded
 * with the contract's own schema (Domain/Media.ts, MusicForm) into a file or a URL.
 */
import { FileSystem } from "effect"
import { Multipart, type HttpServerRequest } from "effect/http"
import { NodeHttpServerRequest, NodeMultipart, NodeStream } from "@effect/platform-node"
import { Data, Effect, Option, Predicate, Schema, SchemaIssue, type Scope, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { PassThrough, Readable, Transform, Writable } from "node:stream"
import { pipeline } from "node:stream/promises"
import { MusicForm, type MusicRequest, MusicUrlForm, type VideoFile } from "../Domain/Media.ts"
import { recordUpload } from "../Observability/Metrics.ts"
import { type Judgement, MovieWatch } from "./MovieHeader.ts"
import { overlong, VideoOverlong, VideoUnreadable } from "./VideoChecks.ts"
import { scavengeEvery } from "../Storage/Garbage.ts"

/** The form broke a rule; `message` says which, naming the field. */
export class FormInvalid extends Data.TaggedError("FormInvalid")<{ readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

/** The request is not a form this endpoint reads. */
export class FormNotAccepted extends Data.TaggedError("FormNotAccepted")<{ readonly contentType: string }> {
  override get message() {
    return `Send the form as multipart/form-data or application/x-www-form-urlencoded, not '${this.contentType || "no content type"}'`
  }
}

/** A form without a file is over its limit. */
export class FormTooLarge extends Data.TaggedError("FormTooLarge")<{ readonly maxBytes: number }> {
  override get message() {
    return `A form without a file must be at most ${this.maxBytes} bytes`
  }
}

export class VideoTooLarge extends Data.TaggedError("VideoTooLarge")<{ readonly maxBytes: number }> {
  override get message() {
    return `The video file is larger than ${this.maxBytes} bytes (${Math.floor(this.maxBytes / 1024 / 1024)} MiB)`
  }
}

/** Room for the form's other fields and multipart framing beside the file. */
const formOverheadBytes = 4 * 1024 * 1024
/** A form without a file (URL-encoded) is small. */
const maxFieldsBytes = 64 * 1024

export type FormError = FormInvalid | FormNotAccepted | FormTooLarge | VideoTooLarge | VideoOverlong | VideoUnreadable

/** Where uploaded videos are spooled under `DATA_DIR` (swept of crash leftovers: System/Leftovers.ts). */
export const spoolDirOf = (dataDir: string) => path.join(dataDir, "tmp")

/**
 * Opens where a video goes instead of to disk, as it arrives (the vendor's request, Vendor.ts
 * `upload`); its backpressure holds the upload as the disk's does. It is never ended here.
 */
export type Forward = (file: { readonly filename: string; readonly contentType: string }) => Effect.Effect<Writable, never, Scope.Scope>

export interface UploadOptions {
  /** Where temporary files go (created if missing). */
  readonly tmpDir: string
  readonly maxFileBytes: number
  /**
   * Where a video whose first bytes state an acceptable duration goes, instead of to disk. A video
   * whose first bytes do not state it (its movie box after its media, or no ISO media file) is
   * spooled all the same, to be checked whole.
   */
  readonly forward?: Forward
}

const bad = (reason: string) => new FormInvalid({ reason })

/** The request's declared body length is beyond anything we would accept: refuse before reading. */
const declaredTooLarge = (request: HttpServerRequest.HttpServerRequest, maxFileBytes: number) => {
  const declared = Number(request.headers["content-length"] ?? 0)
  return Number.isFinite(declared) && declared > maxFileBytes + formOverheadBytes
}

const mediaType = (request: HttpServerRequest.HttpServerRequest) =>
  (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()

/** The text fields the endpoint knows; other text fields are ignored. */
const textFields: ReadonlySet<string> = new Set(["video", "video_url", "prompt"])
/** The parts that may carry the video file. */
const fileFields: ReadonlySet<string> = new Set(["0.video", "video"])

/** The form as read: its known fields by name, a file under the part that carried it. */
type Collected = Map<string, string | VideoFile>

const setField = (collected: Collected, key: string, value: string | VideoFile) =>
  collected.has(key)
    ? Effect.fail(bad(`The form gives '${key}' more than once`))
    : Effect.sync(() => void collected.set(key, value))

class LimitReached extends Error {}

/** How many of a video's first bytes are read before choosing where it goes. */
const headBytes = 64 * 1024
/** The largest movie box held to read a forwarded video's duration (Music/MovieHeader.ts). */
const movieBoxLimit = 8 * 1024 * 1024

interface Head {
  readonly bytes: Buffer
  /** Whether the file ended within these bytes. */
  readonly ended: boolean
}

/**
 * Reads `source` until `watch` has judged the video's duration or `headBytes` have come,
 * whichever is first (the rest stays in `source`), or the file ended.
 */
const readHead = (source: Readable, watch: MovieWatch) =>
  new Promise<Head>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let length = 0
    const settle = (ended: boolean) => {
      source.off("readable", onReadable).off("end", onEnd).off("error", reject)
      resolve({ bytes: Buffer.concat(chunks, length), ended })
    }
    const onReadable = () => {
      for (let chunk: Buffer | null; (chunk = source.read() as Buffer | null) !== null;) {
        chunks.push(chunk)
        length += chunk.length
        watch.push(chunk)
        if (watch.judgement._tag !== "Pending" || length >= headBytes) return settle(false)
      }
    }
    const onEnd = () => settle(true)
    source.on("readable", onReadable).once("end", onEnd).once("error", reject)
  })

/** A sink that drops what it is given: the bytes already went where `forward` sends them. */
const discard = () =>
  new Writable({
    write(_chunk, _encoding, callback) {
      callback()
    }
  })

/** What a forwarded video's judged duration means: go on, or the failure that stops it. */
const verdict = (judgement: Judgement): Option.Option<VideoOverlong | VideoUnreadable> =>
  judgement._tag === "Stated"
    ? overlong(judgement.seconds)
    : judgement._tag === "Pending"
    ? Option.none()
    : Option.some(new VideoUnreadable())

/**
 * Takes a file part. Its first bytes are read first: a video they state too long is refused at
 * once. With `options.forward`, an ISO media file (MP4, MOV) goes there as it arrives, its top-level
 * boxes followed to read the duration its movie box states wherever that box is, and the upload
 * stops as soon as the duration is known to be too long or the file to have none; any other file,
 * or every file without `forward`, is copied to a temporary file (removed with the request's
 * scope) to be checked whole. Its bytes are counted: past the limit the reading stops at once.
 */
const takeFile = (part: Multipart.File, options: UploadOptions) =>
  Effect.gen(function*() {
    // the disk's failures (a full or unwritable folder) are the service's, not the client's. The
    // file also errors with whatever broke the pipeline (Node 24 destroys every stream of it with
    // the cause: the limit, a broken form); only a failed system call is the disk's
    let diskFailure: Option.Option<unknown> = Option.none()
    const failed = (cause: unknown): Effect.Effect<never, FormInvalid | VideoTooLarge | VideoOverlong | VideoUnreadable> =>
      Option.isSome(diskFailure)
        ? Effect.die(diskFailure.value)
        : cause instanceof VideoOverlong || cause instanceof VideoUnreadable
        ? Effect.fail(cause)
        : Effect.fail(
          cause instanceof LimitReached || ["MaxPartSize", "MaxTotalSize"].includes(String((cause as { limit?: unknown } | null)?.limit))
            ? new VideoTooLarge({ maxBytes: options.maxFileBytes })
            : bad("The video upload could not be read: the form ended or broke off inside the file")
        )
    const source = NodeMultipart.fileToReadable(part)
    const watch = new MovieWatch(movieBoxLimit)
    const head = yield* Effect.tryPromise({ try: () => readHead(source, watch), catch: (cause) => cause }).pipe(Effect.catch(failed))
    const judged = head.ended ? watch.finish() : watch.judgement
    // a movie box at the start that states too long a video: refused before the rest is read
    if (judged._tag === "Stated") yield* Option.match(overlong(judged.seconds), { onNone: () => Effect.void, onSome: Effect.fail })
    const forwarded = (judged._tag === "Stated" || judged._tag === "Pending") && options.forward !== undefined
      ? yield* options.forward({ filename: part.name, contentType: part.contentType })
      : undefined
    const files = yield* FileSystem.FileSystem
    const path = forwarded === undefined
      ? yield* Effect.andThen(
        files.makeDirectory(options.tmpDir, { recursive: true }),
        files.makeTempFileScoped({ directory: options.tmpDir, prefix: "video-" })
      )
      : ""
    let size = 0
    // the socket's buffers die as soon as they are passed on: scavenges free them (Storage/Garbage.ts)
    const scavenge = scavengeEvery()
    // the file's offset of the next byte counted: the head's bytes were watched as it was read
    let offset = 0
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        size += chunk.length
        scavenge(chunk.length)
        if (size > options.maxFileBytes) return callback(new LimitReached())
        if (forwarded === undefined) return callback(null, chunk)
        const unwatched = head.bytes.length - offset
        offset += chunk.length
        if (unwatched < chunk.length) watch.push(unwatched > 0 ? chunk.subarray(unwatched) : chunk)
        const stop = verdict(watch.judgement)
        if (Option.isSome(stop)) return callback(stop.value)
        if (forwarded.destroyed || forwarded.write(chunk)) return callback()
        // the vendor is slower than the client: wait for it (or for it to break off)
        const go = () => {
          forwarded.off("drain", go).off("close", go)
          callback()
        }
        forwarded.once("drain", go).once("close", go)
      }
    })
    const sink = forwarded === undefined ? fs.createWriteStream(path, { highWaterMark: 1024 * 1024 }) : discard()
    sink.once("error", (e: NodeJS.ErrnoException) => {
      if (e.syscall !== undefined) diskFailure = Option.some(e)
    })
    // the head first, then the rest as it comes
    const file = head.ended ? Readable.from([head.bytes]) : source
    if (!head.ended) counter.write(head.bytes)
    // Node's own pipeline: a gigabyte moves through it at the disk's or the vendor's speed, chunk by chunk
    yield* Effect.tryPromise({
      try: (signal) => pipeline(file, counter, sink, { signal }),
      catch: (cause) => cause
    }).pipe(Effect.catch(failed))
    // a forwarded video must have stated its duration by its end
    if (forwarded !== undefined) {
      const stop = verdict(watch.finish())
      if (Option.isSome(stop)) return yield* stop.value
    }
    return { path, size, filename: part.name, contentType: part.contentType } satisfies VideoFile
  }).pipe(Effect.catchTag("PlatformError", Effect.die))

const fromMultipartError = (e: Multipart.MultipartError, maxFileBytes: number): FormError => {
  switch (e.reason._tag) {
    case "FileTooLarge":
    case "BodyTooLarge":
      return new VideoTooLarge({ maxBytes: maxFileBytes })
    case "FieldTooLarge":
      return bad(`A form field is longer than ${maxFieldsBytes} bytes`)
    case "TooManyParts":
      return bad("The form has too many parts")
    case "Parse":
      // Effect 4's parser fails a body that ends before its closing delimiter, wherever it ends
      // (Effect 3's hung when it ended inside a part's headers, and a watcher of ours caught it)
      return endedEarly(e.reason.cause)
        ? bad("The multipart form ended before its closing boundary")
        : bad("The request is not a valid multipart/form-data body")
    default:
      return bad("The request is not a valid multipart/form-data body")
  }
}

/** Whether the parser's failure is a body that ended before its closing delimiter. */
const endedEarly = (cause: unknown) => Predicate.isTagged(cause, "EndNotReached")

/** The multipart boundary of the request's content type, if it names one. */
const boundaryOf = (request: HttpServerRequest.HttpServerRequest) => {
  const match = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(request.headers["content-type"] ?? "")
  return match ? (match[1] ?? match[2])! : undefined
}

const readMultipart = (request: HttpServerRequest.HttpServerRequest, options: UploadOptions) =>
  Effect.gen(function*() {
    const boundary = boundaryOf(request)
    if (boundary === undefined) return yield* bad("The multipart/form-data content type names no boundary")
    const collected: Collected = new Map()
    let hasFile = false
    yield* NodeMultipart.stream(NodeHttpServerRequest.toIncomingMessage(request), request.headers).pipe(
      Stream.provideContext(Multipart.limitsServices({
        maxParts: 32,
        maxFieldSize: maxFieldsBytes,
        // our own count of file bytes is exact; these bound what the parser lets through at all
        maxFileSize: options.maxFileBytes + 64 * 1024,
        maxTotalSize: options.maxFileBytes + formOverheadBytes
      })),
      Stream.mapError((e) => fromMultipartError(e, options.maxFileBytes)),
      Stream.runForEach((part): Effect.Effect<void, FormError, Scope.Scope | FileSystem.FileSystem> => {
        if (part._tag === "Field") {
          if (part.key === "0.video") return Effect.fail(bad("'0.video' must be a file part (a form field with a file name)"))
          return textFields.has(part.key) ? setField(collected, part.key, part.value) : Effect.void
        }
        if (!fileFields.has(part.key)) {
          return Effect.fail(bad(`The form part '${part.key}' carries a file; only '0.video' (or 'video') may`))
        }
        if (hasFile) return Effect.fail(bad("The form carries more than one video file"))
        hasFile = true
        return takeFile(part, options).pipe(
          Effect.tap((file) => recordUpload("music_video", file.size)),
          Effect.flatMap((file) => setField(collected, part.key, file))
        )
      })
    )
    return collected
  })

/**
 * A URL-encoded form, read through a stream of its own: past the limit that stream is destroyed,
 * not the request, whose socket must stay up to carry the 413 (destroying the request, as a body
 * size limit of the framework does, would close the connection without an answer).
 */
const readUrlEncoded = (request: HttpServerRequest.HttpServerRequest) =>
  NodeStream.toString(() => NodeHttpServerRequest.toIncomingMessage(request).pipe(new PassThrough()), {
    maxBytes: maxFieldsBytes,
    onError: (cause) => cause
  }).pipe(
    Effect.mapError((cause) =>
      cause instanceof NodeStream.MaxBytesError
        ? new FormTooLarge({ maxBytes: maxFieldsBytes })
        : bad("The form could not be read")
    ),
    Effect.flatMap((text) =>
      Effect.gen(function*() {
        const collected: Collected = new Map()
        for (const [key, value] of new URLSearchParams(text)) {
          if (textFields.has(key)) yield* setField(collected, key, value)
        }
        return collected
      })
    )
  )

const decodeForm = Schema.decodeUnknownEffect(MusicForm)
const decodeUrlForm = Schema.decodeUnknownEffect(MusicUrlForm.pipe(Schema.decodeTo(MusicForm)))

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/** The first thing wrong with the form, naming the field when it is one field's fault. */
const describe = (e: Schema.SchemaError) => {
  const [issue] = formatIssues(e.issue).issues
  if (issue === undefined) return "The form is not valid"
  const path = issue.path ?? []
  return path.length > 0 ? `Invalid value for '${path.map(String).join(".")}': ${issue.message}` : issue.message
}

/** The request's form encoding; anything else is refused. */
export const formContentType = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<FormType, FormNotAccepted> => {
  const type = mediaType(request)
  return type === "multipart/form-data" || type === "application/x-www-form-urlencoded"
    ? Effect.succeed(type)
    : Effect.fail(new FormNotAccepted({ contentType: type }))
}

/** The form encodings the endpoint reads. */
export type FormType = "multipart/form-data" | "application/x-www-form-urlencoded"

/**
 * Reads the form of `type` (from `formContentType`): `multipart/form-data` (the file spooled to
 * `tmpDir`, removed when the scope closes) or `application/x-www-form-urlencoded` (a URL only).
 */
export const readVideoForm = (
  request: HttpServerRequest.HttpServerRequest,
  type: FormType,
  options: UploadOptions
): Effect.Effect<MusicRequest, FormError, Scope.Scope | FileSystem.FileSystem> =>
  Effect.gen(function*() {
    if (declaredTooLarge(request, options.maxFileBytes)) return yield* new VideoTooLarge({ maxBytes: options.maxFileBytes })
    const multipart = type === "multipart/form-data"
    const collected = Object.fromEntries(multipart ? yield* readMultipart(request, options) : yield* readUrlEncoded(request))
    return yield* (multipart ? decodeForm(collected) : decodeUrlForm(collected)).pipe(Effect.mapError((e) => bad(describe(e))))
  })
