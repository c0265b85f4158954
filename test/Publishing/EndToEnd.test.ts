/**
 * The whole publishing lifecycle over real HTTP, real PostgreSQL and real files, twice: on one
 * instance, and with publishing and uploading on one instance and installing and downloading on a
 * second instance over the same database (and the same archive folder).
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { decodeVersion } from "../support/Catalogue.ts"
import { bearerClient, bytesOf, clientFor, onInstance, withFiles } from "../support/Client.ts"
import { expectError, expectStatus, get, send } from "../support/Http.ts"
import { freshDatabase, type Running, Service, startService } from "../support/Service.ts"
import { zipOf } from "../support/Zip.ts"
import { download, makePublisher, upload } from "./Flow.ts"

/**
 * Publish -> upload -> checks -> discover -> install -> download -> maintain, across `a` (publisher
 * side) and `b` (clients). The calls go through the typed client; what only the wire shows (the
 * upload's answer, the download's content type, error codes) is read over raw HTTP.
 */
const lifecycle = (a: Running, b: Running) =>
  Effect.gen(function*() {
    const acme = yield* makePublisher(a, "acme")
    const admin = yield* Effect.promise(() => a.token({ sub: "root", admin: true }))
    const cli = yield* clientFor(a, { pat: acme.pat })
    const owner = yield* bearerClient(a, acme.ownerJwt)
    const moderator = yield* bearerClient(a, admin)
    const anyone = yield* clientFor(b)
    const getNode = anyone.api.catalog.getNode({ params: { nodeId: "image-tools" }, query: {} })
    const listed = Effect.map(
      anyone.api.catalog.listAllNodes({ query: { node_id: ["image-tools"] } }),
      (page) => page.nodes
    )
    const search = (search: string) => Effect.map(anyone.api.catalog.searchNodes({ query: { search } }), (page) => page.nodes)
    const install = (version?: string) =>
      Effect.map(anyone.api.catalog.installNode({ params: { nodeId: "image-tools" }, query: version === undefined ? {} : { version } }), (v) => {
        expect(v.downloadUrl).toMatch(/^https?:\/\//)
        return v
      })
    const downloaded = (downloadUrl: string) =>
      Effect.flatMap(anyone.download(onInstance(b, downloadUrl)), ({ bytes }) => bytesOf(bytes))
    const versionPath = (version: string) => ({ publisherId: "acme", nodeId: "image-tools", versionId: version })

    // 1-2. publish the first version: the node is created from `node`
    const first = yield* cli.publish("acme", "image-tools", {
      node: { name: "Image tools", description: "Tools for images", tags: ["image"], repository: "https://example.com/acme/image-tools" },
      node_version: { version: "1.0.0", changelog: "release 1.0.0" }
    })
    expect(first.node_version).toMatchObject({ version: "1.0.0", node_id: "image-tools", status: "NodeVersionStatusPending" })
    expect(first.node_version.downloadUrl).toBeUndefined()
    expect(first.signedUrl).toMatch(/\/archives\/image-tools\/1\.0\.0\?expires=\d+&signature=[A-Za-z0-9_-]+$/)
    // pending: not installable yet, not the latest version
    expectError(yield* send(b, "GET", "/nodes/image-tools/install"), 404, "no_installable_version")
    expect((yield* getNode).latest_version).toBeUndefined()

    // 3-4. upload; the checks pass
    const archive = yield* Effect.promise(() => zipOf({ "image_tools/__init__.py": "NODES = {}\n", "README.md": "# Image tools\n" }))
    const uploaded = expectStatus(yield* upload(a, first.signedUrl, archive), 200, "upload 1.0.0")
    expect(decodeVersion(uploaded.body)).toMatchObject({ version: "1.0.0", status: "NodeVersionStatusActive" })

    // 5. discover
    const node = yield* getNode
    expect(node).toMatchObject({ id: "image-tools", name: "Image tools", publisher: { id: "acme" }, downloads: 0 })
    expect(node.latest_version).toMatchObject({ version: "1.0.0", status: "NodeVersionStatusActive" })
    expect(node.latest_version?.downloadUrl).toMatch(/\/archives\/image-tools\/1\.0\.0$/)
    expect((yield* listed).map((n) => n.latest_version?.version)).toEqual(["1.0.0"])
    // found by search too (a static route beside /nodes/{nodeId}), with the same latest version
    expect((yield* search("imag")).map((n) => [n.id, n.latest_version?.version])).toEqual([["image-tools", "1.0.0"]])

    // a second version, published with the owner's bearer JWT instead of the token
    const second = yield* owner.publish("acme", "image-tools", {
      node: { description: "Better tools" },
      node_version: { version: "1.1.0", changelog: "release 1.1.0" }
    })
    const archive2 = yield* Effect.promise(() => zipOf({ "image_tools/__init__.py": "NODES = {'x': 1}\n" }))
    // a URL signed by one instance is accepted by the other: the key is the database's
    yield* withFiles(anyone.uploadArchive(onInstance(b, second.signedUrl), archive2))
    const versions = yield* anyone.api.catalog.listNodeVersions({
      params: { nodeId: "image-tools" },
      query: {}
    })
    expect(versions.map((v) => v.version)).toEqual(["1.1.0", "1.0.0"])
    const afterSecond = yield* getNode
    expect(afterSecond.latest_version?.version).toBe("1.1.0")
    expect(afterSecond.description).toBe("Better tools")
    expect((yield* listed)[0]?.latest_version?.version).toBe("1.1.0")

    // 6. install: the newest by default, a given one on request; each counts one download
    const latest = yield* install()
    expect(latest.version).toBe("1.1.0")
    const pinned = yield* install("1.0.0")
    expect(pinned.version).toBe("1.0.0")
    const got = yield* download(b, latest.downloadUrl!)
    expect(got.status).toBe(200)
    expect(got.headers.get("content-type")).toBe("application/zip")
    expect(Buffer.compare(got.bytes, archive2)).toBe(0)
    expect(Buffer.compare(yield* downloaded(pinned.downloadUrl!), archive)).toBe(0)
    expect((yield* getNode).downloads).toBe(2)

    // 7. maintain: changelog and deprecation, then delete the newest version
    const changed = yield* owner.api.publishing.updateVersion({ params: versionPath("1.1.0"), payload: { changelog: "Faster", deprecated: true } })
    expect(changed).toMatchObject({ changelog: "Faster", deprecated: true })
    // deprecated versions stay installable
    expect((yield* install()).version).toBe("1.1.0")
    yield* owner.api.publishing.deleteVersion({ params: versionPath("1.1.0") })
    expect((yield* getNode).latest_version?.version).toBe("1.0.0")
    expect((yield* listed)[0]?.latest_version?.version).toBe("1.0.0")
    expectError(yield* send(b, "GET", "/nodes/image-tools/install?version=1.1.0"), 404, "no_installable_version")
    // its number is never reused
    expectError(yield* send(a, "POST", "/publishers/acme/nodes/image-tools/versions", {
      body: { personal_access_token: acme.pat, node_version: { version: "1.1.0" } }
    }), 409, "version_exists")

    // admin moderation: flag the remaining version with a reason, then restore it
    const moderate = (status: "NodeVersionStatusFlagged" | "NodeVersionStatusActive", status_reason: string) =>
      moderator.api.admin.moderateVersion({ params: { nodeId: "image-tools", version: "1.0.0" }, payload: { status, status_reason } })
    expect(yield* moderate("NodeVersionStatusFlagged", "reported as malware"))
      .toMatchObject({ status: "NodeVersionStatusFlagged", status_reason: "reported as malware" })
    expect((yield* getNode).latest_version).toBeUndefined()
    expectError(yield* send(b, "GET", "/nodes/image-tools/install"), 404, "no_installable_version")
    expect((yield* moderate("NodeVersionStatusActive", "false alarm")).status).toBe("NodeVersionStatusActive")
    expect((yield* getNode).latest_version?.version).toBe("1.0.0")

    // node metadata, then the node's soft delete
    const renamed = yield* owner.api.publishing.updateNode({
      params: { publisherId: "acme", nodeId: "image-tools" },
      payload: { name: "Image Tools 2" }
    })
    expect(renamed.name).toBe("Image Tools 2")
    expect((yield* listed)[0]?.name).toBe("Image Tools 2")
    yield* owner.api.publishing.deleteNode({ params: { publisherId: "acme", nodeId: "image-tools" } })
    expectError(yield* get(b, "/nodes/image-tools"), 404)
    expectError(yield* send(b, "GET", "/nodes/image-tools/install"), 404)
    expect(yield* listed).toEqual([])
    expect(yield* search("image")).toEqual([])
    expectError(yield* send(a, "POST", "/publishers/acme/nodes/image-tools/versions", {
      body: { personal_access_token: acme.pat, node_version: { version: "2.0.0" } }
    }), 409, "node_deleted")
  })

layer(Service.layer(), { excludeTestServices: true })("publishing end to end, one instance", (it) => {
  it.effect("publish, upload, check, discover, install, download, maintain", () =>
    Effect.flatMap(Service, (service) => lifecycle(service, service)), { timeout: 120_000 })
})

/** Two instances on one database, sharing one archive folder (as instances behind one load balancer). */
const TwoInstances = Layer.effect(
  Service,
  Effect.gen(function*() {
    const db = yield* freshDatabase
    const dir = yield* Effect.acquireRelease(
      Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "registry-archives-"))),
      (d) => Effect.promise(() => fs.rm(d, { recursive: true, force: true }))
    )
    const shared = (c: Running["config"]) => ({ ...c, storage: { ...c.storage, dir } })
    const a = yield* startService(db.url, shared)
    const b = yield* startService(db.url, shared)
    return { ...a, second: b }
  })
)

layer(TwoInstances, { excludeTestServices: true })("publishing end to end, two instances", (it) => {
  it.effect("publish and upload on one instance, install and download on another", () =>
    Effect.flatMap(Service, (service) => lifecycle(service, (service as Running & { second: Running }).second)), { timeout: 120_000 })
})
