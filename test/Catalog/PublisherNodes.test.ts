/**
 * GET /publishers/{publisherId}/nodes and .../nodes/v2 (bearer): all of a publisher's nodes,
 * deleted ones never, banned ones only on request by a member or a site admin.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { NodeInput } from "../../scripts/lib/Seeder.ts"
import { seedActors, tokensFor } from "../support/Actors.ts"
import { Catalogue, compareNodes, decodeNodes, getPage, ids, walkPages } from "../support/Catalogue.ts"
import { bearerClient } from "../support/Client.ts"
import { addMember, query } from "../support/Db.ts"
import { expectError, expectStatus, get } from "../support/Http.ts"
import { Service } from "../support/Service.ts"

const cat = new Catalogue()
const tokens = tokensFor("owner", "admin", "member", "stranger", "siteAdmin", "otherOwner")

const node = (id: string, publisher_id: string, i: number, status?: NodeInput["status"]): NodeInput => ({
  id,
  publisher_id,
  downloads: (i * 37) % 11,
  ...(i % 3 === 0 ? {} : { search_ranking: i % 4 }),
  created_at: new Date(Date.UTC(2024, 4, 1, 0, 0, i)),
  ...(status === undefined ? {} : { status })
})

/** acme: 14 active, 2 deleted, 3 banned nodes; other: 3 nodes; shut (banned): 2 active, 1 banned. */
const acmeActive = Array.from({ length: 14 }, (_, i) => `acme-${String(i).padStart(2, "0")}`)
const acmeDeleted = ["acme-deleted-1", "acme-deleted-2"]
const acmeBanned = ["acme-banned-1", "acme-banned-2", "acme-banned-3"]

const sorted = (xs: ReadonlyArray<string>) => [...xs].sort()
/** The default order of the listings (CONTRACT.md: search_ranking, downloads descending, id). */
const inDefaultOrder = (nodeIds: ReadonlyArray<string>) =>
  nodeIds.map((id) => cat.nodes.get(id)!).sort(compareNodes([])).map((n) => n.id)

layer(Service.layer(), { excludeTestServices: true })("publisher listings", (it) => {
  it.effect("seeds publishers, nodes and members", () =>
    Effect.gen(function*() {
      const service = yield* Service
      let i = 0
      yield* cat.add(service, {
        publishers: [{ id: "acme", name: "Acme" }, { id: "other" }, { id: "shut", status: "PublisherStatusBanned" }, { id: "empty" }],
        nodes: [
          ...acmeActive.map((id) => node(id, "acme", i++)),
          ...acmeDeleted.map((id) => node(id, "acme", i++, "NodeStatusDeleted")),
          ...acmeBanned.map((id) => node(id, "acme", i++, "NodeStatusBanned")),
          ...["other-1", "other-2", "other-3"].map((id) => node(id, "other", i++)),
          node("shut-1", "shut", i++),
          node("shut-2", "shut", i++),
          node("shut-banned", "shut", i++, "NodeStatusBanned")
        ],
        versions: [
          { node_id: "acme-00", version: "1.9.0", status: "NodeVersionStatusActive" },
          { node_id: "acme-00", version: "1.10.0", status: "NodeVersionStatusActive" },
          { node_id: "acme-banned-1", version: "0.1.0", status: "NodeVersionStatusActive" }
        ]
      })
      yield* seedActors(service, tokens)
      yield* addMember(service, "shut", "ann", "owner")
    }))

  const list = (publisherId: string, query: string, token: string) =>
    Effect.gen(function*() {
      const service = yield* Service
      const answer = yield* get(service, `/publishers/${publisherId}/nodes${query}`, { token })
      return decodeNodes(expectStatus(answer, 200, `/publishers/${publisherId}/nodes${query}`).body)
    })

  it.effect("lists every node of the publisher, more than 10, deleted and banned ones excluded", () =>
    Effect.gen(function*() {
      for (const token of [tokens.stranger, tokens.owner, tokens.siteAdmin]) {
        const nodes = yield* list("acme", "", token)
        expect(nodes).toHaveLength(14)
        expect(sorted(ids(nodes))).toEqual(acmeActive)
        expect(ids(nodes)).toEqual(inDefaultOrder(acmeActive))
        for (const n of nodes) {
          expect(n.publisher?.id).toBe("acme")
          expect(n.status).toBe("NodeStatusActive")
        }
        expect(nodes.find((n) => n.id === "acme-00")?.latest_version?.version).toBe("1.10.0")
      }
      expect(ids(yield* list("other", "", tokens.stranger))).toEqual(inDefaultOrder(["other-1", "other-2", "other-3"]))
      expect(yield* list("empty", "", tokens.stranger)).toEqual([])
      expect(ids(yield* list("acme", "?include_banned=false", tokens.stranger))).toEqual(inDefaultOrder(acmeActive))
      expect(ids(yield* list("acme", "?include_banned=0", tokens.owner))).toEqual(inDefaultOrder(acmeActive))
    }))

  it.effect("lists all of a large publisher (no cut at 10, 100 or 500)", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const many = Array.from({ length: 520 }, (_, i) => `big-${String(i).padStart(3, "0")}`)
      yield* cat.add(service, { publishers: [{ id: "big" }] })
      yield* service.writes.insertNodes(many.map((id, i) => ({ id, publisher_id: "big", downloads: i % 7 })))
      const stranger = yield* bearerClient(service, tokens.stranger)
      const nodes = yield* stranger.api.publisherNodes.listNodesForPublisher({
        params: { publisherId: "big" },
        query: {}
      })
      expect(nodes).toHaveLength(520)
      expect(sorted(nodes.map((n) => n.id))).toEqual(many)
    }))

  it.effect("include_banned adds banned nodes for members of every role and site admins", () =>
    Effect.gen(function*() {
      const expected = inDefaultOrder([...acmeActive, ...acmeBanned])
      for (const token of [tokens.owner, tokens.admin, tokens.member, tokens.siteAdmin]) {
        for (const flag of ["true", "1"]) {
          const nodes = yield* list("acme", `?include_banned=${flag}`, token)
          expect(nodes).toHaveLength(17)
          expect(ids(nodes)).toEqual(expected)
          expect(nodes.filter((n) => n.status === "NodeStatusBanned").map((n) => n.id).sort()).toEqual(acmeBanned)
          for (const id of acmeDeleted) expect(ids(nodes)).not.toContain(id)
        }
      }
      // a banned node keeps its latest_version in its publisher's listing
      const withBanned = yield* list("acme", "?include_banned=true", tokens.owner)
      expect(withBanned.find((n) => n.id === "acme-banned-1")?.latest_version?.version).toBe("0.1.0")
    }))

  it.effect("include_banned is 403 for anyone else, even a member of another publisher", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const token of [tokens.stranger, tokens.otherOwner]) {
        for (const path of ["/publishers/acme/nodes?include_banned=true", "/publishers/acme/nodes/v2?include_banned=true"]) {
          expectError(yield* get(service, path, { token }), 403, "forbidden")
        }
      }
      // a member of "other" may see other's banned nodes (none), not acme's
      expect(yield* list("other", "?include_banned=true", tokens.otherOwner)).toHaveLength(3)
    }))

  it.effect("a banned publisher's nodes: hidden like every listing, shown to its members with include_banned", () =>
    Effect.gen(function*() {
      // CONTRACT.md, States: banning hides the publisher's nodes from listings
      expect(yield* list("shut", "", tokens.owner)).toEqual([])
      const nodes = yield* list("shut", "?include_banned=true", tokens.owner)
      expect(sorted(ids(nodes))).toEqual(["shut-1", "shut-2", "shut-banned"])
      for (const n of nodes) expect(n.publisher?.status).toBe("PublisherStatusBanned")
      expect(sorted(ids(yield* list("shut", "?include_banned=true", tokens.siteAdmin)))).toEqual(["shut-1", "shut-2", "shut-banned"])
    }))

  it.effect("an unknown publisher is 404, with or without include_banned", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const path of ["/publishers/nobody/nodes", "/publishers/nobody/nodes/v2"]) {
        for (const query of ["", "?include_banned=true"]) {
          for (const token of [tokens.stranger, tokens.siteAdmin]) {
            expectError(yield* get(service, path + query, { token }), 404, "not_found")
          }
        }
      }
    }))

  it.effect("without a valid bearer token: 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const path of ["/publishers/acme/nodes", "/publishers/acme/nodes/v2", "/publishers/nobody/nodes"]) {
        expectError(yield* get(service, path), 401, "unauthorized")
        expectError(yield* get(service, path, { token: "not-a-jwt" }), 401, "unauthorized")
        expectError(yield* get(service, path, { headers: { authorization: `Basic ${btoa("ann:pw")}` } }), 401, "unauthorized")
      }
    }))

  it.effect("v2 pages the same nodes with page and limit", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const path = "/publishers/acme/nodes/v2"
      const first = yield* getPage(service, path, {}, tokens.stranger)
      expect({ ...first, nodes: ids(first.nodes) }).toEqual({
        limit: 10,
        nodes: inDefaultOrder(acmeActive).slice(0, 10),
        page: 1,
        total: 14,
        totalPages: 2
      })
      for (const limit of [1, 3, 5, 14, 15]) {
        const walked = yield* walkPages(service, path, {}, limit, tokens.stranger)
        expect(walked.total).toBe(14)
        expect(ids(walked.nodes)).toEqual(inDefaultOrder(acmeActive))
      }
      const past = yield* getPage(service, path, { page: 3, limit: 7 }, tokens.stranger)
      expect(past).toEqual({ limit: 7, nodes: [], page: 3, total: 14, totalPages: 2 })
      const clamped = yield* getPage(service, path, { limit: 100_000 }, tokens.stranger)
      expect({ limit: clamped.limit, total: clamped.total, n: clamped.nodes.length }).toEqual({ limit: 500, total: 14, n: 14 })
      // a publisher with more than 500 nodes pages through all of them
      const big = yield* walkPages(service, "/publishers/big/nodes/v2", {}, 500, tokens.stranger)
      expect(big.total).toBe(520)
      expect(big.totalPages).toBe(2)
      expect(new Set(ids(big.nodes)).size).toBe(520)
    }))

  it.effect("v2 include_banned follows the same rules", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const path = "/publishers/acme/nodes/v2"
      const expected = inDefaultOrder([...acmeActive, ...acmeBanned])
      for (const token of [tokens.owner, tokens.member, tokens.siteAdmin]) {
        const walked = yield* walkPages(service, path, { include_banned: "true" }, 4, token)
        expect(walked.total).toBe(17)
        expect(ids(walked.nodes)).toEqual(expected)
      }
      const stranger = yield* bearerClient(service, tokens.stranger)
      const plain = yield* stranger.api.publisherNodes.listNodesForPublisherV2({
        params: { publisherId: "acme" },
        query: { limit: 50 }
      })
      expect(plain.nodes.map((n) => n.id)).toEqual(inDefaultOrder(acmeActive))
      const empty = yield* stranger.api.publisherNodes.listNodesForPublisherV2({
        params: { publisherId: "empty" },
        query: {}
      })
      expect(empty).toEqual({ limit: 10, nodes: [], page: 1, total: 0, totalPages: 0 })
    }))

  it.effect("bad page, limit or include_banned values are 400 naming the parameter", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const [query, name] of [["page=0", "page"], ["limit=0", "limit"], ["limit=abc", "limit"], ["include_banned=yes", "include_banned"]]) {
        const e = expectError(yield* get(service, `/publishers/acme/nodes/v2?${query}`, { token: tokens.owner }), 400, "bad_request")
        expect(e.message).toContain(name)
      }
      const e = expectError(yield* get(service, "/publishers/acme/nodes?include_banned=maybe", { token: tokens.owner }), 400, "bad_request")
      expect(e.message).toContain("include_banned")
    }))

  it.effect("a membership removed takes include_banned away at once", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* query(service, "DELETE FROM publisher_members WHERE publisher_id = 'acme' AND user_id = 'mia'")
      expectError(yield* get(service, "/publishers/acme/nodes?include_banned=true", { token: tokens.member }), 403, "forbidden")
      // and the public part stays readable
      expect(yield* list("acme", "", tokens.member)).toHaveLength(14)
    }))
})
