/**
 * Video to music from the client's side: the form (a video file streamed from disk as multipart,
 * or a video URL as a URL-encoded form) and the NDJSON answer read as a stream of typed events.
 * Text to music alike: a URL-encoded form (`prompt`, `duration`), the same stream of events.
 * The endpoint's body and answer are read and written here rather than by the derived client,
 * which would hold the whole video and the whole answer in memory.
 */
import { HttpBody, type HttpClient, HttpClientRequest, UrlParams } from "effect/http"
import { Effect, Schema, Stream } from "effect"
import { Api } from "../Api.ts"
import { MusicUrlForm, TextToMusicRequest } from "../Domain/Media.ts"
import { MusicEvent } from "../Domain/MusicEvents.ts"
import { contentOf } from "./Archives.ts"

/** The form's fields beside the video (`prompt`), as the contract declares them. */
export type MusicFields = Omit<typeof MusicUrlForm.Encoded, "video" | "video_url">

/** The video: a file on disk or bytes, uploaded; or a URL the vendor fetches. */
export type MusicVideo =
  | {
    readonly file: string | Uint8Array
    /** The part's file name; by default the path's last segment, or `video.mp4` for bytes. */
    readonly filename?: string | undefined
    /** The part's Content-Type; by default application/octet-stream. */
    readonly contentType?: string | undefined
  }
  | { readonly url: string }

export type MusicInput = MusicFields & MusicVideo

const generate = Api.groups["musicProxy"]!.endpoints["generateMusic"]!

/** The part that carries the file, as the form documents it. */
const filePart = "0.video"

/** A header parameter's value inside quotes (the HTML form encoding: quotes and line breaks escaped). */
const quoted = (s: string) => `"${s.replace(/"/g, "%22").replace(/\r/g, "%0D").replace(/\n/g, "%0A")}"`

/** A multipart body of `fields` and the file, the file's bytes streamed as they are read. */
const multipart = (
  fields: Readonly<Record<string, string>>,
  file: { readonly filename: string; readonly contentType: string; readonly bytes: Stream.Stream<Uint8Array, unknown>; readonly size: number }
) => {
  const boundary = `registry-client-${globalThis.crypto.randomUUID()}`
  const encoder = new TextEncoder()
  const head = encoder.encode(
    Object.entries(fields).map(([name, value]) =>
      `--${boundary}\r\nContent-Disposition: form-data; name=${quoted(name)}\r\n\r\n${value}\r\n`
    ).join("") +
      `--${boundary}\r\nContent-Disposition: form-data; name=${quoted(filePart)}; filename=${quoted(file.filename)}\r\n` +
      `Content-Type: ${file.contentType}\r\n\r\n`
  )
  const tail = encoder.encode(`\r\n--${boundary}--\r\n`)
  return HttpBody.stream(
    Stream.make(head).pipe(Stream.concat(file.bytes), Stream.concat(Stream.make(tail))),
    `multipart/form-data; boundary=${boundary}`,
    head.length + file.size + tail.length
  )
}

/** The fields present, as strings. */
const definedFields = (fields: Readonly<Record<string, string | undefined>>): Record<string, string> =>
  Object.fromEntries(Object.entries(fields).filter((entry): entry is [string, string] => entry[1] !== undefined))

/** The request's body: the fields checked against the contract's schema first. */
const bodyOf = (input: MusicInput) =>
  Effect.gen(function*() {
    const fields = definedFields(yield* Schema.decodeUnknownEffect(MusicUrlForm)(definedFields({
      prompt: input.prompt,
      video: "url" in input ? input.url : undefined
    })))
    if ("url" in input) return HttpBody.urlParams(UrlParams.fromInput(fields))
    const { file } = input
    const { bytes, size } = yield* contentOf(file)
    return multipart(fields, {
      filename: input.filename ?? (typeof file === "string" ? file.split(/[\\/]/).at(-1)! : "video.mp4"),
      contentType: input.contentType ?? "application/octet-stream",
      bytes,
      size
    })
  })

const decodeLine = Schema.decodeUnknownEffect(Schema.fromJsonString(Schema.Unknown))
const decodeEvent = Schema.decodeUnknownResult(MusicEvent)

/**
 * The answer's lines as events: keep-alives (blank lines) are skipped, and so are the events the
 * contract's schemas do not describe: of other types, or of a known type with fields the vendor
 * shaped otherwise (the relay passes both on unchanged).
 */
const eventsOf = <E>(lines: Stream.Stream<string, E>) =>
  lines.pipe(
    Stream.filter((line) => line.trim() !== ""),
    Stream.mapEffect((line) => decodeLine(line)),
    Stream.filterMap(decodeEvent)
  )

/** `POST` the form; the answer as a stream of events. */
export const generateMusic = <E>(client: HttpClient.HttpClient.With<E>) => (input: MusicInput) =>
  Stream.unwrap(Effect.gen(function*() {
    const request = HttpClientRequest.post(generate.path).pipe(HttpClientRequest.setBody(yield* bodyOf(input)))
    const response = yield* client.execute(request)
    return eventsOf(response.stream.pipe(Stream.decodeText(), Stream.splitLines))
  }))

/** What text to music is asked with: a prompt, and the length in seconds (0 or absent: the model decides). */
export interface TextToMusicInput {
  readonly prompt: string
  readonly duration?: number | undefined
}

const generateText = Api.groups["musicProxy"]!.endpoints["generateTextToMusic"]!

/** `POST` the prompt as the host's music node does (URL-encoded), checked against the contract first; the answer as a stream of events. */
export const generateTextToMusic = <E>(client: HttpClient.HttpClient.With<E>) => (input: TextToMusicInput) =>
  Stream.unwrap(Effect.gen(function*() {
    const { duration, prompt } = yield* Schema.decodeUnknownEffect(TextToMusicRequest)(input)
    const fields = duration === undefined ? { prompt } : { prompt, duration: String(duration) }
    const request = HttpClientRequest.post(generateText.path).pipe(
      HttpClientRequest.setBody(HttpBody.urlParams(UrlParams.fromInput(fields)))
    )
    const response = yield* client.execute(request)
    return eventsOf(response.stream.pipe(Stream.decodeText(), Stream.splitLines))
  }))
