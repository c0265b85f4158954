/**
 * Site administration: creating unclaimed nodes, moderating nodes (status machine, admin-only
 * fields) and banning publishers, whose nodes leave the listings at once, cached pages included.
 * Real HTTP against a real PostgreSQL; stored rows are read back with SQL.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { type NodeStatus } from "../src/Domain/Node.ts"
import { Publisher, type PublisherStatus } from "../src/Domain/Publisher.ts"
import { nodeStatusMoves, publisherStatusMoves } from "../src/Domain/Transitions.ts"
import { move } from "./support/Moves.ts"
import { seedActors, tokensFor } from "./support/Actors.ts"
import { Catalogue, decodeExact, decodeNodes, ids, isoMillis } from "./support/Catalogue.ts"
import { bearerClient } from "./support/Client.ts"
import { addMember, countRows, queryOne } from "./support/Db.ts"
import { eventually } from "./support/Eventually.ts"
import { expectBadRequest, expectError, expectStatus, get, send } from "./support/Http.ts"
import { forAll } from "./support/Property.ts"
import { type Running, Service } from "./support/Service.ts"

// --- helpers -----------------------------------------------------------------------------------

/** One Node, exactly the wire format. */
const decodeNode = (u: unknown) => decodeNodes([u])[0]!

const decodePublisher = decodeExact(Publisher)

const storedNode = (service: Running, nodeId: string) =>
  queryOne<{ status: NodeStatus; publisher_id: string; status_detail: string | null; tags_admin: Array<string>; search_ranking: number | null }>(
    service,
    "SELECT status, publisher_id, status_detail, tags_admin, search_ranking FROM nodes WHERE id = $1",
    [nodeId]
  )

const storedPublisherStatus = (service: Running, publisherId: string) =>
  Effect.map(queryOne<{ status: PublisherStatus }>(service, "SELECT status FROM publishers WHERE id = $1", [publisherId]), (row) => row?.status)

const countNodes = (service: Running) => countRows(service, "nodes")

/** The ids `GET /nodes` lists among `nodeIds`, through the cache unless `latest`. */
const listedAmong = (service: Running, nodeIds: ReadonlyArray<string>, latest = false) =>
  Effect.gen(function*() {
    const q = new URLSearchParams([...nodeIds.map((id): [string, string] => ["node_id", id]), ["limit", "500"], ["sort", "id"]])
    if (latest) q.set("latest", "true")
    const answer = expectStatus(yield* get(service, `/nodes?${q}`), 200, "GET /nodes")
    return { ids: ids(decodeNodes((answer.body as { nodes: unknown }).nodes)), cache: answer.headers.get("x-cache") }
  })

// --- the catalogue -------------------------------------------------------------------------------

type Actor = "none" | "invalid" | "stranger" | "member" | "admin" | "owner" | "siteAdmin"
const tokens: Record<Actor, string | undefined> = {
  none: undefined,
  invalid: "not-a-jwt",
  ...tokensFor("stranger", "member", "admin", "owner", "siteAdmin")
}
const actorsOf = Object.keys(tokens) as Array<Actor>
/** Everyone but a site admin is refused; without a valid token, before anything else. */
const refusedUnlessSiteAdmin = (actor: Actor, ok: number) =>
  actor === "none" || actor === "invalid" ? 401 : actor === "siteAdmin" ? ok : 403

const cat = new Catalogue()

layer(Service.layer(), { excludeTestServices: true })("site administration", (it) => {
  it.effect("seeds publishers, nodes and members", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* cat.add(service, {
        publishers: [{ id: "acme", name: "Acme" }, { id: "other" }],
        nodes: [
          { id: "acme-1", publisher_id: "acme", name: "One", downloads: 5 },
          { id: "acme-2", publisher_id: "acme", name: "Two", downloads: 3 },
          { id: "acme-deleted", publisher_id: "acme", status: "NodeStatusDeleted" },
          { id: "other-1", publisher_id: "other" }
        ],
        versions: [{ node_id: "acme-1", version: "1.2.0", status: "NodeVersionStatusActive" }]
      })
      yield* seedActors(service, tokens)
    }))

  // --- POST /admin/nodes -------------------------------------------------------------------------

  it.effect("POST /admin/nodes: a site admin creates an unclaimed node; 201 with the Node", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const body = {
        id: "fresh-node",
        repository: "https://repohost.example/someone/fresh-node",
        name: "Fresh",
        description: "A node nobody has claimed",
        author: "someone",
        license: "LICENSE",
        icon: "https://example.com/icon.png",
        tags: ["image", "video"]
      }
      const answer = expectStatus(yield* send(service, "POST", "/admin/nodes", { token: tokens.siteAdmin, body }), 201, "POST")
      expect(answer.headers.get("content-type")).toMatch(/^application\/json/)
      const node = decodeNode(answer.body)
      expect(node).toMatchObject({ ...body, status: "NodeStatusActive", downloads: 0 })
      expect(node.publisher).toMatchObject({ id: "unclaimed", name: "Unclaimed", status: "PublisherStatusActive" })
      expect(node.publisher?.members).toBeUndefined()
      expect(node.created_at).toMatch(isoMillis)
      expect(node.latest_version).toBeUndefined()
      expect(yield* storedNode(service, "fresh-node")).toMatchObject({ publisher_id: "unclaimed", status: "NodeStatusActive" })

      // listed at once (cached path), and in the unclaimed publisher's listing
      expect((yield* listedAmong(service, ["fresh-node"])).ids).toEqual(["fresh-node"])
      const stranger = yield* bearerClient(service, tokens.stranger!)
      const unclaimed = yield* stranger.api.publisherNodes.listNodesForPublisher({
        params: { publisherId: "unclaimed" },
        query: {}
      })
      expect(unclaimed.map((n) => n.id)).toContain("fresh-node")

      // only what is required
      const siteAdmin = yield* bearerClient(service, tokens.siteAdmin!)
      const minimal = yield* siteAdmin.api.admin.createUnclaimedNode({
        payload: { id: "Minimal_node.v2", repository: "https://repohost.example/a/b" }
      })
      expect(minimal).toMatchObject({ id: "Minimal_node.v2", repository: "https://repohost.example/a/b" })
    }))

  it.effect("POST /admin/nodes: an id that exists (in any publisher, in any status) is 409 node_exists and nothing changes", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const count = yield* countNodes(service)
      for (const id of ["fresh-node", "acme-1", "acme-deleted"]) {
        const before = yield* storedNode(service, id)
        expectError(
          yield* send(service, "POST", "/admin/nodes", { token: tokens.siteAdmin, body: { id, repository: "https://x.example/r" } }),
          409,
          "node_exists"
        )
        expect(yield* storedNode(service, id)).toEqual(before)
      }
      expect(yield* countNodes(service)).toBe(count)
    }))

  it.effect("POST /admin/nodes: site admins only", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const count = yield* countNodes(service)
      for (const actor of actorsOf) {
        const answer = yield* send(service, "POST", "/admin/nodes", {
          token: tokens[actor],
          body: { id: `by-${actor}`, repository: "https://repohost.example/x/y" }
        })
        const expected = refusedUnlessSiteAdmin(actor, 201)
        expect(answer.status, actor).toBe(expected)
        if (expected !== 201) expectError(answer, expected)
      }
      expect(yield* countNodes(service)).toBe(count + 1)
    }))

  it.effect("POST /admin/nodes: bad bodies are 400 naming the field, and nothing is stored", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const count = yield* countNodes(service)
      const ok = { id: "bad-body-node", repository: "https://repohost.example/x/y" }
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{ repository: ok.repository }, "id"],
        [{ id: ok.id }, "repository"],
        [{ ...ok, id: "" }, "id"],
        [{ ...ok, id: "-starts-with-dash" }, "id"],
        [{ ...ok, id: "has space" }, "id"],
        [{ ...ok, id: "n".repeat(101) }, "id"],
        [{ ...ok, id: 7 }, "id"],
        [{ ...ok, repository: "" }, "repository"],
        [{ ...ok, repository: "r".repeat(2001) }, "repository"],
        [{ ...ok, name: "n".repeat(201) }, "name"],
        [{ ...ok, description: "d".repeat(5001) }, "description"],
        [{ ...ok, tags: "image" }, "tags"],
        [{ ...ok, tags: [1] }, "tags"],
        [{ ...ok, tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, "tags"],
        [{ ...ok, name: null }, "name"]
      ]
      for (const [body, field] of cases) {
        expectBadRequest(yield* send(service, "POST", "/admin/nodes", { token: tokens.siteAdmin, body }), field)
      }
      for (const raw of ["{\"id\": \"x\",", "nope", "[]", ""]) {
        expectError(yield* send(service, "POST", "/admin/nodes", { token: tokens.siteAdmin, raw }), 400, "bad_request")
      }
      expect(yield* countNodes(service)).toBe(count)
    }))

  // --- PUT /admin/nodes/{nodeId} -------------------------------------------------------------------

  it.effect("PUT /admin/nodes: sets status_detail, tags_admin, search_ranking and preempted names; answers the Node", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const siteAdmin = yield* bearerClient(service, tokens.siteAdmin!)
      const body = {
        status_detail: "Reviewed",
        tags_admin: ["dangerous", "slow"],
        search_ranking: 2,
        preempted_host_node_names: ["LoadImage", "SaveImage"]
      }
      const node = yield* siteAdmin.api.admin.moderateNode({ params: { nodeId: "acme-2" }, payload: body })
      expect(node).toMatchObject({ id: "acme-2", name: "Two", status: "NodeStatusActive", ...body })
      expect(node.publisher?.id).toBe("acme")
      const listed = yield* siteAdmin.api.catalog.listAllNodes({ query: { node_id: ["acme-2"] } })
      expect(listed.nodes[0]).toEqual(node)

      // fields left out keep their values; the node's latest version is part of the answer
      const partial = yield* siteAdmin.api.admin.moderateNode({ params: { nodeId: "acme-1" }, payload: { search_ranking: -1 } })
      expect(partial).toMatchObject({ id: "acme-1", name: "One", search_ranking: -1, latest_version: { version: "1.2.0" } })
      const again = yield* siteAdmin.api.admin.moderateNode({ params: { nodeId: "acme-2" }, payload: {} })
      expect(again).toMatchObject(body)
    }))

  it.effect("PUT /admin/nodes: status moves of the machine; a refused move is 409 and changes nothing", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const put = (status: NodeStatus, extra: Record<string, unknown> = {}) =>
        send(service, "PUT", "/admin/nodes/other-1", { token: tokens.siteAdmin, body: { status, ...extra } })
      expectStatus(yield* put("NodeStatusDeleted"), 200, "Active -> Deleted")
      expect((yield* listedAmong(service, ["other-1"])).ids).toEqual([])
      const before = yield* storedNode(service, "other-1")
      const e = expectError(yield* put("NodeStatusBanned", { status_detail: "not applied", search_ranking: 9 }), 409, "conflict")
      expect(e.message).toContain("NodeStatusDeleted")
      expect(yield* storedNode(service, "other-1")).toEqual(before)
      // asking for the status it has is no move
      expectStatus(yield* put("NodeStatusDeleted"), 200, "Deleted -> Deleted")
      // a deleted node is still the admins' to see and restore
      const restored = expectStatus(yield* put("NodeStatusActive"), 200, "Deleted -> Active")
      expect(decodeNode(restored.body).status).toBe("NodeStatusActive")
      expect((yield* listedAmong(service, ["other-1"])).ids).toEqual(["other-1"])
      expectStatus(yield* put("NodeStatusBanned", { status_detail: "malware" }), 200, "Active -> Banned")
      expect((yield* listedAmong(service, ["other-1"])).ids).toEqual([])
      expect(yield* storedNode(service, "other-1")).toMatchObject({ status: "NodeStatusBanned", status_detail: "malware" })
      expectError(yield* put("NodeStatusDeleted"), 409, "conflict")
      expectStatus(yield* put("NodeStatusActive"), 200, "Banned -> Active")
    }))

  it.effect("PUT /admin/nodes: two concurrent moves that exclude each other: exactly one wins", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (let round = 0; round < 8; round++) {
        const outcomes = yield* Effect.all(
          (["NodeStatusDeleted", "NodeStatusBanned"] as const).map((status) =>
            send(service, "PUT", "/admin/nodes/acme-2", { token: tokens.siteAdmin, body: { status } })
          ),
          { concurrency: "unbounded" }
        )
        // from Active both are allowed; from either result the other is refused
        expect(outcomes.map((a) => a.status).sort()).toEqual([200, 409])
        const winner = (["NodeStatusDeleted", "NodeStatusBanned"] as const)[outcomes.findIndex((a) => a.status === 200)]
        expect((yield* storedNode(service, "acme-2"))?.status).toBe(winner)
        expectStatus(
          yield* send(service, "PUT", "/admin/nodes/acme-2", { token: tokens.siteAdmin, body: { status: "NodeStatusActive" } }),
          200,
          "reset"
        )
      }
    }))

  it.effect("PUT /admin/nodes: unknown node 404; site admins only; bad bodies 400 naming the field", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectError(yield* send(service, "PUT", "/admin/nodes/nobody", { token: tokens.siteAdmin, body: {} }), 404, "not_found")
      expectError(
        yield* send(service, "PUT", "/admin/nodes/nobody", { token: tokens.siteAdmin, body: { status: "NodeStatusBanned" } }),
        404,
        "not_found"
      )
      const before = yield* storedNode(service, "acme-1")
      for (const actor of actorsOf) {
        const answer = yield* send(service, "PUT", "/admin/nodes/acme-1", {
          token: tokens[actor],
          body: { status_detail: `by ${actor}` }
        })
        const expected = refusedUnlessSiteAdmin(actor, 200)
        expect(answer.status, actor).toBe(expected)
        if (expected !== 200) expectError(answer, expected)
      }
      expect(yield* storedNode(service, "acme-1")).toEqual({ ...before, status_detail: "by siteAdmin" })

      const now = yield* storedNode(service, "acme-1")
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{ status: "Nope" }, "status"],
        [{ status: "nodestatusbanned" }, "status"],
        [{ search_ranking: 1.5 }, "search_ranking"],
        [{ search_ranking: "1" }, "search_ranking"],
        [{ search_ranking: 2 ** 31 }, "search_ranking"],
        [{ tags_admin: "x" }, "tags_admin"],
        [{ tags_admin: ["t".repeat(101)] }, "tags_admin"],
        [{ status_detail: "s".repeat(2001) }, "status_detail"],
        [{ preempted_host_node_names: [true] }, "preempted_host_node_names"],
        [{ preempted_host_node_names: Array.from({ length: 501 }, (_, i) => `n${i}`) }, "preempted_host_node_names"]
      ]
      for (const [body, field] of cases) {
        expectBadRequest(yield* send(service, "PUT", "/admin/nodes/acme-1", { token: tokens.siteAdmin, body }), field)
      }
      for (const raw of ["{\"status\":", "status=NodeStatusBanned"]) {
        expectError(yield* send(service, "PUT", "/admin/nodes/acme-1", { token: tokens.siteAdmin, raw }), 400, "bad_request")
      }
      expect(yield* storedNode(service, "acme-1")).toEqual(now)
    }))

  // --- PUT /admin/publishers/{publisherId} ---------------------------------------------------------

  it.effect("PUT /admin/publishers: a ban takes the publisher's nodes out of GET /nodes at once, cached pages included", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const acme = ["acme-1", "acme-2"]
      const { value: cached } = yield* eventually(listedAmong(service, [...acme, "other-1"]), (listed) => listed.cache === "hit")
      expect(cached).toEqual({ ids: [...acme, "other-1"], cache: "hit" })
      // the default page, cached too
      const before = expectStatus(yield* get(service, "/nodes"), 200, "GET /nodes")
      expect(ids(decodeNodes((before.body as { nodes: unknown }).nodes))).toContain("acme-1")

      const answer = expectStatus(
        yield* send(service, "PUT", "/admin/publishers/acme", { token: tokens.siteAdmin, body: { status: "PublisherStatusBanned" } }),
        200,
        "ban"
      )
      const publisher = decodePublisher(answer.body)
      expect(publisher).toMatchObject({ id: "acme", name: "Acme", status: "PublisherStatusBanned" })
      expect(publisher.members).toBeUndefined()
      expect(publisher.createdAt).toMatch(isoMillis)

      expect((yield* listedAmong(service, [...acme, "other-1"])).ids).toEqual(["other-1"])
      const after = expectStatus(yield* get(service, "/nodes"), 200, "GET /nodes")
      expect(ids(decodeNodes((after.body as { nodes: unknown }).nodes))).not.toContain("acme-1")
      // and from the publisher's own listing and the version endpoint
      const stranger = yield* bearerClient(service, tokens.stranger!)
      const own = yield* stranger.api.publisherNodes.listNodesForPublisher({ params: { publisherId: "acme" }, query: {} })
      expect(own).toEqual([])
      expectError(yield* get(service, "/nodes/acme-1/versions/1.2.0"), 403, "node_banned")

      const siteAdmin = yield* bearerClient(service, tokens.siteAdmin!)
      const unban = yield* siteAdmin.api.admin.moderatePublisher({ params: { publisherId: "acme" }, payload: { status: "PublisherStatusActive" } })
      expect(unban.status).toBe("PublisherStatusActive")
      expect((yield* listedAmong(service, [...acme, "other-1"])).ids).toEqual([...acme, "other-1"])
      // a node banned on its own stays out when its publisher comes back
      expectStatus(
        yield* send(service, "PUT", "/admin/nodes/acme-2", { token: tokens.siteAdmin, body: { status: "NodeStatusBanned" } }),
        200,
        "ban node"
      )
      for (const status of ["PublisherStatusBanned", "PublisherStatusActive"] as const) {
        expectStatus(yield* send(service, "PUT", "/admin/publishers/acme", { token: tokens.siteAdmin, body: { status } }), 200, status)
      }
      expect((yield* listedAmong(service, [...acme, "other-1"])).ids).toEqual(["acme-1", "other-1"])
      expectStatus(
        yield* send(service, "PUT", "/admin/nodes/acme-2", { token: tokens.siteAdmin, body: { status: "NodeStatusActive" } }),
        200,
        "unban node"
      )
    }))

  it.effect("PUT /admin/publishers: unknown 404; 'unclaimed' cannot be banned (409); site admins only; bad bodies 400", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectError(
        yield* send(service, "PUT", "/admin/publishers/nobody", { token: tokens.siteAdmin, body: { status: "PublisherStatusBanned" } }),
        404,
        "not_found"
      )
      const e = expectError(
        yield* send(service, "PUT", "/admin/publishers/unclaimed", { token: tokens.siteAdmin, body: { status: "PublisherStatusBanned" } }),
        409,
        "conflict"
      )
      expect(e.message).toContain("unclaimed")
      expect(yield* storedPublisherStatus(service, "unclaimed")).toBe("PublisherStatusActive")
      expect((yield* listedAmong(service, ["fresh-node"])).ids).toEqual(["fresh-node"])
      expectStatus(
        yield* send(service, "PUT", "/admin/publishers/unclaimed", { token: tokens.siteAdmin, body: { status: "PublisherStatusActive" } }),
        200,
        "unclaimed stays active"
      )

      for (const actor of actorsOf) {
        const answer = yield* send(service, "PUT", "/admin/publishers/other", {
          token: tokens[actor],
          body: { status: "PublisherStatusBanned" }
        })
        const expected = refusedUnlessSiteAdmin(actor, 200)
        expect(answer.status, actor).toBe(expected)
        if (expected !== 200) {
          expectError(answer, expected)
          expect(yield* storedPublisherStatus(service, "other")).toBe("PublisherStatusActive")
        }
      }
      // the owner of a publisher cannot lift its ban
      const ownerTry = yield* send(service, "PUT", "/admin/publishers/acme", { token: tokens.owner, body: { status: "PublisherStatusActive" } })
      expectError(ownerTry, 403, "forbidden")
      expectStatus(
        yield* send(service, "PUT", "/admin/publishers/other", { token: tokens.siteAdmin, body: { status: "PublisherStatusActive" } }),
        200,
        "unban other"
      )

      for (const [body, field] of [[{}, "status"], [{ status: "Nope" }, "status"], [{ status: true }, "status"], [{ status: null }, "status"]] as const) {
        expectBadRequest(yield* send(service, "PUT", "/admin/publishers/other", { token: tokens.siteAdmin, body }), field)
      }
      for (const raw of ["{\"status\"", "PublisherStatusBanned"]) {
        expectError(yield* send(service, "PUT", "/admin/publishers/other", { token: tokens.siteAdmin, raw }), 400, "bad_request")
      }
      expect(yield* storedPublisherStatus(service, "other")).toBe("PublisherStatusActive")
    }))

  // --- the state machines, by property -------------------------------------------------------------

  const nodeStatuses: ReadonlyArray<NodeStatus> = ["NodeStatusActive", "NodeStatusDeleted", "NodeStatusBanned"]
  const publisherStatuses: ReadonlyArray<PublisherStatus> = ["PublisherStatusActive", "PublisherStatusBanned"]
  const propActors = ["siteAdmin", "owner", "stranger"] as const
  let run = 0

  it.effect(
    "node status: random moves by random actors follow the machine; refused ones change nothing; listings follow",
    () =>
      forAll(
        {
          steps: fc.array(
            fc.record({
              actor: fc.constantFrom(...propActors),
              status: fc.constantFrom(...nodeStatuses),
              detail: fc.option(fc.string({ maxLength: 30 }), { nil: undefined })
            }),
            { minLength: 1, maxLength: 12 }
          )
        },
        ({ steps }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const nodeId = `prop-node-${run++}`
            yield* service.writes.insertNodes([{ id: nodeId, publisher_id: "acme" }])
            const model: { status: NodeStatus; detail: string | null } = { status: "NodeStatusActive", detail: null }
            for (const step of steps) {
              const answer = yield* send(service, "PUT", `/admin/nodes/${nodeId}`, {
                token: tokens[step.actor],
                body: { status: step.status, ...(step.detail === undefined ? {} : { status_detail: step.detail }) }
              })
              const verdict = move(nodeStatusMoves, model.status, step.status)
              const what = `${step.actor}: ${model.status} -> ${step.status}`
              if (step.actor !== "siteAdmin") {
                expectError(answer, 403, "forbidden")
              } else if (verdict === "refused") {
                expectError(answer, 409, "conflict")
              } else {
                expectStatus(answer, 200, what)
                model.status = step.status
                if (step.detail !== undefined) model.detail = step.detail
                expect(decodeNode(answer.body).status).toBe(model.status)
              }
              const stored = yield* storedNode(service, nodeId)
              expect({ status: stored?.status, detail: stored?.status_detail }, what).toEqual(model)
              // the cached listing agrees with the stored state after every step
              expect((yield* listedAmong(service, [nodeId])).ids, what).toEqual(model.status === "NodeStatusActive" ? [nodeId] : [])
            }
          }),
        { numRuns: 20 }
      ),
    120_000
  )

  it.effect(
    "publisher status: random bans and unbans by random actors follow the machine; 'unclaimed' is never banned",
    () =>
      forAll(
        {
          steps: fc.array(
            fc.record({
              actor: fc.constantFrom(...propActors),
              status: fc.constantFrom(...publisherStatuses),
              unclaimed: fc.boolean()
            }),
            { minLength: 1, maxLength: 12 }
          )
        },
        ({ steps }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const publisherId = `prop-pub-${run++}`
            const nodeId = `${publisherId}-node`
            yield* service.writes.upsertPublishers([{ id: publisherId }])
            yield* service.writes.insertNodes([{ id: nodeId, publisher_id: publisherId }])
            yield* addMember(service, publisherId, "ann", "owner")
            const model: Record<string, PublisherStatus> = { [publisherId]: "PublisherStatusActive", unclaimed: "PublisherStatusActive" }
            for (const step of steps) {
              const target = step.unclaimed ? "unclaimed" : publisherId
              const answer = yield* send(service, "PUT", `/admin/publishers/${target}`, {
                token: tokens[step.actor],
                body: { status: step.status }
              })
              const verdict = move(publisherStatusMoves, model[target]!, step.status)
              const what = `${step.actor}: ${target} ${model[target]} -> ${step.status}`
              if (step.actor !== "siteAdmin") {
                expectError(answer, 403, "forbidden")
              } else if (verdict === "refused" || (target === "unclaimed" && step.status === "PublisherStatusBanned")) {
                expectError(answer, 409, "conflict")
              } else {
                expectStatus(answer, 200, what)
                model[target] = step.status
                expect(decodePublisher(answer.body)).toMatchObject({ id: target, status: step.status })
              }
              for (const id of [publisherId, "unclaimed"]) {
                expect(yield* storedPublisherStatus(service, id), what).toBe(model[id])
              }
              const listed = yield* listedAmong(service, [nodeId])
              expect(listed.ids, what).toEqual(model[publisherId] === "PublisherStatusActive" ? [nodeId] : [])
            }
          }),
        { numRuns: 20 }
      ),
    120_000
  )
})
