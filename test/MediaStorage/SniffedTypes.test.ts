/**
 * Uploaded media without a declared type are served as the type their first bytes tell, over real
 * HTTP as comfy_api_nodes/util/upload_helpers.py uploads them: `upload_images_to_comfyapi` without
 * a `mime_type` POSTs /customers/storage with `{file_name}` alone and PUTs the bytes with no
 * Content-Type (`skip_auto_headers`). The bytes arrive in pieces of a few bytes at first, so the
 * head is assembled across chunks; the file is read once, as it streams to storage.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { onInstance } from "../support/Client.ts"
import { expectStatus, send } from "../support/Http.ts"
import { mediaHeads } from "../support/MediaFixtures.ts"
import { type Running, Service } from "../support/Service.ts"

interface Resource {
  readonly upload_url: string
  readonly download_url: string
}

const createFile = (service: Running, jwt: string, body: object) =>
  Effect.map(
    send<Resource>(service, "POST", "/customers/storage", { token: jwt, body, headers: { accept: "application/json" } }),
    (answer) => expectStatus(answer, 200, "POST /customers/storage").body
  )

/** `upload_file` without a content type: a PUT with no Content-Type, its body streamed 3 bytes at a time at first. */
const putInPieces = (service: Running, url: string, bytes: Buffer, contentType?: string) =>
  Effect.promise(async () => {
    let at = 0
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (at >= bytes.length) return controller.close()
        const size = at < 96 ? 3 : 4096
        controller.enqueue(bytes.subarray(at, at + size))
        at += size
      }
    })
    const response = await fetch(onInstance(service, url), {
      method: "PUT",
      body,
      headers: contentType === undefined ? {} : { "content-type": contentType },
      duplex: "half"
    } as RequestInit)
    await response.text()
    return response.status
  })

const download = (service: Running, url: string) =>
  Effect.promise(async () => {
    const response = await fetch(onInstance(service, url))
    return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) }
  })

layer(Service.layer(), { excludeTestServices: true })("media types told by the bytes", (it) => {
  it.effect("each format uploaded without a type is served as its type, inline, bytes intact", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwt = yield* Effect.promise(() => service.token({ sub: "sam" }))
      for (const { format, head, type } of mediaHeads) {
        const bytes = Buffer.concat([head, randomBytes(5000)])
        const file = yield* createFile(service, jwt, { file_name: "uploaded_file" })
        expect(yield* putInPieces(service, file.upload_url, bytes), format).toBe(204)
        const got = yield* download(service, file.download_url)
        expect(got.headers.get("content-type"), format).toBe(type)
        expect(got.headers.get("content-disposition"), format).toMatch(/^inline;/)
        expect(got.bytes.equals(bytes), format).toBe(true)
      }
    }))

  it.effect("application/octet-stream declared is no type either; a declared type is kept whatever the bytes", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwt = yield* Effect.promise(() => service.token({ sub: "sam" }))
      const [png, , , gif] = mediaHeads
      const octets = yield* createFile(service, jwt, { file_name: "a.bin", content_type: "application/octet-stream" })
      expect(yield* putInPieces(service, octets.upload_url, png!.head, "application/octet-stream")).toBe(204)
      expect((yield* download(service, octets.download_url)).headers.get("content-type")).toBe("image/png")

      const declared = yield* createFile(service, jwt, { file_name: "a.gif", content_type: "image/gif" })
      expect(yield* putInPieces(service, declared.upload_url, png!.head)).toBe(204)
      expect((yield* download(service, declared.download_url)).headers.get("content-type")).toBe("image/gif")
      // and an undeclared upload with a Content-Type is still refused, as before
      const undeclared = yield* createFile(service, jwt, { file_name: "b.png" })
      expect(yield* putInPieces(service, undeclared.upload_url, gif!.head, "image/gif")).toBe(415)
    }))

  it.effect("uploading other bytes again tells again; bytes of no known format stay application/octet-stream", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwt = yield* Effect.promise(() => service.token({ sub: "sam" }))
      const file = yield* createFile(service, jwt, { file_name: "again" })
      const wav = mediaHeads.find((m) => m.type === "audio/wav")!
      const webm = mediaHeads.find((m) => m.type === "video/webm")!
      expect(yield* putInPieces(service, file.upload_url, wav.head)).toBe(204)
      expect((yield* download(service, file.download_url)).headers.get("content-type")).toBe("audio/wav")
      expect(yield* putInPieces(service, file.upload_url, webm.head)).toBe(204)
      expect((yield* download(service, file.download_url)).headers.get("content-type")).toBe("video/webm")
      const unknown = Buffer.concat([Buffer.from([0, 1, 2, 3]), randomBytes(300)])
      expect(yield* putInPieces(service, file.upload_url, unknown)).toBe(204)
      const got = yield* download(service, file.download_url)
      expect(got.headers.get("content-type")).toBe("application/octet-stream")
      expect(got.headers.get("content-disposition")).toMatch(/^attachment;/)
    }))
})
