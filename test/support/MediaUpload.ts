/**
 * A media upload driven by hand, for the tests of slow and stalled uploads: a signed upload URL
 * of a new file, and the raw head of its `PUT`.
 */
import { Effect } from "effect"
import { onInstance } from "./Client.ts"
import { expectStatus, send } from "./Http.ts"
import type { Running } from "./Service.ts"

/** The signed upload URL (on `service`) of a new media file of user `sub`. */
export const mediaUploadTarget = (service: Running, sub: string, fileName: string) =>
  Effect.gen(function*() {
    const jwt = yield* Effect.promise(() => service.token({ sub }))
    const created = yield* send<{ upload_url: string }>(service, "POST", "/customers/storage", {
      token: jwt,
      body: { file_name: fileName, content_type: "application/octet-stream" }
    })
    return new URL(onInstance(service, expectStatus(created, 200, "POST /customers/storage").body.upload_url))
  })

/** The head of a `PUT` of `length` bytes to `target`, closing the connection after its answer. */
export const putHead = (target: URL, length: number) =>
  `PUT ${target.pathname}${target.search} HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
  `Content-Type: application/octet-stream\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n`

/** `bytes` cut in `count` pieces of equal size. */
export const piecesOf = (bytes: Buffer, count: number) => {
  const size = Math.ceil(bytes.length / count)
  return Array.from({ length: count }, (_, i) => bytes.subarray(i * size, (i + 1) * size))
}
