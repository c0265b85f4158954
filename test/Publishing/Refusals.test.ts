/**
 * What publishing refuses, and that a refusal stores nothing: bad input on every body field and
 * parameter (400 naming it), missing, wrong, revoked and foreign tokens (401), callers without the
 * role (403), banned publishers and nodes (403), other publishers' and deleted node ids (409).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { bearerClient } from "../support/Client.ts"
import { countRows } from "../support/Db.ts"
import { expectBadRequest, expectError, expectStatus, get, send } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"
import { makePublisher, type Publisher, publish, published } from "./Flow.ts"

const stored = (service: Running) =>
  Effect.all({ nodes: countRows(service, "nodes"), versions: countRows(service, "node_versions") })

layer(Service.layer(), { excludeTestServices: true })("publishing refusals", (it) => {
  let acme: Publisher
  let other: Publisher
  let admin = ""

  it.effect("setup: two publishers, a published node", () =>
    Effect.gen(function*() {
      const service = yield* Service
      acme = yield* makePublisher(service, "acme")
      other = yield* makePublisher(service, "other")
      admin = yield* Effect.promise(() => service.token({ sub: "root", admin: true }))
      yield* published(service, acme, "existing", "1.0.0")
    }))

  it.effect("bad input on every body field and parameter is 400 naming it, and stores nothing", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const before = yield* stored(service)
      const version = (fields: Record<string, unknown>) => ({ personal_access_token: acme.pat, node_version: { version: "9.9.9", ...fields } })
      const node = (fields: Record<string, unknown>) => ({ ...version({}), node: fields })
      const cases: ReadonlyArray<readonly [string, string, unknown, string]> = [
        ["/publishers/acme/nodes/fresh/versions", "POST", { personal_access_token: acme.pat }, "node_version"],
        ["/publishers/acme/nodes/fresh/versions", "POST", version({ version: "1.0" }), "node_version.version"],
        ["/publishers/acme/nodes/fresh/versions", "POST", version({ version: "v1.0.0" }), "node_version.version"],
        ["/publishers/acme/nodes/fresh/versions", "POST", version({ version: "1.0.0+build.5" }), "node_version.version"],
        ["/publishers/acme/nodes/fresh/versions", "POST", version({ version: 100 }), "node_version.version"],
        ["/publishers/acme/nodes/fresh/versions", "POST", version({ version: "1.0.0-" + "a".repeat(120) }), "node_version.version"],
        ["/publishers/acme/nodes/fresh/versions", "POST", version({ changelog: 5 }), "node_version.changelog"],
        ["/publishers/acme/nodes/fresh/versions", "POST", version({ changelog: "x".repeat(20_001) }), "node_version.changelog"],
        ["/publishers/acme/nodes/fresh/versions", "POST", version({ dependencies: "numpy" }), "node_version.dependencies"],
        ["/publishers/acme/nodes/fresh/versions", "POST", version({ deprecated: "yes" }), "node_version.deprecated"],
        ["/publishers/acme/nodes/fresh/versions", "POST", version({ supported_host_version: "not a range" }), "node_version.supported_host_version"],
        ["/publishers/acme/nodes/fresh/versions", "POST", version({ supported_os: [1] }), "node_version.supported_os"],
        ["/publishers/acme/nodes/fresh/versions", "POST", version({ tags: Array(51).fill("t") }), "node_version.tags"],
        ["/publishers/acme/nodes/fresh/versions", "POST", node({ name: "n".repeat(201) }), "node.name"],
        ["/publishers/acme/nodes/fresh/versions", "POST", node({ description: 7 }), "node.description"],
        ["/publishers/acme/nodes/fresh/versions", "POST", node({ tags: "image" }), "node.tags"],
        ["/publishers/acme/nodes/fresh/versions", "POST", node({ repository: "r\u0000" }), "node.repository"],
        ["/publishers/acme/nodes/fresh/versions", "POST", node({ id: "another" }), "node.id"],
        ["/publishers/acme/nodes/fresh/versions", "POST", { ...version({}), personal_access_token: 42 }, "personal_access_token"],
        ["/publishers/acme/nodes/bad%20id!/versions", "POST", version({}), "nodeId"],
        ["/publishers/acme/nodes", "POST", { name: "no id" }, "id"],
        ["/publishers/acme/nodes", "POST", { id: "../x" }, "id"],
        ["/publishers/acme/nodes", "POST", { id: "fine", tags: [3] }, "tags"],
        ["/publishers/acme/nodes/existing", "PUT", { icon: ["x"] }, "icon"],
        ["/publishers/acme/nodes/existing", "PUT", { id: "another" }, "id"],
        ["/publishers/acme/nodes/existing/versions/1.0.0", "PUT", { deprecated: "yes" }, "deprecated"],
        ["/publishers/acme/nodes/existing/versions/1.0.0", "PUT", { changelog: ["x"] }, "changelog"],
        ["/admin/nodes/existing/versions/1.0.0", "PUT", { status: "NodeVersionStatusGone" }, "status"],
        ["/admin/nodes/existing/versions/1.0.0", "PUT", { supported_host_version: "not a range" }, "supported_host_version"],
        ["/admin/nodes/existing/versions/1.0.0", "PUT", { status: "NodeVersionStatusFlagged", supported_os: "linux" }, "supported_os"],
        ["/admin/nodes/existing/versions/1.0.0", "PUT", { status: "NodeVersionStatusFlagged", status_reason: 3 }, "status_reason"]
      ]
      for (const [path, method, body, field] of cases) {
        const token = path.startsWith("/admin") ? admin : path.endsWith("/versions") ? undefined : acme.ownerJwt
        const answer = yield* send(service, method, path, { token, body })
        expectBadRequest(answer, field)
      }
      const raw = yield* send(service, "POST", "/publishers/acme/nodes/fresh/versions", { raw: "{not json" })
      expectError(raw, 400, "bad_request")
      expectBadRequest(yield* get(service, "/nodes/existing/versions?statuses=NodeVersionStatusGone"), "statuses")
      expectBadRequest(yield* get(service, `/nodes/existing/install?version=${"9".repeat(101)}`), "version")
      expectBadRequest(yield* send(service, "PUT", `/archives/existing/1.0.0?expires=${"1".repeat(21)}&signature=x`, {
        headers: { "content-type": "application/zip" }
      }), "expires")
      expect(yield* stored(service)).toEqual(before)
    }))

  it.effect("missing, wrong, revoked and foreign tokens are 401; callers without the role 403; nothing stored", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const before = yield* stored(service)
      const owner = yield* bearerClient(service, acme.ownerJwt)
      const { token: revoked } = yield* owner.api.tokens.createToken({ params: { publisherId: "acme" }, payload: { name: "old" } })
      const listed = yield* owner.api.tokens.listTokens({ params: { publisherId: "acme" } })
      const revokedId = listed.find((t) => t.name === "old")!.id
      yield* owner.api.tokens.revokeToken({ params: { publisherId: "acme", tokenId: revokedId } })

      expectError(yield* publish(service, "acme", "fresh", "1.0.0"), 401, "unauthorized")
      expectError(yield* publish(service, "acme", "fresh", "1.0.0", { pat: "rgpat_" + "x".repeat(43) }), 401, "invalid_token")
      expectError(yield* publish(service, "acme", "fresh", "1.0.0", { pat: "not-a-token" }), 401, "invalid_token")
      expectError(yield* publish(service, "acme", "fresh", "1.0.0", { pat: revoked }), 401, "invalid_token")
      expectError(yield* publish(service, "acme", "fresh", "1.0.0", { pat: other.pat }), 401, "invalid_token")
      expectError(yield* publish(service, "acme", "fresh", "1.0.0", { jwt: "not.a.jwt" }), 401, "unauthorized")
      expectError(yield* publish(service, "acme", "fresh", "1.0.0", { jwt: other.ownerJwt }), 403, "forbidden")
      expectError(yield* publish(service, "nobody", "fresh", "1.0.0", { pat: acme.pat }), 404, "not_found")
      // the maintenance endpoints: a bearer of a manager of the node's publisher
      expectError(yield* send(service, "POST", "/publishers/acme/nodes", { body: { id: "fresh" } }), 401)
      expectError(yield* send(service, "POST", "/publishers/acme/nodes", { token: other.ownerJwt, body: { id: "fresh" } }), 403)
      expectError(yield* send(service, "DELETE", "/publishers/acme/nodes/existing", { token: other.ownerJwt }), 403)
      expectError(yield* send(service, "DELETE", "/publishers/acme/nodes/existing/versions/1.0.0", { token: other.ownerJwt }), 403)
      expectError(yield* send(service, "PUT", "/admin/nodes/existing/versions/1.0.0", {
        token: acme.ownerJwt,
        body: { status: "NodeVersionStatusActive" }
      }), 403)
      // a publisher's route does not reach another publisher's node
      expectError(yield* send(service, "DELETE", "/publishers/other/nodes/existing", { token: other.ownerJwt }), 404)
      expect(yield* stored(service)).toEqual(before)
    }))

  it.effect("other publishers' ids, banned nodes and banned publishers (deleted nodes: EndToEnd.test.ts)", () =>
    Effect.gen(function*() {
      const service = yield* Service
      // the id belongs to acme
      expectError(yield* publish(service, "other", "existing", "2.0.0", { pat: other.pat }), 409, "node_exists")
      expectError(yield* send(service, "POST", "/publishers/other/nodes", { token: other.ownerJwt, body: { id: "existing" } }), 409, "node_exists")
      // a node created first, then published to
      const otherOwner = yield* bearerClient(service, other.ownerJwt)
      const created = yield* otherOwner.api.publishing.createNode({ params: { publisherId: "other" }, payload: { id: "made-first", name: "Made first" } })
      expect(created).toMatchObject({ id: "made-first", name: "Made first", publisher: { id: "other" } })
      yield* published(service, other, "made-first", "0.1.0")
      // banned node: no publish, no install, no listing, 403 when asked directly
      yield* published(service, acme, "to-ban", "1.0.0")
      expectStatus(yield* send(service, "PUT", "/admin/nodes/to-ban", { token: admin, body: { status: "NodeStatusBanned" } }), 200, "ban")
      expectError(yield* publish(service, "acme", "to-ban", "1.0.1", { pat: acme.pat }), 403, "node_banned")
      expectError(yield* get(service, "/nodes/to-ban"), 403, "node_banned")
      expectError(yield* get(service, "/nodes/to-ban/versions"), 403, "node_banned")
      expectError(yield* get(service, "/nodes/to-ban/install"), 403, "node_banned")
      expectError(yield* get(service, "/archives/to-ban/1.0.0"), 403, "node_banned")
      expect(((yield* get(service, "/nodes?node_id=to-ban&latest=true")).body as { nodes: Array<unknown> }).nodes).toEqual([])
      // banned publisher: the same for all its nodes
      expectStatus(yield* send(service, "PUT", "/admin/publishers/other", { token: admin, body: { status: "PublisherStatusBanned" } }), 200, "ban publisher")
      expectError(yield* publish(service, "other", "made-first", "0.2.0", { pat: other.pat }), 403, "publisher_banned")
      expectError(yield* send(service, "POST", "/publishers/other/nodes", { token: other.ownerJwt, body: { id: "made-later" } }), 403, "publisher_banned")
      expectError(yield* get(service, "/nodes/made-first/install"), 403, "node_banned")
      expect(((yield* get(service, "/nodes?node_id=made-first&latest=true")).body as { nodes: Array<unknown> }).nodes).toEqual([])
    }))
})
