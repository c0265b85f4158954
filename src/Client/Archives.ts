/**
 * Archives travel as bodies of their own, outside the JSON the derived endpoints speak: an upload
 * is the zip itself, streamed to its signed URL, and a download is a byte stream.
 *
 * Files are read with `node:fs` rather than Effect's FileSystem service: the client is published
 * on its own, and Effect's Node implementation of that service would be a second dependency.
 */
import * as fs from "node:fs"
import { Effect, PlatformError, Stream } from "effect"
import { HttpBody, HttpClient, HttpClientRequest } from "effect/http"

/** An archive: a file on disk (streamed from it) or bytes in memory. */
export type ArchiveSource = string | Uint8Array

export interface UploadOptions {
  /** Called as the body is sent: bytes sent so far, and the archive's size. */
  readonly onProgress?: ((sent: number, total: number) => void) | undefined
}

/** Chunks of an archive held in memory, so that its progress is told as it goes. */
const chunkBytes = 64 * 1024

const chunksOf = (bytes: Uint8Array) =>
  Stream.fromIterable(Array.from(
    { length: Math.ceil(bytes.length / chunkBytes) },
    (_, i) => bytes.subarray(i * chunkBytes, (i + 1) * chunkBytes)
  ))

/** A failure of `method` on the file at `path`, as Effect's platform errors word it. */
const fileError = (method: string, path: string) => (cause: unknown) => {
  const code = (cause as NodeJS.ErrnoException | undefined)?.code
  return PlatformError.systemError({
    _tag: code === "ENOENT" ? "NotFound" : code === "EACCES" || code === "EPERM" ? "PermissionDenied" : "Unknown",
    module: "FileSystem",
    method,
    pathOrDescriptor: path,
    description: cause instanceof Error ? cause.message : String(cause),
    cause
  })
}

/** The file at `path`, read as it is sent (each run of the stream opens it again). */
const fileStream = (path: string): Stream.Stream<Uint8Array, PlatformError.PlatformError> =>
  Stream.suspend(() =>
    Stream.fromAsyncIterable(fs.createReadStream(path) as AsyncIterable<Uint8Array>, fileError("stream", path))
  )

/** The bytes of `source` (an archive, or the music call's video) and how many there are. */
export const contentOf = (
  source: ArchiveSource
): Effect.Effect<{ readonly bytes: Stream.Stream<Uint8Array, PlatformError.PlatformError>; readonly size: number }, PlatformError.PlatformError> =>
  typeof source === "string"
    ? Effect.map(
      Effect.tryPromise({ try: () => fs.promises.stat(source), catch: fileError("stat", source) }),
      (info) => ({ bytes: fileStream(source), size: info.size })
    )
    : Effect.succeed({ bytes: chunksOf(source), size: source.length })

/** `PUT` an archive to a signed upload URL as application/zip, telling `onProgress` as it goes. */
export const uploadArchive = <E>(client: HttpClient.HttpClient.With<E>) =>
(signedUrl: string, source: ArchiveSource, options: UploadOptions = {}) =>
  Effect.gen(function*() {
    const { bytes, size } = yield* contentOf(source)
    let sent = 0
    const told = options.onProgress === undefined ? bytes : Stream.tap(bytes, (chunk) =>
      Effect.sync(() => {
        sent += chunk.length
        options.onProgress?.(sent, size)
      }))
    const request = HttpClientRequest.put(signedUrl).pipe(
      HttpClientRequest.setBody(HttpBody.stream(told, "application/zip", size))
    )
    // the answer (the version as it now is) is read, so that its connection is free again
    yield* Effect.flatMap(client.execute(request), (response) => response.arrayBuffer)
  })

/** Redirects an archive's URL may take: the registry's answer, to the object store's signed URL. */
const maxRedirects = 3

/**
 * `GET` an archive: its bytes as a stream, and its size when the answer declares one. Under
 * object storage the registry answers 302 to a signed URL of the bucket, which is followed here
 * (fetch follows it by itself; Node's client does not).
 */
export const download = <E>(client: HttpClient.HttpClient.With<E>) => (url: string) =>
  Effect.map(
    // redirects first: a 302 is no failure, the answer at its end is judged
    HttpClient.filterStatusOk(HttpClient.followRedirects(client, maxRedirects)).execute(HttpClientRequest.get(url)),
    (response) => {
      const length = Number(response.headers["content-length"])
      return { size: Number.isFinite(length) ? length : undefined, bytes: response.stream }
    }
  )
