/**
 * Archives travel as bodies of their own, outside the JSON the derived endpoints speak: an upload
 * is the zip itself, streamed to its signed URL, and a download is a byte stream.
 */
import { Effect, FileSystem, Stream } from "effect"
import { HttpBody, type HttpClient, HttpClientRequest } from "effect/http"

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

/** The bytes of `source` (an archive, or the music call's video) and how many there are. */
export const contentOf = (source: ArchiveSource) =>
  typeof source === "string"
    ? Effect.flatMap(FileSystem.FileSystem, (fs) =>
      Effect.map(fs.stat(source), (info) => ({ bytes: fs.stream(source), size: Number(info.size) })))
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

/** `GET` an archive: its bytes as a stream, and its size when the answer declares one. */
export const download = <E>(client: HttpClient.HttpClient.With<E>) => (url: string) =>
  Effect.map(client.execute(HttpClientRequest.get(url)), (response) => {
    const length = Number(response.headers["content-length"])
    return { size: Number.isFinite(length) ? length : undefined, bytes: response.stream }
  })
