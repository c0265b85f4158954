/**
 * A refused upload and its retry: the 422 a publishing CLI sees, and CreateUploadUrl, which gives
 * a Pending version a fresh signed URL. Who may ask (a personal access token of the publisher, a
 * bearer token of its owner or admin, a site admin; not another publisher, not anonymously), for
 * which versions (Pending only: 409 once it left Pending; 404 unknown or deleted).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { decodeExact } from "../support/Catalogue.ts"
import { expectError, expectStatus, get, send } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"
import { rawZip, zipOf } from "../support/Zip.ts"
import { UploadUrlResponse } from "../../src/Publishing/Api.ts"
import { expectRejected, makePublisher, type Publisher, published, upload } from "./Flow.ts"

const decodeFresh = decodeExact(UploadUrlResponse)

const freshUrl = (service: Running, nodeId: string, version: string, options: { token?: string; body?: unknown }) =>
  send(service, "POST", `/publishers/acme/nodes/${nodeId}/versions/${version}/upload-url`, {
    token: options.token,
    body: options.body ?? {}
  })

layer(Service.layer(), { excludeTestServices: true })("refused uploads and fresh upload URLs", (it) => {
  let acme: Publisher
  let other: Publisher
  let siteAdmin = ""
  const bad = rawZip([{ name: "../evil.py", content: "x" }])

  it.effect("setup", () =>
    Effect.gen(function*() {
      const service = yield* Service
      acme = yield* makePublisher(service, "acme")
      other = yield* makePublisher(service, "other")
      siteAdmin = yield* Effect.promise(() => service.token({ sub: "root", admin: true }))
    }))

  it.effect("the CLI's upload gets 422 with each failed check; a fresh URL takes the corrected archive", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const { signedUrl, node_version } = yield* published(service, acme, "lamp", "1.0.0")
      // comfy-cli's comfy_cli/file_utils.py upload_file_to_signed_url PUTs the zip with
      // Content-Type application/zip and, on any status but 200, raises with the answer's text:
      // the 422's body, with each failed check, is what its user reads
      const refused = expectRejected(yield* upload(service, signedUrl, bad))
      expect(refused).toEqual([{ check: "entry_names", message: "entry '../evil.py' has a '..' segment" }])
      // by the personal access token, as the publish call is made
      const fresh = decodeFresh(expectStatus(yield* freshUrl(service, "lamp", "1.0.0", { body: { personal_access_token: acme.pat } }), 200, "fresh").body)
      expect(fresh.node_version).toMatchObject({ id: node_version.id, status: "NodeVersionStatusPending" })
      expect(fresh.signedUrl).toMatch(/\/archives\/lamp\/1\.0\.0\?expires=\d+&signature=/)
      const zip = yield* Effect.promise(() => zipOf({ "lamp/__init__.py": "NODES = {}\n" }))
      const done = expectStatus(yield* upload(service, fresh.signedUrl, zip), 200, "corrected upload")
      expect((done.body as { status: string }).status).toBe("NodeVersionStatusActive")
      // no longer Pending: no fresh URL
      expectError(yield* freshUrl(service, "lamp", "1.0.0", { token: acme.ownerJwt }), 409, "version_immutable")
    }))

  it.effect("who may ask: the owner, a token, a site admin; not another publisher, a wrong token, or anonymously", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* published(service, acme, "lamp", "2.0.0")
      for (const options of [{ token: acme.ownerJwt }, { token: siteAdmin }, { body: { personal_access_token: acme.pat } }]) {
        const answer = yield* freshUrl(service, "lamp", "2.0.0", options)
        expectStatus(answer, 200, JSON.stringify(options))
      }
      expectError(yield* freshUrl(service, "lamp", "2.0.0", {}), 401, "unauthorized")
      expectError(yield* freshUrl(service, "lamp", "2.0.0", { body: { personal_access_token: other.pat } }), 401, "invalid_token")
      expectError(yield* freshUrl(service, "lamp", "2.0.0", { token: other.ownerJwt }), 403, "forbidden")
    }))

  it.effect("which versions: unknown and deleted ones are 404, so is another publisher's node", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* published(service, other, "shade", "1.0.0")
      expectError(yield* freshUrl(service, "lamp", "9.9.9", { token: acme.ownerJwt }), 404, "not_found")
      expectError(yield* freshUrl(service, "shade", "1.0.0", { token: acme.ownerJwt }), 404, "not_found")
      yield* published(service, acme, "lamp", "3.0.0")
      expectStatus(yield* send(service, "DELETE", "/publishers/acme/nodes/lamp/versions/3.0.0", { token: acme.ownerJwt }), 204, "delete")
      expectError(yield* freshUrl(service, "lamp", "3.0.0", { token: acme.ownerJwt }), 404, "not_found")
      expect((yield* get(service, "/nodes/lamp/versions/3.0.0")).status).toBe(404)
    }))
})
