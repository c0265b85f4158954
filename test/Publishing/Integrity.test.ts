/**
 * Every archive is verifiable: its SHA-256, computed while it was uploaded, is in every answer
 * that shows the version (the node, the listing, install, bulk, the versions list) as `sha256`,
 * and on its download as RFC 9530's `Repr-Digest`, also on a range.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { Node, NodeVersion } from "../../src/Domain/Node.ts"
import { BulkNodeVersionsResponse } from "../../src/Domain/Versions.ts"
import { decodeExact } from "../support/Catalogue.ts"
import { expectStatus, get, send } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"
import { zipOf } from "../support/Zip.ts"
import { download, installed, makePublisher, pathOf, type Publisher, published, upload } from "./Flow.ts"

const decodeNode = decodeExact(Node)
const decodeBulk = decodeExact(BulkNodeVersionsResponse)
const decodeVersions = decodeExact(NodeVersion)

const hex = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")
const reprDigest = (bytes: Uint8Array) => `sha-256=:${createHash("sha256").update(bytes).digest("base64")}:`

/** Every answer's `sha256` for `nodeId` at `version`: node, listing, install, bulk, versions list. */
const shownDigests = (service: Running, nodeId: string, version: string) =>
  Effect.gen(function*() {
    const node = decodeNode(expectStatus(yield* get(service, `/nodes/${nodeId}`), 200, "node").body)
    const listing = (expectStatus(yield* get(service, `/nodes?search=${nodeId}`), 200, "listing").body as { nodes: Array<unknown> }).nodes
      .map((n) => decodeNode(n))
      .find((n) => n.id === nodeId)
    const install = yield* installed(service, nodeId, version)
    const bulk = decodeBulk(
      expectStatus(
        yield* send(service, "POST", "/bulk/nodes/versions", { body: { node_versions: [{ node_id: nodeId, version }] } }),
        200,
        "bulk"
      ).body
    )
    const list = (expectStatus(yield* get(service, `/nodes/${nodeId}/versions`), 200, "versions").body as Array<unknown>)
      .map((v) => decodeVersions(v))
      .find((v) => v.version === version)
    return {
      node: node.latest_version?.sha256,
      listing: listing?.latest_version?.sha256,
      install: install.sha256,
      bulk: bulk.node_versions[0]?.node_version?.sha256,
      versions: list?.sha256
    }
  })

const everywhere = (digest: string | undefined) => ({ node: digest, listing: digest, install: digest, bulk: digest, versions: digest })

layer(Service.layer(), { excludeTestServices: true })("archive integrity", (it) => {
  let acme: Publisher
  let archive: Buffer = Buffer.alloc(0)

  it.effect("setup: a publisher", () =>
    Effect.gen(function*() {
      acme = yield* makePublisher(yield* Service, "acme")
    }))

  it.effect("an uploaded archive's SHA-256 is in every answer showing its version, and none before it is uploaded", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const { node_version, signedUrl } = yield* published(service, acme, "sealed", "1.0.0")
      expect(node_version?.sha256).toBeUndefined()
      archive = yield* Effect.promise(() => zipOf({ "sealed/__init__.py": "x = 1\n", "sealed/data.bin": randomBytes(30_000) }))
      const uploaded = expectStatus(yield* upload(service, signedUrl, archive), 200, "upload")
      expect((uploaded.body as { sha256?: string }).sha256).toBe(hex(archive))
      expect(yield* shownDigests(service, "sealed", "1.0.0")).toEqual(everywhere(hex(archive)))
    }))

  it.effect("the download answers Repr-Digest of the whole archive, on a GET, a range and a HEAD, and the bytes match it", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const { downloadUrl } = yield* installed(service, "sealed", "1.0.0")
      const whole = yield* download(service, downloadUrl!)
      expect(whole.status).toBe(200)
      expect(whole.headers.get("repr-digest")).toBe(reprDigest(archive))
      expect(hex(whole.bytes)).toBe(hex(archive))
      const ranged = yield* Effect.promise(() => service.fetch(pathOf(downloadUrl!), { headers: { range: "bytes=0-99" } }))
      expect(ranged.status).toBe(206)
      expect(ranged.headers.get("repr-digest")).toBe(reprDigest(archive))
      const head = yield* Effect.promise(() => service.fetch(pathOf(downloadUrl!), { method: "HEAD" }))
      expect(head.headers.get("repr-digest")).toBe(reprDigest(archive))
    }))
})
