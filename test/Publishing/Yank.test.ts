/**
 * Yank and unyank over HTTP: who may (the publisher's owner and admins, site admins; not another
 * publisher's members nor anonymous callers), what is missing (an unknown or deleted version,
 * another publisher's node), the reason's bounds, and a yanked version as every answer that shows
 * versions shows it: flagged with its reason, its status unchanged, never the latest version nor
 * an unpinned install's choice, still installable by its exact version.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { decodeExact, decodeNodeList, decodeVersion } from "../support/Catalogue.ts"
import { expectBadRequest, expectError, expectStatus, get, send } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"
import { zipOf } from "../support/Zip.ts"
import { Node } from "../../src/Domain/Node.ts"
import { NodeVersionPage } from "../../src/Domain/Versions.ts"
import { installed, makePublisher, type Publisher, published, upload } from "./Flow.ts"

const decodeNode = decodeExact(Node)
const decodePage = decodeExact(NodeVersionPage)

const yank = (service: Running, token: string | undefined, nodeId: string, version: string, body: unknown = { reason: "broken on Windows" }) =>
  send(service, "POST", `/publishers/acme/nodes/${nodeId}/versions/${version}/yank`, { token, body })
const unyank = (service: Running, token: string | undefined, nodeId: string, version: string) =>
  send(service, "POST", `/publishers/acme/nodes/${nodeId}/versions/${version}/unyank`, { token })

/** Publishes and uploads a valid archive: the version is Active. */
const release = (service: Running, publisher: Publisher, nodeId: string, version: string) =>
  Effect.gen(function*() {
    const { signedUrl } = yield* published(service, publisher, nodeId, version)
    const zip = yield* Effect.promise(() => zipOf({ "pkg/__init__.py": `VERSION = "${version}"\n` }))
    expectStatus(yield* upload(service, signedUrl, zip), 200, `upload ${nodeId}@${version}`)
  })

layer(Service.layer(), { excludeTestServices: true })("yank", (it) => {
  let acme: Publisher
  let other: Publisher
  let adminJwt = ""
  let siteAdmin = ""

  it.effect("setup: acme with an admin, another publisher, node lamp with 1.0.0 and 1.1.0 active, 1.2.0 pending", () =>
    Effect.gen(function*() {
      const service = yield* Service
      acme = yield* makePublisher(service, "acme")
      other = yield* makePublisher(service, "other")
      siteAdmin = yield* Effect.promise(() => service.token({ sub: "root", admin: true }))
      adminJwt = yield* Effect.promise(() => service.token({ sub: "maint" }))
      // the user is known once it has called the API
      expectStatus(yield* get(service, "/users/publishers", { token: adminJwt }), 200, "maint known")
      expectStatus(
        yield* send(service, "POST", "/publishers/acme/members", { token: acme.ownerJwt, body: { user_id: "maint", role: "admin" } }),
        201,
        "maint admin of acme"
      )
      yield* release(service, acme, "lamp", "1.0.0")
      yield* release(service, acme, "lamp", "1.1.0")
      yield* published(service, acme, "lamp", "1.2.0")
    }))

  it.effect("refused: anonymous 401, another publisher's owner 403, bad reasons 400; nothing changes", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectError(yield* yank(service, undefined, "lamp", "1.1.0"), 401)
      expectError(yield* unyank(service, undefined, "lamp", "1.1.0"), 401)
      expectError(yield* yank(service, other.ownerJwt, "lamp", "1.1.0"), 403, "forbidden")
      expectError(yield* unyank(service, other.ownerJwt, "lamp", "1.1.0"), 403, "forbidden")
      for (const body of [{}, { reason: "" }, { reason: "   " }, { reason: "x".repeat(501) }, { reason: 3 }, { reason: "ok", extra: 1 }]) {
        const answer = yield* yank(service, acme.ownerJwt, "lamp", "1.1.0", body)
        expect(answer.status, JSON.stringify(body)).toBe(400)
      }
      expectBadRequest(yield* yank(service, acme.ownerJwt, "lamp", "1.1.0", { reason: " " }), "reason")
      const v = decodeVersion((yield* get(service, "/nodes/lamp/versions/1.1.0")).body)
      expect(v.yanked).toBe(false)
      expect(v.yanked_reason).toBeUndefined()
    }))

  it.effect("not found: unknown version, unknown node, another publisher's node, a deleted version", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* published(service, other, "shade", "1.0.0")
      expectError(yield* yank(service, acme.ownerJwt, "lamp", "9.9.9"), 404, "not_found")
      expectError(yield* yank(service, acme.ownerJwt, "nothing", "1.0.0"), 404, "not_found")
      expectError(yield* yank(service, acme.ownerJwt, "shade", "1.0.0"), 404, "not_found")
      yield* published(service, acme, "lamp", "0.9.0")
      expectStatus(yield* send(service, "DELETE", "/publishers/acme/nodes/lamp/versions/0.9.0", { token: acme.ownerJwt }), 204, "delete")
      expectError(yield* yank(service, acme.ownerJwt, "lamp", "0.9.0"), 404, "not_found")
      expectError(yield* unyank(service, acme.ownerJwt, "lamp", "0.9.0"), 404, "not_found")
    }))

  it.effect("the owner yanks the latest: every answer shows it yanked, latest and unpinned install move to 1.0.0", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const yanked = decodeVersion(expectStatus(yield* yank(service, acme.ownerJwt, "lamp", "1.1.0", { reason: "  crashes on start  " }), 200, "yank").body)
      expect(yanked).toMatchObject({ version: "1.1.0", yanked: true, yanked_reason: "crashes on start", status: "NodeVersionStatusActive" })
      const expectYanked = (v: { version: string; yanked: boolean; yanked_reason?: string | undefined }) => {
        if (v.version === "1.1.0") expect(v).toMatchObject({ yanked: true, yanked_reason: "crashes on start" })
        else expect(v.yanked).toBe(false)
      }
      // the node: its latest version is the newest not yanked
      const node = decodeNode((yield* get(service, "/nodes/lamp")).body)
      expect(node.latest_version?.version).toBe("1.0.0")
      expect(node.latest_version?.yanked).toBe(false)
      // the listing (through the page cache: the write dropped its pages) and search
      const listed = decodeNodeList((yield* get(service, "/nodes?limit=50")).body).nodes.find((n) => n.id === "lamp")
      expect(listed?.latest_version?.version).toBe("1.0.0")
      const byPublisher = decodeNodeList((yield* get(service, "/publishers/acme/nodes/v2", { token: acme.ownerJwt })).body).nodes
      expect(byPublisher.find((n) => n.id === "lamp")?.latest_version?.version).toBe("1.0.0")
      // the version, the versions list, the bulk resolution, the moderation queue
      expectYanked(decodeVersion((yield* get(service, "/nodes/lamp/versions/1.1.0")).body))
      const list = (yield* get(service, "/nodes/lamp/versions")).body as ReadonlyArray<unknown>
      const versions = list.map(decodeVersion)
      expect(versions.map((v) => v.version)).toContain("1.1.0")
      versions.forEach(expectYanked)
      const bulk = yield* send<{ node_versions: ReadonlyArray<{ status: string; node_version?: unknown }> }>(service, "POST", "/bulk/nodes/versions", {
        body: { node_versions: [{ node_id: "lamp", version: "1.1.0" }, { node_id: "lamp", version: "1.0.0" }] }
      })
      const resolved = expectStatus(bulk, 200, "bulk").body.node_versions.map((r) => decodeVersion(r.node_version))
      resolved.forEach(expectYanked)
      expect(resolved.map((v) => v.yanked)).toEqual([true, false])
      for (const token of [undefined, siteAdmin]) {
        const page = decodePage((yield* get(service, "/versions?nodeId=lamp&pageSize=50", { token })).body)
        expect(page.versions.some((v) => v.version === "1.1.0")).toBe(true)
        page.versions.forEach(expectYanked)
      }
      // install: unpinned skips it, pinned still gets it
      expect((yield* installed(service, "lamp")).version).toBe("1.0.0")
      const pinned = yield* installed(service, "lamp", "1.1.0")
      expect(pinned).toMatchObject({ version: "1.1.0", yanked: true, yanked_reason: "crashes on start" })
    }))

  it.effect("idempotent: yanking again replaces the reason; the admin and a site admin may; unyank restores; unyank again is a no-op", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const again = decodeVersion(expectStatus(yield* yank(service, adminJwt, "lamp", "1.1.0", { reason: "use 1.0.0" }), 200, "yank again").body)
      expect(again).toMatchObject({ yanked: true, yanked_reason: "use 1.0.0" })
      // by the version's id too, as the other version endpoints take it
      const byId = decodeVersion(expectStatus(yield* yank(service, siteAdmin, "lamp", again.id, { reason: "by id" }), 200, "by id").body)
      expect(byId.yanked_reason).toBe("by id")
      const restored = decodeVersion(expectStatus(yield* unyank(service, adminJwt, "lamp", "1.1.0"), 200, "unyank").body)
      expect(restored.yanked).toBe(false)
      expect(restored.yanked_reason).toBeUndefined()
      expect(restored.status).toBe("NodeVersionStatusActive")
      const noop = decodeVersion(expectStatus(yield* unyank(service, acme.ownerJwt, "lamp", "1.1.0"), 200, "unyank again").body)
      expect(noop).toEqual(restored)
      expect(decodeNode((yield* get(service, "/nodes/lamp")).body).latest_version?.version).toBe("1.1.0")
      expect((yield* installed(service, "lamp")).version).toBe("1.1.0")
    }))

  it.effect("a Pending version may be yanked: it keeps its status, and once uploaded it is not the latest", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const pending = decodeVersion(expectStatus(yield* yank(service, acme.ownerJwt, "lamp", "1.2.0", { reason: "do not use" }), 200, "yank").body)
      expect(pending).toMatchObject({ status: "NodeVersionStatusPending", yanked: true })
      // every version yanked: the node has no latest version, and an unpinned install finds none
      expectStatus(yield* yank(service, acme.ownerJwt, "lamp", "1.1.0"), 200, "yank 1.1.0")
      expectStatus(yield* yank(service, acme.ownerJwt, "lamp", "1.0.0"), 200, "yank 1.0.0")
      expect(decodeNode((yield* get(service, "/nodes/lamp")).body).latest_version).toBeUndefined()
      expect((yield* get(service, "/nodes/lamp/install")).status).toBe(404)
      expect((yield* installed(service, "lamp", "1.0.0")).yanked).toBe(true)
    }))

  it.effect("the host-version filter counts no yanked version: a node is listed for a host by its versions that are not yanked", () =>
    Effect.gen(function*() {
      const service = yield* Service
      // 1.0.0 admits host 1.x only, 2.0.0 host 2.x only
      for (const [version, range] of [["1.0.0", ">=1.0.0 <2.0.0"], ["2.0.0", ">=2.0.0"]] as const) {
        const { signedUrl } = yield* published(service, acme, "desk", version, { versionFields: { supported_host_version: range } })
        const zip = yield* Effect.promise(() => zipOf({ "pkg/__init__.py": `VERSION = "${version}"\n` }))
        expectStatus(yield* upload(service, signedUrl, zip), 200, `upload desk@${version}`)
      }
      const listedFor = (host: string) =>
        Effect.map(get(service, `/nodes?node_id=desk&host_version=${host}`), (answer) =>
          decodeNodeList(expectStatus(answer, 200, `list for ${host}`).body).nodes.map((n) => n.latest_version?.version ?? "none"))
      expect(yield* listedFor("1.5.0")).toEqual(["1.0.0"])
      expectStatus(yield* yank(service, acme.ownerJwt, "desk", "1.0.0"), 200, "yank 1.0.0")
      // its only version for host 1.x is yanked: the node is not listed for it, as 2.x alone admits none of 1.x
      expect(yield* listedFor("1.5.0")).toEqual([])
      expect(yield* listedFor("2.1.0")).toEqual(["2.0.0"])
      // every version yanked: the node makes no claim about hosts, and stays listed without a latest version
      expectStatus(yield* yank(service, acme.ownerJwt, "desk", "2.0.0"), 200, "yank 2.0.0")
      expect(yield* listedFor("1.5.0")).toEqual(["none"])
    }))
})
