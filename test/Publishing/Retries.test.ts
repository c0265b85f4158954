/**
 * Retries that are safe (issue 22): a publish or an archive upload repeated with the same content
 * (its first answer lost) answers as the first did, with `Idempotent-Replayed: true`, and writes
 * nothing; other content is refused with the codes as before. Replays hold whatever the version
 * became since (Active, Flagged), through the race of two uploads of one version, and never for
 * a deleted version or one stored before digests were kept.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import { decodeVersion } from "../support/Catalogue.ts"
import { query, queryOne, rowCount } from "../support/Db.ts"
import { type Answer, expectError, expectStatus, get, send } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"
import { rawZip, zipOf } from "../support/Zip.ts"
import { decodePublished, expectRejected, makePublisher, pathOf, type Publisher, publish, published, upload } from "./Flow.ts"

const replayed = (answer: { readonly headers: Headers }) => answer.headers.get("idempotent-replayed")

const versionRows = (service: Running, nodeId: string) =>
  query<{ id: string; version: string; status: string; archive_bytes: number | null }>(
    service,
    "SELECT id::text, version, status, archive_bytes::int FROM node_versions WHERE node_id = $1 ORDER BY version",
    [nodeId]
  )

const zip = (text: string) => Effect.promise(() => zipOf({ "pkg/__init__.py": `${text}\n` }))

const sleep = (ms: number) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))

/**
 * An upload sent in two halves: the first at once (the service checks the version and starts
 * streaming), the second when `release` is called. Answers the release and the answer.
 */
const heldUpload = (service: Running, signedUrl: string, bytes: Uint8Array) => {
  let release = () => {}
  const answer = new Promise<Answer>((resolve, reject) => {
    const request = http.request(service.baseUrl + pathOf(signedUrl), {
      method: "PUT",
      headers: { "content-type": "application/zip", "content-length": String(bytes.length) }
    })
    request.on("response", (response) => {
      let text = ""
      response.on("data", (c: Buffer) => (text += c.toString()))
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: new Headers(Object.entries(response.headers).flatMap(([k, v]) => (typeof v === "string" ? [[k, v]] : []))),
          text,
          body: text === "" ? undefined : JSON.parse(text) as unknown
        }))
    })
    request.on("error", reject)
    const half = Math.floor(bytes.length / 2)
    request.write(bytes.subarray(0, half))
    release = () => void request.end(bytes.subarray(half))
  })
  return { answer, release: () => release() }
}

layer(Service.layer(), { excludeTestServices: true })("safe retries", (it) => {
  let acme: Publisher
  let admin = ""

  it.effect("setup: a publisher and a site admin", () =>
    Effect.gen(function*() {
      const service = yield* Service
      acme = yield* makePublisher(service, "acme")
      admin = yield* Effect.promise(() => service.token({ sub: "root", admin: true }))
    }))

  it.effect("a publish repeated with the same body is a replay: 201, the same version, a working URL, one row", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const first = expectStatus(yield* publish(service, acme.id, "again", "1.0.0", { pat: acme.pat }), 201, "first publish")
      expect(replayed(first)).toBeNull()
      const second = expectStatus(yield* publish(service, acme.id, "again", "1.0.0", { pat: acme.pat }), 201, "replayed publish")
      expect(replayed(second)).toBe("true")
      const [a, b] = [decodePublished(first.body), decodePublished(second.body)]
      expect(b.node_version).toEqual(a.node_version)
      expect(yield* versionRows(service, "again")).toHaveLength(1)
      // the token is no part of the manifest: the same body with a bearer token is the same publish
      const byJwt = expectStatus(yield* publish(service, acme.id, "again", "1.0.0", { jwt: acme.ownerJwt }), 201, "publish by JWT")
      expect(replayed(byJwt)).toBe("true")
      // so is a host range in another spelling, or under the host's alias: the manifest is the decoded request
      yield* published(service, acme, "again", "1.1.0", { versionFields: { supported_host_version: ">=1.2.0,<2.0.0" } })
      const respelt = yield* publish(service, acme.id, "again", "1.1.0", {
        pat: acme.pat,
        versionFields: { supported_comfyui_version: ">=1.2.0 <2.0.0" }
      })
      expect(replayed(expectStatus(respelt, 201, "the same range respelt"))).toBe("true")
      // the replay's fresh URL takes the archive
      const uploaded = expectStatus(yield* upload(service, b.signedUrl, yield* zip("again")), 200, "upload to the replay's URL")
      expect(decodeVersion(uploaded.body).status).toBe("NodeVersionStatusActive")
      expect(yield* versionRows(service, "again")).toHaveLength(2)
    }))

  it.effect("the same publish sent several times at once: all 201, one stores the version, the others are replays", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const answers = yield* Effect.all(
        Array.from({ length: 6 }, () => publish(service, acme.id, "at-once", "1.0.0", { pat: acme.pat })),
        { concurrency: "unbounded" }
      )
      expect(answers.map((answer) => answer.status)).toEqual(Array(6).fill(201))
      expect(answers.filter((answer) => replayed(answer) === null)).toHaveLength(1)
      expect(new Set(answers.map((answer) => decodePublished(answer.body).node_version.id)).size).toBe(1)
      expect(yield* versionRows(service, "at-once")).toHaveLength(1)
    }))

  it.effect("another body for an existing number is 409 version_exists, and changes nothing", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* published(service, acme, "other-body", "1.0.0")
      const node = { name: "other-body", description: "The other-body node" }
      const differences: ReadonlyArray<readonly [string, Parameters<typeof publish>[4]]> = [
        ["another changelog", { versionFields: { changelog: "a different release" } }],
        ["a field added", { versionFields: { deprecated: false } }],
        ["another node field", { node: { ...node, description: "changed" } }],
        ["no node fields", { node: {} }],
        ["tags added", { versionFields: { tags: ["a"] } }]
      ]
      for (const [what, options] of differences) {
        const answer = yield* publish(service, acme.id, "other-body", "1.0.0", { pat: acme.pat, ...options })
        expectError(answer, 409, "version_exists")
        expect(replayed(answer), what).toBeNull()
      }
      const [row] = yield* versionRows(service, "other-body")
      expect(row).toMatchObject({ status: "NodeVersionStatusPending" })
      const stored = yield* queryOne<{ description: string; changelog: string }>(
        service,
        "SELECT n.description, v.changelog FROM nodes n JOIN node_versions v ON v.node_id = n.id WHERE n.id = 'other-body'"
      )
      expect(stored).toEqual({ description: "The other-body node", changelog: "release 1.0.0" })
    }))

  it.effect("an upload repeated with the same bytes is a replay; other bytes are 409 version_immutable", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const { signedUrl } = yield* published(service, acme, "reupload", "1.0.0")
      const archive = yield* zip("reupload")
      const first = expectStatus(yield* upload(service, signedUrl, archive), 200, "first upload")
      expect(replayed(first)).toBeNull()
      const second = expectStatus(yield* upload(service, signedUrl, archive), 200, "replayed upload")
      expect(replayed(second)).toBe("true")
      expect(decodeVersion(second.body)).toEqual(decodeVersion(first.body))
      const other = yield* zip("something else")
      const cases: ReadonlyArray<readonly [string, Uint8Array]> = [
        ["other bytes", other],
        ["one byte more", Buffer.concat([archive, Buffer.from([0])])],
        ["one byte less", archive.subarray(0, archive.length - 1)],
        ["the same length, one byte changed", Buffer.from(archive).fill(1, 0, 1)]
      ]
      for (const [what, bytes] of cases) {
        const answer = yield* upload(service, signedUrl, bytes)
        expectError(answer, 409, "version_immutable")
        expect(replayed(answer), what).toBeNull()
      }
      // streamed without a length (the length cannot be compared first): the same rules
      const chunked = (bytes: Uint8Array) =>
        Effect.promise(() =>
          new Promise<number>((resolve, reject) => {
            const request = http.request(service.baseUrl + pathOf(signedUrl), {
              method: "PUT",
              headers: { "content-type": "application/zip", "transfer-encoding": "chunked" }
            })
            request.on("response", (response) => {
              response.resume()
              resolve(response.statusCode ?? 0)
            })
            request.on("error", reject)
            request.write(bytes.subarray(0, 10))
            request.end(bytes.subarray(10))
          })
        )
      expect(yield* chunked(archive)).toBe(200)
      expect(yield* chunked(Buffer.concat([archive, archive]))).toBe(409)
      const [row] = yield* versionRows(service, "reupload")
      expect(row).toMatchObject({ status: "NodeVersionStatusActive", archive_bytes: archive.length })
    }))

  it.effect("replays hold after the version became Flagged or Active; a publish replay then answers it as it is", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const good = yield* zip("moderated")
      const bad = rawZip([{ name: "../evil.py", content: "x" }])
      const moderate = (version: string, status: string) =>
        Effect.map(
          send(service, "PUT", `/admin/nodes/moderated/versions/${version}`, { token: admin, body: { status, status_reason: "looked at" } }),
          (answer) => expectStatus(answer, 200, `moderate ${version} to ${status}`)
        )
      // Active, then Flagged by a moderator
      const one = yield* published(service, acme, "moderated", "1.0.0")
      yield* upload(service, one.signedUrl, good)
      yield* moderate("1.0.0", "NodeVersionStatusFlagged")
      const again = expectStatus(yield* upload(service, one.signedUrl, good), 200, "replay on a Flagged version")
      expect(replayed(again)).toBe("true")
      expect(decodeVersion(again.body)).toMatchObject({ status: "NodeVersionStatusFlagged", status_reason: "looked at" })
      expectError(yield* upload(service, one.signedUrl, bad), 409, "version_immutable")
      // refused by the checks: nothing stored, so the same bytes again are refused again (never a
      // replay) and the version stays Pending; a corrected upload to the same URL then succeeds
      const two = yield* published(service, acme, "moderated", "2.0.0")
      for (let i = 0; i < 2; i++) {
        const refused = yield* upload(service, two.signedUrl, bad)
        expectRejected(refused)
        expect(replayed(refused)).toBeNull()
      }
      expect(decodeVersion((yield* get(service, "/nodes/moderated/versions/2.0.0")).body).status).toBe("NodeVersionStatusPending")
      expect(decodeVersion(expectStatus(yield* upload(service, two.signedUrl, good), 200, "corrected").body).status)
        .toBe("NodeVersionStatusActive")
      const replay = expectStatus(yield* upload(service, two.signedUrl, good), 200, "replay on an Active version")
      expect(replayed(replay)).toBe("true")
      expect(decodeVersion(replay.body).status).toBe("NodeVersionStatusActive")
      // the publish's replay answers the version as it is now, and its new URL takes the same bytes
      const republished = expectStatus(yield* publish(service, acme.id, "moderated", "2.0.0", { pat: acme.pat }), 201, "republish")
      expect(replayed(republished)).toBe("true")
      const answer = decodePublished(republished.body)
      expect(answer.node_version.status).toBe("NodeVersionStatusActive")
      expect(answer.node_version.downloadUrl).toBeDefined()
      expect(replayed(expectStatus(yield* upload(service, answer.signedUrl, good), 200, "upload to the new URL"))).toBe("true")
    }))

  it.effect("a deleted version is no replay: its number and its URL are refused as before", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const archive = yield* zip("deleted")
      const { signedUrl } = yield* published(service, acme, "deleted-version", "1.0.0")
      yield* upload(service, signedUrl, archive)
      expectStatus(yield* send(service, "DELETE", "/publishers/acme/nodes/deleted-version/versions/1.0.0", { token: acme.ownerJwt }), 204, "delete")
      expectError(yield* publish(service, acme.id, "deleted-version", "1.0.0", { pat: acme.pat }), 409, "version_exists")
      expectError(yield* upload(service, signedUrl, archive), 409, "version_immutable")
    }))

  it.effect("two uploads of one version at once: same bytes, both succeed and one is the replay; other bytes, one is refused", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const archive = yield* zip("raced")
      // the first passes the Pending check and streams; the second completes meanwhile; then the
      // first finds the version recorded while it waited (PublishingRepo.recordArchive)
      const { signedUrl } = yield* published(service, acme, "raced", "1.0.0")
      const held = heldUpload(service, signedUrl, archive)
      yield* sleep(200)
      const fast = expectStatus(yield* upload(service, signedUrl, archive), 200, "the upload that completes first")
      expect(replayed(fast)).toBeNull()
      held.release()
      const slow = expectStatus(yield* Effect.promise(() => held.answer), 200, "the held upload")
      expect(replayed(slow)).toBe("true")
      expect(decodeVersion(slow.body)).toEqual(decodeVersion(fast.body))

      const other = yield* zip("raced with other bytes")
      const second = yield* published(service, acme, "raced", "2.0.0")
      const loser = heldUpload(service, second.signedUrl, other)
      yield* sleep(200)
      expectStatus(yield* upload(service, second.signedUrl, archive), 200, "the winner")
      loser.release()
      const refused = yield* Effect.promise(() => loser.answer)
      expectError(refused, 409, "version_immutable")
      expect(refused.body).toMatchObject({ message: "Another upload of this version completed first" })

      // many at once: all succeed, exactly one is not a replay, one archive is recorded
      const third = yield* published(service, acme, "raced", "3.0.0")
      const answers = yield* Effect.all(Array.from({ length: 6 }, () => upload(service, third.signedUrl, archive)), { concurrency: "unbounded" })
      expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200))
      expect(answers.filter((a) => replayed(a) === null)).toHaveLength(1)
      expect((yield* versionRows(service, "raced")).map((r) => r.status)).toEqual(Array(3).fill("NodeVersionStatusActive"))
    }))

  it.effect("versions stored before digests were kept (NULL) answer 409 as before", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const archive = yield* zip("old")
      const { signedUrl } = yield* published(service, acme, "old-version", "1.0.0")
      yield* upload(service, signedUrl, archive)
      expect(yield* rowCount(service, "UPDATE node_versions SET manifest_sha256 = NULL, archive_sha256 = NULL WHERE node_id = 'old-version'"))
        .toBe(1)
      expectError(yield* publish(service, acme.id, "old-version", "1.0.0", { pat: acme.pat }), 409, "version_exists")
      expectError(yield* upload(service, signedUrl, archive), 409, "version_immutable")
    }))
})
