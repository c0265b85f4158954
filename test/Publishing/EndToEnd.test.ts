/**
 * The whole publishing lifecycle over real HTTP, real PostgreSQL and real files, twice: on one
 * instance, and with publishing and uploading on one instance and installing and downloading on a
 * second instance over the same database (and the same archive folder).
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { Node, NodeVersion } from "../../src/Domain/Node.ts"
import { decodeExact, decodeNodeList, decodeVersion } from "../support/Catalogue.ts"
import { expectError, expectStatus, get, send } from "../support/Http.ts"
import { freshDatabase, type Running, Service, startService } from "../support/Service.ts"
import { zipOf } from "../support/Zip.ts"
import { download, installed, makePublisher, published, upload } from "./Flow.ts"

const decodeNode = decodeExact(Node)
const decodeVersions = decodeExact(Schema.Array(NodeVersion))

/** Publish -> upload -> checks -> discover -> install -> download -> maintain, across `a` (publisher side) and `b` (clients). */
const lifecycle = (a: Running, b: Running) =>
  Effect.gen(function*() {
    const acme = yield* makePublisher(a, "acme")
    const admin = yield* Effect.promise(() => a.token({ sub: "root", admin: true }))

    // 1-2. publish the first version: the node is created from `node`
    const first = yield* published(a, acme, "image-tools", "1.0.0", {
      node: { name: "Image tools", description: "Tools for images", tags: ["image"], repository: "https://example.com/acme/image-tools" }
    })
    expect(first.node_version).toMatchObject({ version: "1.0.0", node_id: "image-tools", status: "NodeVersionStatusPending" })
    expect(first.node_version.downloadUrl).toBeUndefined()
    expect(first.signedUrl).toMatch(/\/archives\/image-tools\/1\.0\.0\?expires=\d+&signature=[A-Za-z0-9_-]+$/)
    // pending: not installable yet, not the latest version
    expectError(yield* send(b, "GET", "/nodes/image-tools/install"), 404, "no_installable_version")
    expect(decodeNode((yield* get(b, "/nodes/image-tools")).body).latest_version).toBeUndefined()

    // 3-4. upload; the checks pass
    const archive = yield* Effect.promise(() => zipOf({ "image_tools/__init__.py": "NODES = {}\n", "README.md": "# Image tools\n" }))
    const uploaded = expectStatus(yield* upload(a, first.signedUrl, archive), 200, "upload 1.0.0")
    expect(decodeVersion(uploaded.body)).toMatchObject({ version: "1.0.0", status: "NodeVersionStatusActive" })

    // 5. discover
    const node = decodeNode(expectStatus(yield* get(b, "/nodes/image-tools"), 200, "get node").body)
    expect(node).toMatchObject({ id: "image-tools", name: "Image tools", publisher: { id: "acme" }, downloads: 0 })
    expect(node.latest_version).toMatchObject({ version: "1.0.0", status: "NodeVersionStatusActive" })
    expect(node.latest_version?.downloadUrl).toMatch(/\/archives\/image-tools\/1\.0\.0$/)
    const listed = decodeNodeList(expectStatus(yield* get(b, "/nodes?node_id=image-tools"), 200, "GET /nodes").body)
    expect(listed.nodes.map((n) => n.latest_version?.version)).toEqual(["1.0.0"])
    // found by search too (a static route beside /nodes/{nodeId}), with the same latest version
    const found = decodeNodeList(expectStatus(yield* get(b, "/nodes/search?search=imag"), 200, "search").body)
    expect(found.nodes.map((n) => [n.id, n.latest_version?.version])).toEqual([["image-tools", "1.0.0"]])

    // a second version, published with the owner's bearer JWT instead of the token
    const second = yield* published(a, acme, "image-tools", "1.1.0", { pat: undefined, jwt: acme.ownerJwt, node: { description: "Better tools" } })
    const archive2 = yield* Effect.promise(() => zipOf({ "image_tools/__init__.py": "NODES = {'x': 1}\n" }))
    // a URL signed by one instance is accepted by the other: the key is the database's
    expectStatus(yield* upload(b, second.signedUrl, archive2), 200, "upload 1.1.0")
    const versions = decodeVersions(expectStatus(yield* get(b, "/nodes/image-tools/versions"), 200, "versions").body)
    expect(versions.map((v) => v.version)).toEqual(["1.1.0", "1.0.0"])
    const afterSecond = decodeNode((yield* get(b, "/nodes/image-tools")).body)
    expect(afterSecond.latest_version?.version).toBe("1.1.0")
    expect(afterSecond.description).toBe("Better tools")
    const relisted = decodeNodeList((yield* get(b, "/nodes?node_id=image-tools")).body)
    expect(relisted.nodes[0]?.latest_version?.version).toBe("1.1.0")

    // 6. install: the newest by default, a given one on request; each counts one download
    const latest = yield* installed(b, "image-tools")
    expect(latest.version).toBe("1.1.0")
    const pinned = yield* installed(b, "image-tools", "1.0.0")
    expect(pinned.version).toBe("1.0.0")
    const got = yield* download(b, latest.downloadUrl!)
    expect(got.status).toBe(200)
    expect(got.headers.get("content-type")).toBe("application/zip")
    expect(Buffer.compare(got.bytes, archive2)).toBe(0)
    expect(Buffer.compare((yield* download(b, pinned.downloadUrl!)).bytes, archive)).toBe(0)
    expect(decodeNode((yield* get(b, "/nodes/image-tools")).body).downloads).toBe(2)

    // 7. maintain: changelog and deprecation, then delete the newest version
    const changed = yield* send(a, "PUT", "/publishers/acme/nodes/image-tools/versions/1.1.0", {
      token: acme.ownerJwt,
      body: { changelog: "Faster", deprecated: true }
    })
    expect(decodeVersion(expectStatus(changed, 200, "update version").body)).toMatchObject({ changelog: "Faster", deprecated: true })
    // deprecated versions stay installable
    expect((yield* installed(b, "image-tools")).version).toBe("1.1.0")
    expectStatus(yield* send(a, "DELETE", "/publishers/acme/nodes/image-tools/versions/1.1.0", { token: acme.ownerJwt }), 204, "delete version")
    expect(decodeNode((yield* get(b, "/nodes/image-tools")).body).latest_version?.version).toBe("1.0.0")
    expect(decodeNodeList((yield* get(b, "/nodes?node_id=image-tools")).body).nodes[0]?.latest_version?.version).toBe("1.0.0")
    expectError(yield* send(b, "GET", "/nodes/image-tools/install?version=1.1.0"), 404, "no_installable_version")
    // its number is never reused
    expectError(yield* send(a, "POST", "/publishers/acme/nodes/image-tools/versions", {
      body: { personal_access_token: acme.pat, node_version: { version: "1.1.0" } }
    }), 409, "version_exists")

    // admin moderation: flag the remaining version with a reason, then restore it
    const flagged = yield* send(a, "PUT", "/admin/nodes/image-tools/versions/1.0.0", {
      token: admin,
      body: { status: "NodeVersionStatusFlagged", status_reason: "reported as malware" }
    })
    expect(decodeVersion(expectStatus(flagged, 200, "flag").body)).toMatchObject({ status: "NodeVersionStatusFlagged", status_reason: "reported as malware" })
    expect(decodeNode((yield* get(b, "/nodes/image-tools")).body).latest_version).toBeUndefined()
    expectError(yield* send(b, "GET", "/nodes/image-tools/install"), 404, "no_installable_version")
    expectStatus(yield* send(a, "PUT", "/admin/nodes/image-tools/versions/1.0.0", {
      token: admin,
      body: { status: "NodeVersionStatusActive", status_reason: "false alarm" }
    }), 200, "restore")
    expect(decodeNode((yield* get(b, "/nodes/image-tools")).body).latest_version?.version).toBe("1.0.0")

    // node metadata, then the node's soft delete
    const renamed = yield* send(a, "PUT", "/publishers/acme/nodes/image-tools", { token: acme.ownerJwt, body: { name: "Image Tools 2" } })
    expect(decodeNode(expectStatus(renamed, 200, "update node").body).name).toBe("Image Tools 2")
    expect(decodeNodeList((yield* get(b, "/nodes?node_id=image-tools")).body).nodes[0]?.name).toBe("Image Tools 2")
    expectStatus(yield* send(a, "DELETE", "/publishers/acme/nodes/image-tools", { token: acme.ownerJwt }), 204, "delete node")
    expectError(yield* get(b, "/nodes/image-tools"), 404)
    expectError(yield* send(b, "GET", "/nodes/image-tools/install"), 404)
    expect(decodeNodeList((yield* get(b, "/nodes?node_id=image-tools")).body).nodes).toEqual([])
    expect(decodeNodeList((yield* get(b, "/nodes/search?search=image")).body).nodes).toEqual([])
    expectError(yield* send(a, "POST", "/publishers/acme/nodes/image-tools/versions", {
      body: { personal_access_token: acme.pat, node_version: { version: "2.0.0" } }
    }), 409, "node_deleted")
  })

layer(Service.layer(), { excludeTestServices: true })("publishing end to end, one instance", (it) => {
  it.effect("publish, upload, check, discover, install, download, maintain", () =>
    Effect.flatMap(Service, (service) => lifecycle(service, service)), { timeout: 120_000 })
})

/** Two instances on one database, sharing one archive folder (as instances behind one load balancer). */
const TwoInstances = Layer.scoped(
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
