/**
 * Signed uploads: forged, tampered and expired URLs are refused before a byte is stored; a
 * half-sent upload leaves no archive and the version Pending; the size limit, the content type,
 * and the automated checks (`../` and absolute entries, not a zip, no file, a zip bomb's
 * declared sizes) each have their answer; a version that left Pending is immutable.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import * as fs from "node:fs/promises"
import * as http from "node:http"
import * as net from "node:net"
import { makeUrlSigner } from "../../src/Storage/Signing.ts"
import { decodeVersion } from "../support/Catalogue.ts"
import { bytesOf, clientFor, onInstance, withFiles } from "../support/Client.ts"
import { queryOne } from "../support/Db.ts"
import { type Answer, expectError, expectStatus, get } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"
import { rawZip, zipOf } from "../support/Zip.ts"
import { expectRejected, makePublisher, pathOf, type Publisher, published, upload } from "./Flow.ts"

const signingSecret = "upload-signing-secret-of-this-test"
const maxArchiveBytes = 64 * 1024

const TestService = Service.layer((c) => ({
  ...c,
  storage: { ...c.storage, maxArchiveBytes, signingSecret: Option.some(Redacted.make(signingSecret)) }
}))

/** The files in the archive folder (temporary uploads included). */
const storedFiles = (service: Running) =>
  Effect.promise(async () => {
    const dir = service.config.storage.dir
    const top = (await fs.readdir(dir)).filter((f) => f !== ".incoming")
    const incoming = await fs.readdir(`${dir}/.incoming`).catch(() => [])
    return [...top, ...incoming.map((f) => `.incoming/${f}`)]
  })

const versionRow = (service: Running, nodeId: string, version: string) =>
  Effect.map(
    queryOne<{ status: string; archive_bytes: string | null; id: string }>(
      service,
      "SELECT status, archive_bytes, id::text FROM node_versions WHERE node_id = $1 AND version = $2",
      [nodeId, version]
    ),
    (row) => row ?? expect.fail(`no version ${nodeId}@${version}`)
  )

const validZip = () => Effect.promise(() => zipOf({ "pkg/__init__.py": "print('hello')\n" }))

const sleep = (ms: number) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))

/** The stored files once no upload is in progress (the service notices a vanished client on its own time). */
const settledFiles = (service: Running) =>
  Effect.gen(function*() {
    for (let i = 0; i < 100; i++) {
      const files = yield* storedFiles(service)
      if (!files.some((f) => f.startsWith(".incoming/"))) return files
      yield* sleep(100)
    }
    return yield* storedFiles(service)
  })

layer(TestService, { excludeTestServices: true })("signed uploads", (it) => {
  let acme: Publisher

  it.effect("setup: a publisher", () =>
    Effect.gen(function*() {
      acme = yield* makePublisher(yield* Service, "acme")
    }))

  it.effect("forged, tampered and expired URLs are 403 and store nothing", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const { signedUrl } = yield* published(service, acme, "signed", "1.0.0")
      yield* published(service, acme, "signed", "1.0.1")
      const zip = yield* validZip()
      const url = new URL(signedUrl)
      const expires = url.searchParams.get("expires")!
      const signature = url.searchParams.get("signature")!
      const flip = (s: string) => (s[0] === "A" ? "B" : "A") + s.slice(1)
      const { id } = yield* versionRow(service, "signed", "1.0.0")
      const expired = yield* makeUrlSigner(Redacted.make(signingSecret), "http://x", -60)
        .uploadUrl({ nodeId: "signed", version: "1.0.0", versionId: id })
      const forgedKey = yield* makeUrlSigner(Redacted.make("another key"), "http://x", 3600)
        .uploadUrl({ nodeId: "signed", version: "1.0.0", versionId: id })
      const cases: ReadonlyArray<readonly [string, string, string]> = [
        ["no signature", `/archives/signed/1.0.0?expires=${expires}`, "invalid_signature"],
        ["no expiry", `/archives/signed/1.0.0?signature=${signature}`, "invalid_signature"],
        ["a flipped signature", `/archives/signed/1.0.0?expires=${expires}&signature=${flip(signature)}`, "invalid_signature"],
        ["a later expiry", `/archives/signed/1.0.0?expires=${Number(expires) + 3600}&signature=${signature}`, "invalid_signature"],
        ["another version", `/archives/signed/1.0.1?expires=${expires}&signature=${signature}`, "invalid_signature"],
        ["another node", `/archives/other/1.0.0?expires=${expires}&signature=${signature}`, "invalid_signature"],
        ["another key", pathOf(forgedKey), "invalid_signature"],
        ["garbage", `/archives/signed/1.0.0?expires=abc&signature=${"x".repeat(300)}`, "bad_request"],
        ["expired", pathOf(expired), "url_expired"]
      ]
      for (const [what, target, code] of cases) {
        const answer = yield* upload(service, `http://x${target}`, zip)
        expectError(answer as Answer, code === "bad_request" ? 400 : 403, code)
        expect(what.length).toBeGreaterThan(0)
      }
      expect(yield* storedFiles(service)).toEqual([])
      expect(yield* versionRow(service, "signed", "1.0.0")).toMatchObject({ status: "NodeVersionStatusPending", archive_bytes: null })
      // the genuine URL still works, once (the same bytes again are a replay: Retries.test.ts)
      expectStatus(yield* upload(service, signedUrl, zip), 200, "genuine upload")
      const other = yield* Effect.promise(() => zipOf({ "pkg/__init__.py": "print('another')\n" }))
      expectError((yield* upload(service, signedUrl, other)) as Answer, 409, "version_immutable")
    }))

  it.effect("a half-sent upload leaves no archive and the version Pending; a full one then succeeds", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const { signedUrl } = yield* published(service, acme, "half", "1.0.0")
      const zip = yield* validZip()
      const before = yield* storedFiles(service)
      yield* Effect.promise(() =>
        new Promise<void>((resolve, reject) => {
          const port = Number(new URL(service.baseUrl).port)
          const socket = net.connect(port, "127.0.0.1", () => {
            socket.write(
              `PUT ${pathOf(signedUrl)} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/zip\r\n` +
                `content-length: ${zip.length + 10_000}\r\n\r\n`
            )
            socket.write(zip.subarray(0, Math.floor(zip.length / 2)))
            setTimeout(() => {
              socket.destroy()
              resolve()
            }, 300)
          })
          socket.on("error", reject)
        })
      )
      expect(yield* settledFiles(service)).toEqual(before)
      expect(yield* versionRow(service, "half", "1.0.0")).toMatchObject({ status: "NodeVersionStatusPending", archive_bytes: null })
      const answer = expectStatus(yield* upload(service, signedUrl, zip), 200, "full upload")
      expect(decodeVersion(answer.body).status).toBe("NodeVersionStatusActive")
      const { id } = yield* versionRow(service, "half", "1.0.0")
      expect(yield* storedFiles(service)).toContain(`${id}.zip`)
    }))

  it.effect("archives failing the checks are refused with 422 naming each check; nothing stored, still Pending", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const bad: ReadonlyArray<readonly [string, Uint8Array, ReadonlyArray<readonly [string, RegExp]>]> = [
        ["1.0.0", rawZip([{ name: "ok.py", content: "x" }, { name: "../evil.py", content: "import os" }]), [["entry_names", /'\.\.'/]]],
        ["1.0.1", rawZip([{ name: "pkg/../../evil.py", content: "x" }]), [["entry_names", /'\.\.'/]]],
        ["1.0.2", rawZip([{ name: "/etc/cron.d/evil", content: "x" }]), [["entry_names", /absolute/]]],
        ["1.0.3", rawZip([{ name: "C:/Windows/evil.dll", content: "x" }]), [["entry_names", /drive letter/]]],
        ["1.0.4", rawZip([{ name: "..\\evil.py", content: "x" }]), [["entry_names", /backslash/]]],
        ["1.0.5", Buffer.from("this is not a zip archive at all"), [["readable_zip", /not a readable zip/]]],
        ["1.0.6", rawZip([{ name: "empty-folder/", content: "" }]), [["has_files", /no file/]]],
        // a stored entry declaring more than it holds is not a readable zip
        ["1.0.7", rawZip([{ name: "bomb.bin", content: "x", declaredSize: 4_000_000_000 }]), [["readable_zip", /uncompress/]]],
        // every unsafe name is named in one check, and what made the zip unreadable is a check of its own
        ["1.0.8", rawZip([
          { name: "/abs", content: "x" },
          { name: "a/../b", content: "x" },
          { name: "bomb.bin", content: "x", declaredSize: 4_000_000_000 }
        ]), [["entry_names", /'\/abs' is an absolute path; entry 'a\/\.\.\/b' has a '\.\.' segment$/], ["readable_zip", /uncompress/]]],
        // a zip bomb: compresses far below the size limit, declares far beyond twenty times it
        ["1.0.9", yield* Effect.promise(() => zipOf({ "zeros.txt": "0".repeat(maxArchiveBytes * 25) })), [["uncompressed_size", /uncompress to more than/]]]
      ]
      const before = yield* storedFiles(service)
      for (const [version, bytes, checks] of bad) {
        const { signedUrl } = yield* published(service, acme, "checked", version)
        const details = expectRejected(yield* upload(service, signedUrl, bytes))
        expect(details.map((d) => d.check), version).toEqual(checks.map(([check]) => check))
        checks.forEach(([, message], i) => expect(details[i]!.message, version).toMatch(message))
        // still Pending, without an archive: not installable, not downloadable, not the latest
        expect(yield* versionRow(service, "checked", version)).toMatchObject({ status: "NodeVersionStatusPending", archive_bytes: null })
        expectError(yield* get(service, `/archives/checked/${version}`), 404)
        expectError(yield* get(service, `/nodes/checked/install?version=${version}`), 404, "no_installable_version")
      }
      expect(yield* settledFiles(service)).toEqual(before)
      expect(((yield* get(service, "/nodes/checked")).body as { latest_version?: unknown }).latest_version).toBeUndefined()
      // a corrected archive to the same URL is taken
      const { signedUrl } = yield* published(service, acme, "checked", "1.0.6")
      const fixed = decodeVersion(expectStatus(yield* upload(service, signedUrl, yield* validZip()), 200, "corrected").body)
      expect(fixed.status).toBe("NodeVersionStatusActive")
    }))

  it.effect("size limit (413, nothing stored), content type (415), pending downloads (404)", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const { signedUrl } = yield* published(service, acme, "limits", "1.0.0")
      const before = yield* storedFiles(service)
      const big = Buffer.alloc(maxArchiveBytes + 1, 7)
      const tooLarge = yield* upload(service, signedUrl, big)
      expectError(tooLarge as Answer, 413, "payload_too_large")
      // streamed without a length: the limit is enforced while reading, and answered at once
      const chunked = yield* Effect.promise(() =>
        new Promise<{ status: number; body: string }>((resolve, reject) => {
          const request = http.request(service.baseUrl + pathOf(signedUrl), {
            method: "PUT",
            headers: { "content-type": "application/zip", "transfer-encoding": "chunked" }
          })
          request.on("response", (response) => {
            let body = ""
            response.on("data", (c: Buffer) => (body += c.toString()))
            response.on("end", () => resolve({ status: response.statusCode ?? 0, body }))
          })
          request.on("error", reject)
          let sent = 0
          const sendMore = () => {
            if (sent > maxArchiveBytes * 4 || request.destroyed) return request.end()
            sent += 8 * 1024
            request.write(new Uint8Array(8 * 1024), () => setImmediate(sendMore))
          }
          sendMore()
        })
      )
      expect(chunked.status).toBe(413)
      expect(JSON.parse(chunked.body)).toMatchObject({ error: "payload_too_large" })
      expect(yield* settledFiles(service)).toEqual(before)
      expect(yield* versionRow(service, "limits", "1.0.0")).toMatchObject({ status: "NodeVersionStatusPending", archive_bytes: null })
      expectError((yield* upload(service, signedUrl, yield* validZip(), "application/json")) as Answer, 415, "unsupported_media_type")
      expectError(yield* get(service, "/archives/limits/1.0.0"), 404)
      const client = yield* clientFor(service)
      const zip = yield* validZip()
      yield* withFiles(client.uploadArchive(onInstance(service, signedUrl), zip))
      const got = yield* client.download("/archives/limits/1.0.0")
      expect(got.size).toBe(zip.length)
      expect(Buffer.compare(yield* bytesOf(got.bytes), zip)).toBe(0)
    }))
})
