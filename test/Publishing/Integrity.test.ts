/**
 * Every archive is verifiable: its SHA-256, computed while it was uploaded, is in every answer
 * that shows the version (the node, the listing, install, bulk, the versions list) as `sha256`,
 * and on its download as RFC 9530's `Repr-Digest`, also on a range. Archives stored before digests
 * were kept get theirs from the backfill job, queued at every start.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { Node, NodeVersion } from "../../src/Domain/Node.ts"
import { BulkNodeVersionsResponse } from "../../src/Domain/Versions.ts"
import { decodeExact } from "../support/Catalogue.ts"
import { query, rowCount } from "../support/Db.ts"
import { expectStatus, get, send } from "../support/Http.ts"
import { type Running, Service, startService } from "../support/Service.ts"
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

/** Waits (up to 10 s) until no version of `sealed` lacks its digest. */
const digestsBack = (service: Running) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200; i++) {
      const [left] = yield* query<{ n: string }>(service, "SELECT count(*) AS n FROM node_versions WHERE node_id = 'sealed' AND archive_sha256 IS NULL")
      if (left?.n === "0") return
      yield* Effect.sleep("50 millis")
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

  it.effect("archives stored before digests were kept get theirs from the backfill job, shown everywhere", () =>
    Effect.gen(function*() {
      const service = yield* Service
      // three more archives, then all four digests forgotten, as before migration 0013
      const archives = new Map<string, Buffer>([["1.0.0", archive]])
      for (const version of ["1.1.0", "1.2.0", "2.0.0"]) {
        const { signedUrl } = yield* published(service, acme, "sealed", version)
        const bytes = yield* Effect.promise(() => zipOf({ "sealed/__init__.py": `v = "${version}"\n` }))
        expectStatus(yield* upload(service, signedUrl, bytes), 200, `upload ${version}`)
        archives.set(version, bytes)
      }
      expect(yield* rowCount(service, "UPDATE node_versions SET archive_sha256 = NULL WHERE node_id = 'sealed'")).toBe(4)
      // a write outside the service: its cached pages dropped as any write's are (Catalog/PageCache.ts)
      yield* query(service, "SELECT pg_notify('catalogue_changed', 'test')")
      for (let i = 0; i < 100 && (yield* shownDigests(service, "sealed", "2.0.0")).node !== undefined; i++) yield* Effect.sleep("20 millis")
      expect((yield* shownDigests(service, "sealed", "2.0.0")).node).toBeUndefined()
      yield* query(service, `SELECT graphile_worker.add_job('archive-digest-backfill', '{"after":"00000000-0000-0000-0000-000000000000"}'::json)`)
      yield* digestsBack(service)
      for (const [version, bytes] of archives) {
        expect((yield* shownDigests(service, "sealed", version)).versions, version).toBe(hex(bytes))
      }
      expect((yield* shownDigests(service, "sealed", "2.0.0")).node).toBe(hex(archives.get("2.0.0")!))
    }))

  it.effect("the backfill skips an archive missing from the store and goes on with the others", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const { signedUrl } = yield* published(service, acme, "lost", "1.0.0")
      const bytes = yield* Effect.promise(() => zipOf({ "lost/__init__.py": "x = 2\n" }))
      expectStatus(yield* upload(service, signedUrl, bytes), 200, "upload")
      const [row] = yield* query<{ id: string }>(service, "SELECT id::text FROM node_versions WHERE node_id = 'lost'")
      yield* Effect.promise(() => import("node:fs/promises").then((fs) => fs.rm(`${service.config.storage.dir}/${row!.id}.zip`)))
      yield* rowCount(service, "UPDATE node_versions SET archive_sha256 = NULL WHERE node_id IN ('lost', 'sealed')")
      yield* query(service, `SELECT graphile_worker.add_job('archive-digest-backfill', '{"after":"00000000-0000-0000-0000-000000000000"}'::json)`)
      yield* digestsBack(service)
      const [lost] = yield* query<{ sha: string | null }>(service, "SELECT encode(archive_sha256, 'hex') AS sha FROM node_versions WHERE node_id = 'lost'")
      expect(lost?.sha).toBeNull()
      const [sealed] = yield* query<{ n: string }>(service, "SELECT count(*) AS n FROM node_versions WHERE node_id = 'sealed' AND archive_sha256 IS NULL")
      expect(sealed?.n).toBe("0")
    }))

  it.effect("a start queues the backfill by itself", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* rowCount(service, "UPDATE node_versions SET archive_sha256 = NULL WHERE node_id = 'sealed'")
      // a second instance on the same database and archives, as after an upgrade's restart
      yield* Effect.scoped(Effect.gen(function*() {
        yield* startService(service.databaseUrl, (c) => ({ ...c, storage: { ...c.storage, dir: service.config.storage.dir } }))
        yield* digestsBack(service)
      }))
      const [left] = yield* query<{ n: string }>(service, "SELECT count(*) AS n FROM node_versions WHERE node_id = 'sealed' AND archive_sha256 IS NULL")
      expect(left?.n).toBe("0")
    }))
})
