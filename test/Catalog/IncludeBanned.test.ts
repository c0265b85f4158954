/**
 * include_banned on GET /nodes and GET /nodes/search over loopback HTTP against the real
 * database: site admins get banned nodes (and nodes of banned publishers) in the page and its
 * total, anyone else asking is 403, and the list cache never serves one listing for the other.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import type { NodeInput } from "../../scripts/lib/Seeder.ts"
import { Catalogue, decodeNodeList, getPage, ids, type ModelNode } from "../support/Catalogue.ts"
import { expectBadRequest, expectError, expectStatus, get } from "../support/Http.ts"
import { forAll } from "../support/Property.ts"
import { Service } from "../support/Service.ts"

layer(Service.layer(), { excludeTestServices: true })("include_banned on GET /nodes and search", (it) => {
  const cat = new Catalogue()
  const tokens = { admin: "", user: "" }
  const nodes: Array<NodeInput> = [
    { id: "plain-1", publisher_id: "acme", name: "Lantern One", downloads: 30 },
    { id: "plain-2", publisher_id: "acme", name: "Lantern Two", downloads: 20 },
    { id: "banned-1", publisher_id: "acme", name: "Lantern Banned", status: "NodeStatusBanned", downloads: 25 },
    { id: "deleted-1", publisher_id: "acme", name: "Lantern Deleted", status: "NodeStatusDeleted" },
    { id: "shady-1", publisher_id: "shady", name: "Lantern Shady", downloads: 10 }
  ]
  const listed = ["plain-1", "plain-2"]
  const withBanned = ["plain-1", "banned-1", "plain-2", "shady-1"]

  it.effect("seeds", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* cat.add(service, { publishers: [{ id: "acme" }, { id: "shady", status: "PublisherStatusBanned" }], nodes })
      tokens.admin = yield* Effect.promise(() => service.token({ sub: "root", admin: true }))
      tokens.user = yield* Effect.promise(() => service.token({ sub: "someone" }))
    }))

  it.effect("registry-web pages/admin/nodes.tsx: a site admin's GET /nodes?page=1&limit=10&include_banned=true lists banned nodes, totals included", () =>
    Effect.gen(function*() {
      const service = yield* Service
      // useListAllNodes({ page, limit: 10, include_banned: selectedStatuses.includes(NodeStatusBanned) }) (src/api/generated.ts)
      const page = yield* getPage(service, "/nodes", { page: 1, limit: 10, include_banned: "true" }, tokens.admin)
      expect(ids(page.nodes)).toEqual(withBanned)
      expect({ total: page.total, totalPages: page.totalPages }).toEqual({ total: 4, totalPages: 1 })
      // the status the admin page filters on is in each node
      expect(page.nodes.find((n) => n.id === "banned-1")?.status).toBe("NodeStatusBanned")
      const without = yield* getPage(service, "/nodes", { page: 1, limit: 10, include_banned: "false" }, tokens.admin)
      expect(ids(without.nodes)).toEqual(listed)
      expect(without.total).toBe(2)
    }))

  it.effect("a user or an anonymous caller asking include_banned=true is 403, on both; false is anyone's", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const path of ["/nodes?include_banned=true", "/nodes/search?include_banned=true", "/nodes/search?include_banned=true&search=lantern"]) {
        for (const token of [tokens.user, undefined]) {
          const e = expectError(yield* get(service, path, { token }), 403, "forbidden")
          expect(e.message, path).toContain("include_banned")
        }
      }
      for (const token of [tokens.user, undefined]) {
        expect(ids((yield* getPage(service, "/nodes", { include_banned: "false" }, token)).nodes)).toEqual(listed)
        expect(ids((yield* getPage(service, "/nodes", {}, token)).nodes)).toEqual(listed)
      }
      expectBadRequest(yield* get(service, "/nodes?include_banned=yes", { token: tokens.admin }), "include_banned")
    }))

  it.effect("search agrees: a site admin's totals include banned nodes, with and without criteria", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const all = yield* getPage(service, "/nodes/search", { include_banned: "true" }, tokens.admin)
      expect(ids(all.nodes)).toEqual(withBanned)
      expect(all.total).toBe(4)
      const found = yield* getPage(service, "/nodes/search", { search: "lantern", include_banned: "true", limit: 100 }, tokens.admin)
      expect(ids(found.nodes).sort()).toEqual([...withBanned].sort())
      expect(found.total).toBe(4)
      const plain = yield* getPage(service, "/nodes/search", { search: "lantern", limit: 100 }, tokens.admin)
      expect(ids(plain.nodes).sort()).toEqual(listed)
      expect(plain.total).toBe(2)
    }))

  it.effect("the cache never mixes them: banned-including pages are never kept, and the kept page stays the plain one", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const q = "limit=10&page=1"
      // the plain page is kept (a miss, then hits)
      yield* get(service, `/nodes?${q}`)
      const kept = yield* get(service, `/nodes?${q}`)
      expect(kept.headers.get("x-cache")).toBe("hit")
      expect(ids(decodeNodeList(kept.body).nodes)).toEqual(listed)
      for (let i = 0; i < 2; i++) {
        const admin = expectStatus(yield* get(service, `/nodes?${q}&include_banned=true`, { token: tokens.admin }), 200, "admin page")
        expect(admin.headers.get("x-cache")).toBe("bypass")
        // nor may a shared cache keep it
        expect(admin.headers.get("cache-control")).toBe("private, no-cache")
        expect(decodeNodeList(admin.body).total).toBe(4)
        expect(admin.headers.get("etag")).not.toBe(kept.headers.get("etag"))
      }
      // the admin's token with a plain query gets the plain page, from the cache
      for (const token of [tokens.admin, tokens.user, undefined]) {
        const again = yield* get(service, `/nodes?${q}`, { token })
        expect(again.headers.get("x-cache")).toBe("hit")
        expect(again.headers.get("cache-control")).toBe("no-cache")
        expect(again.text).toBe(kept.text)
      }
      // and a ban is seen at once on the admin's page (never kept), the plain one dropping the node
      yield* service.writes.updateNode("plain-2", { status: "NodeStatusBanned" })
      const afterBan = decodeNodeList((yield* get(service, `/nodes?${q}&include_banned=true`, { token: tokens.admin })).body)
      expect(afterBan.nodes.find((n) => n.id === "plain-2")?.status).toBe("NodeStatusBanned")
      yield* service.writes.updateNode("plain-2", { status: "NodeStatusActive" })
    }))

  it.effect(
    "include_banned on GET /nodes: true/1 and false/0 are read, anything else is 400 naming it",
    () =>
      forAll(
        { value: fc.oneof(fc.constantFrom("true", "false", "1", "0", "TRUE", "yes", "", "2"), fc.string({ maxLength: 6 })) },
        ({ value }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const answer = yield* get(service, `/nodes?limit=10&page=1&include_banned=${encodeURIComponent(value)}`, { token: tokens.admin })
            if (["true", "1", "false", "0"].includes(value)) {
              const page = decodeNodeList(expectStatus(answer, 200, value).body)
              expect(page.total, value).toBe(value === "true" || value === "1" ? 4 : 2)
            } else {
              expectBadRequest(answer, "include_banned")
            }
          }),
        { numRuns: 30 }
      ),
    { timeout: 60_000 }
  )

  const nodeStatus = fc.constantFrom("NodeStatusActive", "NodeStatusBanned", "NodeStatusDeleted")
  let run = 0

  it.effect(
    "for random catalogues, a site admin's listing is the model's non-deleted nodes, everyone's the listed ones",
    () =>
      forAll(
        { statuses: fc.array(fc.tuple(nodeStatus, fc.boolean()), { minLength: 1, maxLength: 8 }) },
        ({ statuses }) =>
          Effect.gen(function*() {
            const service = yield* Service
            run += 1
            const made: Array<NodeInput> = statuses.map(([status, ofShady], i) => ({
              id: `r${run}-${i}`,
              publisher_id: ofShady ? "shady" : "acme",
              status,
              downloads: i
            }))
            yield* cat.add(service, { nodes: made })
            const nodeIds = made.map((n) => n.id)
            const order = (keep: (n: ModelNode) => boolean) =>
              [...cat.nodes.values()].filter((n) => nodeIds.includes(n.id) && keep(n)).sort((a, b) => (b.downloads ?? 0) - (a.downloads ?? 0)).map((n) => n.id)
            const admin = yield* getPage(service, "/nodes", { node_id: nodeIds, include_banned: "true", limit: 100, latest: "true" }, tokens.admin)
            const model = order((n) => n.status !== "NodeStatusDeleted")
            expect(ids(admin.nodes)).toEqual(model)
            expect(admin.total).toBe(model.length)
            const plain = yield* getPage(service, "/nodes", { node_id: nodeIds, limit: 100 }, tokens.user)
            const listedModel = order((n) => cat.listed(n))
            expect(ids(plain.nodes)).toEqual(listedModel)
            expect(plain.total).toBe(listedModel.length)
          }),
        { numRuns: 25 }
      ),
    { timeout: 120_000 }
  )
})
