/**
 * Archive downloads over real HTTP: cached for good (immutable, strong ETag, 304), byte ranges
 * (206 with Content-Range, 416 past the end, If-Range), HEAD, and downloads counted by install
 * only. Ranges matter to download managers: ComfyUI-Manager's `glob/manager_downloader.py` hands
 * downloads to aria2 when COMFYUI_MANAGER_ARIA2_SERVER is set, which fetches in ranged segments
 * and resumes with `Range: bytes=<n>-`.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { randomBytes } from "node:crypto"
import { Node } from "../../src/Domain/Node.ts"
import { decodeExact } from "../support/Catalogue.ts"
import { decodeError, expectErrorBody, expectStatus, get } from "../support/Http.ts"
import { requestAsSent } from "../support/RawHttp.ts"
import { Service } from "../support/Service.ts"
import { zipOf } from "../support/Zip.ts"
import { installed, makePublisher, pathOf, published, upload } from "./Flow.ts"
import { forAll } from "../support/Property.ts"

const raw = requestAsSent

/** What a single range `spec` of `size` bytes must answer (RFC 9110, 14.1.2), written apart from the service. */
const expected = (spec: { readonly first?: number | undefined; readonly last?: number | undefined }, size: number) => {
  if (spec.first === undefined) {
    const suffix = spec.last!
    return suffix === 0 ? "unsatisfiable" : { start: Math.max(0, size - suffix), end: size - 1 }
  }
  if (spec.last !== undefined && spec.last < spec.first) return "whole"
  if (spec.first >= size) return "unsatisfiable"
  return { start: spec.first, end: Math.min(spec.last ?? size - 1, size - 1) }
}

const immutable = "public, max-age=31536000, immutable"
const decodeNode = decodeExact(Node)

layer(Service.layer(), { excludeTestServices: true })("archive downloads", (it) => {
  let path = ""
  let archive: Buffer = Buffer.alloc(0)

  const downloads = Effect.gen(function*() {
    const answer = expectStatus(yield* get(yield* Service, "/nodes/ranged"), 200, "node")
    return decodeNode(answer.body).downloads ?? 0
  })

  it.effect("setup: an installable version with a stored archive", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const publisher = yield* makePublisher(service, "acme")
      const { signedUrl } = yield* published(service, publisher, "ranged", "1.0.0")
      // random content: the zip stores it as it is, so the archive is tens of KiB
      archive = yield* Effect.promise(() => zipOf({ "pkg/__init__.py": "x = 1\n", "pkg/data.bin": randomBytes(40_000) }))
      expectStatus(yield* upload(service, signedUrl, archive), 200, "upload")
      path = pathOf((yield* installed(service, "ranged")).downloadUrl!)
    }))

  it.effect("the whole archive: immutable, strong ETag, Last-Modified, Accept-Ranges", () =>
    Effect.gen(function*() {
      const answer = yield* raw(yield* Service, path, { "accept-encoding": "br, gzip" })
      expect(answer.status).toBe(200)
      expect(answer.bytes.equals(archive)).toBe(true)
      expect(answer.headers).toMatchObject({
        "content-type": "application/zip",
        "content-length": String(archive.length),
        "cache-control": immutable,
        "accept-ranges": "bytes",
        "content-disposition": "attachment; filename=\"ranged-1.0.0.zip\""
      })
      // a zip is never compressed again
      expect(answer.headers["content-encoding"]).toBeUndefined()
      expect(answer.headers["etag"]).toMatch(/^"[^"]+"$/)
      expect(Date.parse(String(answer.headers["last-modified"]))).toBeGreaterThan(0)
    }))

  it.effect(
    "one range answers 206 with exactly those bytes, or 416 past the end",
    () =>
      forAll(
        [
          fc.oneof(
            fc.record({ first: fc.nat(70_000), last: fc.option(fc.nat(70_000), { nil: undefined }) }),
            fc.record({ last: fc.nat(70_000) })
          )
        ],
        ([spec]) =>
          Effect.gen(function*() {
            const header = `bytes=${"first" in spec ? spec.first : ""}-${spec.last ?? ""}`
            const answer = yield* raw(yield* Service, path, { range: header })
            const want = expected(spec, archive.length)
            if (want === "whole") {
              expect(answer.status, header).toBe(200)
              expect(answer.bytes.equals(archive)).toBe(true)
            } else if (want === "unsatisfiable") {
              expect(answer.status, header).toBe(416)
              expect(answer.headers["content-range"]).toBe(`bytes */${archive.length}`)
              expectErrorBody(decodeError(JSON.parse(answer.bytes.toString("utf8"))), "range_not_satisfiable")
            } else {
              expect(answer.status, header).toBe(206)
              expect(answer.headers["content-range"]).toBe(`bytes ${want.start}-${want.end}/${archive.length}`)
              expect(answer.headers["content-length"]).toBe(String(want.end - want.start + 1))
              expect(answer.headers["cache-control"]).toBe(immutable)
              expect(answer.bytes.equals(archive.subarray(want.start, want.end + 1))).toBe(true)
            }
          }),
        { numRuns: 80 }
      )
  )

  it.effect("several ranges, another unit or a malformed range answer the whole archive", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const range of ["bytes=0-9,20-29", "items=0-9", "bytes=abc", "bytes=-"]) {
        const answer = yield* raw(service, path, { range })
        expect(answer.status, range).toBe(200)
        expect(answer.bytes.equals(archive), range).toBe(true)
      }
    }))

  it.effect("If-None-Match naming the archive answers 304 even with a Range (RFC 9110, 13.2.2)", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const whole = yield* raw(service, path)
      const answer = yield* raw(service, path, { "if-none-match": String(whole.headers["etag"]), range: "bytes=0-9" })
      expect(answer.status).toBe(304)
      expect(answer.headers["content-range"]).toBeUndefined()
      expect(answer.bytes.length).toBe(0)
    }))

  it.effect("a download resumed as aria2 does: the parts join into the archive", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const cut = 12_345
      const first = yield* raw(service, path, { range: `bytes=0-${cut - 1}` })
      const rest = yield* raw(service, path, { range: `bytes=${cut}-`, "if-range": String(first.headers["etag"]) })
      expect([first.status, rest.status]).toEqual([206, 206])
      expect(Buffer.concat([first.bytes, rest.bytes]).equals(archive)).toBe(true)
    }))

  it.effect("If-Range: the current ETag or date honours the range, another validator sends the whole archive", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const whole = yield* raw(service, path)
      const etag = String(whole.headers["etag"])
      const lastModified = String(whole.headers["last-modified"])
      const ranged = (ifRange: string) => Effect.map(raw(service, path, { range: "bytes=0-99", "if-range": ifRange }), (a) => a.status)
      expect(yield* ranged(etag)).toBe(206)
      expect(yield* ranged(lastModified)).toBe(206)
      expect(yield* ranged(`W/${etag}`)).toBe(200)
      expect(yield* ranged("\"another\"")).toBe(200)
      expect(yield* ranged("Thu, 01 Jan 1998 00:00:00 GMT")).toBe(200)
    }))

  it.effect("If-None-Match answers 304 with the validators and no body", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const etag = String((yield* raw(service, path)).headers["etag"])
      for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
        const answer = yield* raw(service, path, { "if-none-match": inm })
        expect(answer.status, inm).toBe(304)
        expect(answer.bytes.length).toBe(0)
        expect(answer.headers).toMatchObject({ etag, "cache-control": immutable })
      }
      expect((yield* raw(service, path, { "if-none-match": "\"other\"" })).status).toBe(200)
    }))

  it.effect("HEAD answers the headers alone, whole or ranged, and counts no download", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const before = yield* downloads
      const head = yield* raw(service, path, {}, "HEAD")
      expect(head.status).toBe(200)
      expect(head.bytes.length).toBe(0)
      expect(head.headers).toMatchObject({ "content-length": String(archive.length), "content-type": "application/zip", "accept-ranges": "bytes" })
      const ranged = yield* raw(service, path, { range: "bytes=-10" }, "HEAD")
      expect(ranged.status).toBe(206)
      expect(ranged.headers["content-range"]).toBe(`bytes ${archive.length - 10}-${archive.length - 1}/${archive.length}`)
      yield* raw(service, path, { range: "bytes=100-" })
      expect(yield* downloads).toBe(before)
    }))

  it.effect("an archive that is not downloadable is a 404 without the caching headers", () =>
    Effect.gen(function*() {
      const answer = yield* raw(yield* Service, "/archives/ranged/9.9.9", { range: "bytes=0-1" })
      expect(answer.status).toBe(404)
      expect(answer.headers["cache-control"]).not.toBe(immutable)
    }))
})
