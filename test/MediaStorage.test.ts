/**
 * Media storage for the host's API nodes, exactly as `comfy_api_nodes/util/upload_helpers.py`
 * (`upload_file_to_comfyapi`, `upload_file`) uses it: POST /customers/storage with
 * `{file_name, content_type}`, a PUT of the bytes to `upload_url` with that Content-Type (or
 * none), then `download_url` handed to a vendor, who reads it without credentials. Also: the
 * per-file and per-user limits (413), signatures, safe serving, `file_hash`, expiry and the sweep,
 * and a property test of the request's validation.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import * as fc from "fast-check"
import { createHash, randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import { onInstance } from "./support/Client.ts"
import { query } from "./support/Db.ts"
import { expectError, expectStatus, send } from "./support/Http.ts"
import { forAll } from "./support/Property.ts"
import { rawRequestPromise } from "./support/RawHttp.ts"
import { type Running, Service } from "./support/Service.ts"

const maxFileBytes = 64 * 1024
const maxUserBytes = 160 * 1024

const TestService = Service.layer((c) => ({
  ...c,
  storage: { ...c.storage, signingSecret: Option.some(Redacted.make("media-signing-secret-of-this-test")) },
  media: { ...c.media, maxFileBytes, maxUserBytes, sweepIntervalMillis: 200 }
}))

interface Resource {
  readonly upload_url?: string
  readonly download_url: string
  readonly existing_file: boolean
  readonly expires_at: string
}

const tokenOf = (service: Running, sub: string) => Effect.promise(() => service.token({ sub }))

/** `sync_op` of the API nodes: JSON body, Accept: application/json, the user's bearer token. */
const createFile = (service: Running, jwt: string, body: object) =>
  Effect.map(
    send<Resource>(service, "POST", "/customers/storage", { token: jwt, body, headers: { accept: "application/json" } }),
    (answer) => expectStatus(answer, 200, "POST /customers/storage").body
  )

/** `upload_file`: PUT of the bytes with Content-Type when there is one, nothing else. */
const put = (service: Running, url: string, bytes: Uint8Array | ReadableStream<Uint8Array>, contentType?: string) =>
  Effect.promise(async () => {
    const response = await fetch(onInstance(service, url), {
      method: "PUT",
      body: bytes,
      headers: contentType === undefined ? {} : { "content-type": contentType },
      ...(bytes instanceof Uint8Array ? {} : { duplex: "half" })
    } as RequestInit)
    const text = await response.text()
    return { status: response.status, headers: response.headers, text, body: text === "" ? undefined : JSON.parse(text) }
  })

/** What a vendor does with `download_url`: a plain GET, no credentials. */
const download = (service: Running, url: string) =>
  Effect.promise(async () => {
    const response = await fetch(onInstance(service, url))
    return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) }
  })

/** A body sent in chunks without a Content-Length: the limit must hold while it streams. */
const chunked = (total: number) => {
  let sent = 0
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= total) return controller.close()
      const n = Math.min(8192, total - sent)
      sent += n
      controller.enqueue(randomBytes(n))
    }
  })
}

const mediaFilesOnDisk = (service: Running) =>
  Effect.promise(async () => {
    const dir = service.config.storage.dir
    const top = (await fs.readdir(dir).catch(() => [])).filter((f) => f.startsWith("media-"))
    const incoming = await fs.readdir(`${dir}/.incoming`).catch(() => [])
    return [...top, ...incoming.filter((f) => f.startsWith("media-")).map((f) => `.incoming/${f}`)]
  })

const tokenIn = (file: Resource) => new URL(file.download_url).pathname.split("/")[2]!

const fileId = (service: Running, file: Resource) =>
  Effect.map(
    query<{ id: string }>(service, "SELECT id::text FROM media_files WHERE token = $1", [tokenIn(file)]),
    (rows) => rows[0]!.id
  )

const sleep = (ms: number) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))

layer(TestService, { excludeTestServices: true })("media storage", (it) => {
  it.effect("upload_helpers.py: create, PUT with its Content-Type, download unauthenticated, bytes and type intact", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwt = yield* tokenOf(service, "ada")
      const png = randomBytes(40_000)
      const before = Date.now()
      const file = yield* createFile(service, jwt, { file_name: "uploaded_image.png", content_type: "image/png" })
      expect(file.existing_file).toBe(false)
      expect(file.download_url.startsWith(`${service.config.publicBaseUrl}/media/`)).toBe(true)
      expect(file.download_url.endsWith("/uploaded_image.png")).toBe(true)
      expect(file.upload_url!.startsWith(`${file.download_url}?expires=`)).toBe(true)
      const ttl = Date.parse(file.expires_at) - before
      expect(ttl).toBeGreaterThan(24 * 3600_000 - 60_000)
      expect(ttl).toBeLessThan(24 * 3600_000 + 60_000)

      // nothing to download before the upload
      expect((yield* download(service, file.download_url)).status).toBe(404)
      const uploaded = yield* put(service, file.upload_url!, png, "image/png")
      expect(uploaded.status).toBe(204)

      const got = yield* download(service, file.download_url)
      expect(got.status).toBe(200)
      expect(got.bytes.equals(png)).toBe(true)
      expect(got.headers.get("content-type")).toBe("image/png")
      expect(got.headers.get("x-content-type-options")).toBe("nosniff")
      expect(got.headers.get("content-disposition")).toMatch(/^inline; filename="uploaded_image.png"/)
      expect(got.headers.get("content-security-policy")).toContain("sandbox")
    }))

  it.effect("upload_helpers.py without a mime type: no content_type, a PUT without Content-Type, unknown bytes served as bytes", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwt = yield* tokenOf(service, "ada")
      // a leading zero: bytes of no format the upload could tell (test/MediaStorage/SniffedTypes.test.ts)
      const bytes = Buffer.concat([Buffer.from([0]), randomBytes(999)])
      const file = yield* createFile(service, jwt, { file_name: "uploaded_audio.mp4" })
      expect((yield* put(service, file.upload_url!, bytes)).status).toBe(204)
      const got = yield* download(service, file.download_url)
      expect(got.bytes.equals(bytes)).toBe(true)
      expect(got.headers.get("content-type")).toBe("application/octet-stream")
      expect(got.headers.get("content-disposition")).toMatch(/^attachment;/)
    }))

  it.effect("HTML and SVG are attachments under nosniff and a sandbox: an upload never runs on this origin", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwt = yield* tokenOf(service, "eve")
      for (const [name, type] of [["page.html", "text/html"], ["image.svg", "image/svg+xml"]] as const) {
        const file = yield* createFile(service, jwt, { file_name: name, content_type: type })
        expect((yield* put(service, file.upload_url!, Buffer.from("<script>alert(1)</script>"), type)).status).toBe(204)
        const got = yield* download(service, file.download_url)
        expect(got.headers.get("content-type")).toBe(type)
        expect(got.headers.get("content-disposition")).toBe(`attachment; filename="${name}"; filename*=UTF-8''${name}`)
        expect(got.headers.get("x-content-type-options")).toBe("nosniff")
      }
    }))

  it.effect("a forged or tampered URL is 403, another Content-Type 415, and nothing is stored", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwt = yield* tokenOf(service, "ian")
      const file = yield* createFile(service, jwt, { file_name: "a.png", content_type: "image/png" })
      const url = new URL(file.upload_url!)
      const signature = url.searchParams.get("signature")!
      const tampered = new URL(url)
      tampered.searchParams.set("signature", (signature[0] === "A" ? "B" : "A") + signature.slice(1))
      expectError(yield* put(service, tampered.toString(), Buffer.from("x"), "image/png"), 403, "invalid_signature")
      const extended = new URL(url)
      extended.searchParams.set("expires", String(Number(url.searchParams.get("expires")) + 1))
      expectError(yield* put(service, extended.toString(), Buffer.from("x"), "image/png"), 403, "invalid_signature")
      expectError(yield* put(service, file.download_url, Buffer.from("x"), "image/png"), 403, "invalid_signature")
      expectError(yield* put(service, file.upload_url!, Buffer.from("x"), "text/html"), 415, "unsupported_media_type")
      expect((yield* download(service, file.download_url)).status).toBe(404)
    }))

  it.effect("one file over the limit is 413: declared (before a byte is read) or streamed; nothing stays", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwt = yield* tokenOf(service, "ola")
      const file = yield* createFile(service, jwt, { file_name: "big.bin" })
      expectError(yield* put(service, file.upload_url!, randomBytes(maxFileBytes + 1)), 413, "payload_too_large")
      expectError(yield* put(service, file.upload_url!, chunked(maxFileBytes + 10_000)), 413, "payload_too_large")

      // a declared length over the limit is answered without waiting for the body
      const target = new URL(file.upload_url!)
      const raw = yield* Effect.promise(() =>
        rawRequestPromise(
          service.baseUrl,
          `PUT ${target.pathname}${target.search} HTTP/1.1\r\nHost: x\r\nContent-Length: ${maxFileBytes + 1}\r\nConnection: close\r\n\r\n`,
          5_000
        )
      )
      expect(raw.status).toBe(413)
      expect((yield* download(service, file.download_url)).status).toBe(404)
      const id = yield* fileId(service, file)
      expect((yield* mediaFilesOnDisk(service)).filter((f) => f.includes(id))).toEqual([])

      // exactly the limit fits
      expect((yield* put(service, file.upload_url!, randomBytes(maxFileBytes))).status).toBe(204)
    }))

  it.effect("a user's live files together stay within the limit: 413 beyond it, other users unaffected", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwt = yield* tokenOf(service, "uma")
      const sizes = [60 * 1024, 60 * 1024]
      for (const size of sizes) {
        const file = yield* createFile(service, jwt, { file_name: "part.bin" })
        expect((yield* put(service, file.upload_url!, randomBytes(size))).status).toBe(204)
      }
      const over = yield* createFile(service, jwt, { file_name: "over.bin" })
      const refused = yield* put(service, over.upload_url!, randomBytes(50 * 1024))
      expectError(refused, 413, "payload_too_large")
      expect((refused.body as { message: string }).message).toContain(String(maxUserBytes))
      expectError(yield* put(service, over.upload_url!, chunked(50 * 1024)), 413, "payload_too_large")
      // what is left still fits
      expect((yield* put(service, over.upload_url!, randomBytes(maxUserBytes - 120 * 1024))).status).toBe(204)
      // someone else's room is their own
      const other = yield* createFile(service, yield* tokenOf(service, "vic"), { file_name: "x.bin" })
      expect((yield* put(service, other.upload_url!, randomBytes(60 * 1024))).status).toBe(204)
    }))

  it.effect("concurrent uploads that each fit alone but not together: exactly the excess one is 413", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwt = yield* tokenOf(service, "con")
      const files = yield* Effect.forEach([1, 2, 3], () => createFile(service, jwt, { file_name: "part.bin" }))
      const answers = yield* Effect.forEach(files, (file) => put(service, file.upload_url!, randomBytes(60 * 1024)), {
        concurrency: "unbounded"
      })
      expect(answers.map((a) => a.status).sort()).toEqual([204, 204, 413])
      const rows = yield* query<{ used: string }>(service, "SELECT sum(size_bytes)::text AS used FROM media_files WHERE owner_id = 'con'")
      expect(Number(rows[0]!.used)).toBe(120 * 1024)
    }))

  it.effect("file_hash of a live file of the caller answers that file, with no upload", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwt = yield* tokenOf(service, "hal")
      const bytes = randomBytes(2000)
      const hash = createHash("sha256").update(bytes).digest("hex")
      const first = yield* createFile(service, jwt, { file_name: "x.png", content_type: "image/png", file_hash: hash })
      expect(first.existing_file).toBe(false)
      yield* put(service, first.upload_url!, bytes, "image/png")
      const again = yield* createFile(service, jwt, { file_name: "x.png", content_type: "image/png", file_hash: hash.toUpperCase() })
      expect(again).toEqual({ download_url: first.download_url, existing_file: true, expires_at: first.expires_at })
      // another user's file with the same bytes is not theirs to learn of
      const stranger = yield* createFile(service, yield* tokenOf(service, "sam"), { file_name: "x.png", file_hash: hash })
      expect(stranger.existing_file).toBe(false)
    }))

  it.effect("an expired file is gone at once, and the sweep deletes its bytes and its row", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwt = yield* tokenOf(service, "tom")
      const file = yield* createFile(service, jwt, { file_name: "old.png", content_type: "image/png" })
      yield* put(service, file.upload_url!, randomBytes(100), "image/png")
      const token = tokenIn(file)
      const id = yield* fileId(service, file)
      expect(yield* mediaFilesOnDisk(service)).toContain(`media-${id}`)

      yield* query(service, "UPDATE media_files SET expires_at = now() - interval '1 second' WHERE token = $1", [token])
      expect((yield* download(service, file.download_url)).status).toBe(404)
      expectError(yield* put(service, file.upload_url!, randomBytes(100), "image/png"), 404, "not_found")
      for (let i = 0; i < 50; i++) {
        const rows = yield* query(service, "SELECT 1 FROM media_files WHERE id = $1", [id])
        if (rows.length === 0 && !(yield* mediaFilesOnDisk(service)).includes(`media-${id}`)) return
        yield* sleep(100)
      }
      expect.fail("the sweep did not delete the expired file within 5 s")
    }))

  const fileName = fc.oneof(
    fc.string({ minLength: 0, maxLength: 260 }),
    fc.constantFrom("a/b.png", "a\\b.png", "..", ".", "tab\there", "ok.png", "é.png")
  )
  const contentType = fc.option(
    fc.oneof(fc.constantFrom("image/png", "video/mp4", "IMAGE/PNG", "image/png; q=1", "png", "/png", "image/", ""), fc.string()),
    { nil: undefined }
  )
  const fileHash = fc.option(fc.oneof(fc.string({ maxLength: 140 }), fc.constant("a".repeat(64))), { nil: undefined })
  const validName = (s: string) => s.length >= 1 && s.length <= 255 && !/[\u0000-\u001f\u007f/\\]/.test(s) && s !== "." && s !== ".."
  const validType = (s: string) => s.length <= 127 && /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*$/.test(s)

  it.effect(
    "a request is accepted exactly when its file name, media type and hash are valid",
    () =>
      forAll(
        { name: fileName, type: contentType, hash: fileHash },
        ({ name, type, hash }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const body = { file_name: name, ...(type === undefined ? {} : { content_type: type }), ...(hash === undefined ? {} : { file_hash: hash }) }
            const valid = validName(name) && (type === undefined || validType(type)) && (hash === undefined || hash.length <= 128)
            const answer = yield* send<Resource>(service, "POST", "/customers/storage", { token: yield* tokenOf(service, "pat"), body })
            if (valid) {
              expectStatus(answer, 200, JSON.stringify(body))
              expect(decodeURIComponent(new URL(answer.body.download_url).pathname.split("/")[3]!)).toBe(name)
            } else {
              expectError(answer, 400, "bad_request")
            }
          }),
        { numRuns: 60 }
      ),
    120_000
  )
})
