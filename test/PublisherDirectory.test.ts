/**
 * The publisher directory beside the publisher records: id validation, the paginated list,
 * deletion (soft, refused while nodes are left, tokens revoked, no orphans under races) and the
 * permission endpoints, whose answer is the write endpoints' own policy.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as fc from "fast-check"
import { PublisherId, reservedPublisherIds } from "../src/Domain/Publisher.ts"
import { cast, seedActors, tokensFor } from "./support/Actors.ts"
import { bearerClient, clientFor } from "./support/Client.ts"
import { addMember, query, queryOne } from "./support/Db.ts"
import { expectBadRequest, expectError, expectStatus, get, send } from "./support/Http.ts"
import { forAll } from "./support/Property.ts"
import { type Running, Service } from "./support/Service.ts"

const isWellFormed = Schema.is(PublisherId)

/** Ids of the publishers a caller should see listed: not deleted; banned ones for site admins only. */
const listedIds = (service: Running, siteAdmin: boolean) =>
  Effect.map(
    query<{ id: string }>(
      service,
      `SELECT id FROM publishers WHERE deleted_at IS NULL ${siteAdmin ? "" : "AND status = 'PublisherStatusActive'"} ORDER BY id COLLATE "C"`
    ),
    (rows) => rows.map((r) => r.id)
  )

/** Every page of `GET /publishers` at `limit`, until a short page. */
const walk = (service: Running, limit: number, token?: string) =>
  Effect.gen(function*() {
    const ids: Array<string> = []
    for (let page = 1; ; page++) {
      const answer = expectStatus(yield* get(service, `/publishers?page=${page}&limit=${limit}`, { token }), 200, "a page")
      const batch = (answer.body as Array<{ id: string }>).map((p) => p.id)
      ids.push(...batch)
      if (batch.length < limit) return ids
    }
  })

/** A publisher owned by ann, with the cast's other memberships when asked. */
const publisherOfAnn = (service: Running, id: string, status: "PublisherStatusActive" | "PublisherStatusBanned" = "PublisherStatusActive") =>
  Effect.gen(function*() {
    yield* service.writes.upsertPublishers([{ id, name: id, status }])
    yield* addMember(service, id, cast.owner, "owner")
  })

layer(Service.layer(), { excludeTestServices: true })("publisher directory", (it) => {
  const t = tokensFor("owner", "admin", "member", "stranger", "siteAdmin")

  it.effect("the cast", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.upsertPublishers([{ id: "acme", name: "Acme" }])
      yield* seedActors(service, t)
    }))

  // --- GET /publishers/validate -----------------------------------------------------------------

  it.effect("validate: free ids are available; taken, reserved and deleted ones are not", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const anonymous = yield* clientFor(service)
      const check = (username: string) => anonymous.api.publicPublishers.validatePublisher({ query: { username } })
      expect(yield* check("brand-new")).toEqual({ isAvailable: true })
      expect(yield* check("acme")).toEqual({ isAvailable: false })
      expect(yield* check("unclaimed")).toEqual({ isAvailable: false })
      // the static route wins over GET /publishers/{publisherId}, and the word is reserved
      expect(yield* check("validate")).toEqual({ isAvailable: false })
      expectError(yield* send(service, "POST", "/publishers", { token: t.stranger, body: { id: "validate" } }), 409, "publisher_id_reserved")
      yield* publisherOfAnn(service, "gone-soon")
      expectStatus(yield* send(service, "DELETE", "/publishers/gone-soon", { token: t.owner }), 204, "delete")
      expect(yield* check("gone-soon")).toEqual({ isAvailable: false })
    }))

  it.effect("validate: a missing or malformed username is 400 naming it", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectBadRequest(yield* get(service, "/publishers/validate"), "username")
      for (const bad of ["", "A", "Acme", "1abc", "a", "a_b", "x".repeat(65)]) {
        expectBadRequest(yield* get(service, `/publishers/validate?username=${encodeURIComponent(bad)}`), "username")
      }
    }))

  it.effect(
    "validate: 400 exactly for ids creation refuses as malformed, else available unless reserved or taken",
    () =>
      forAll(
        {
          username: fc.oneof(
            fc.string({ unit: fc.constantFrom(..."abz09-_A Zé/%.+"), maxLength: 70 }),
            fc.constantFrom(...reservedPublisherIds, "acme", "unclaimed"),
            fc.stringMatching(/^[a-z][a-z0-9-]{1,63}$/)
          )
        },
        ({ username }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const answer = yield* get(service, `/publishers/validate?username=${encodeURIComponent(username)}`)
            if (!isWellFormed(username)) return expectBadRequest(answer, "username")
            const taken = (yield* queryOne(service, "SELECT 1 FROM publishers WHERE id = $1", [username])) !== undefined
            expect(expectStatus(answer, 200, username).body).toEqual({ isAvailable: !taken && !reservedPublisherIds.has(username) })
          }),
        { numRuns: 60 }
      ),
    60_000
  )

  // --- GET /publishers --------------------------------------------------------------------------

  it.effect("list: by id, without members; banned ones to site admins only; deleted ones to nobody", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* publisherOfAnn(service, "list-banned", "PublisherStatusBanned")
      yield* publisherOfAnn(service, "list-shown")
      const anonymous = yield* clientFor(service)
      const everyone = yield* anonymous.api.publicPublishers.listPublishers({ query: {} })
      expect(everyone.map((p) => p.id)).toEqual(yield* listedIds(service, false))
      expect(everyone.map((p) => p.id)).toContain("list-shown")
      expect(everyone.map((p) => p.id)).not.toContain("list-banned")
      expect(everyone.map((p) => p.id)).not.toContain("gone-soon")
      expect(everyone.every((p) => p.members === undefined)).toBe(true)
      const owner = yield* bearerClient(service, t.owner)
      expect((yield* owner.api.publicPublishers.listPublishers({ query: {} })).map((p) => p.id)).not.toContain("list-banned")
      const site = yield* bearerClient(service, t.siteAdmin)
      const all = yield* site.api.publicPublishers.listPublishers({ query: {} })
      expect(all.map((p) => p.id)).toEqual(yield* listedIds(service, true))
      expect(all.map((p) => p.id)).toContain("list-banned")
    }))

  it.effect("list: bad paging parameters are 400 naming them; a huge limit is served as 500", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const [q, field] of [["page=0", "page"], ["page=x", "page"], ["limit=0", "limit"], ["limit=-3", "limit"]] as const) {
        expectBadRequest(yield* get(service, `/publishers?${q}`), field)
      }
      expectStatus(yield* get(service, "/publishers?limit=100000"), 200, "clamped")
      expect((yield* get(service, "/publishers?page=1000")).body).toEqual([])
    }))

  it.effect(
    "list: walking the pages at any limit gives every listed publisher once, in order",
    () =>
      forAll(
        { extra: fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9]{1,6}$/), { maxLength: 8 }), limit: fc.integer({ min: 1, max: 6 }) },
        ({ extra, limit }) =>
          Effect.gen(function*() {
            const service = yield* Service
            yield* service.writes.upsertPublishers(extra.map((id) => ({ id: `w-${id}` })))
            expect(yield* walk(service, limit)).toEqual(yield* listedIds(service, false))
            expect(yield* walk(service, limit, t.siteAdmin)).toEqual(yield* listedIds(service, true))
          }),
        { numRuns: 12 }
      ),
    120_000
  )

  // --- DELETE /publishers/{publisherId} ---------------------------------------------------------

  it.effect("delete: the owner deletes an empty publisher; it is gone, its tokens stop working, its id stays taken", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const owner = yield* bearerClient(service, t.owner)
      yield* owner.api.publishers.createPublisher({ payload: { id: "shortlived", name: "Short" } })
      const { token } = yield* owner.api.tokens.createToken({
        params: { publisherId: "shortlived" },
        payload: { name: "ci" }
      })
      yield* owner.api.publishers.deletePublisher({ params: { publisherId: "shortlived" } })
      expectError(yield* get(service, "/publishers/shortlived"), 404, "not_found")
      expect((yield* owner.api.publishers.listMyPublishers()).map((p) => p.id)).not.toContain("shortlived")
      expectError(yield* get(service, "/publishers/shortlived/tokens", { token: t.owner }), 404, "not_found")
      const revoked = yield* query(service, "SELECT 1 FROM personal_access_tokens WHERE publisher_id = 'shortlived' AND revoked_at IS NOT NULL")
      expect(revoked).toHaveLength(1)
      const publish = yield* send(service, "POST", "/publishers/shortlived/nodes/late-node/versions", {
        body: { personal_access_token: token, node: { id: "late-node" }, node_version: { version: "1.0.0" } }
      })
      expect(publish.status).toBe(404)
      expect(yield* query(service, "SELECT 1 FROM nodes WHERE id = 'late-node'")).toHaveLength(0)
      expectError(yield* send(service, "POST", "/publishers", { token: t.stranger, body: { id: "shortlived" } }), 409, "publisher_exists")
      expectError(yield* send(service, "DELETE", "/publishers/shortlived", { token: t.owner }), 404, "not_found")
    }))

  it.effect("delete: refused while nodes are left (banned ones too), naming their number; deleted nodes keep their versions", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* publisherOfAnn(service, "busy")
      yield* service.writes.insertNodes([
        { id: "busy-a", publisher_id: "busy" },
        { id: "busy-b", publisher_id: "busy", status: "NodeStatusBanned" }
      ])
      yield* service.writes.insertVersions([{ node_id: "busy-a", version: "1.0.0", status: "NodeVersionStatusActive" }])
      const refused = expectError(yield* send(service, "DELETE", "/publishers/busy", { token: t.owner }), 409, "publisher_has_nodes")
      expect(refused.message).toContain("2 nodes")
      expectStatus(yield* send(service, "DELETE", "/publishers/busy/nodes/busy-a", { token: t.owner }), 204, "node delete")
      expect(expectError(yield* send(service, "DELETE", "/publishers/busy", { token: t.owner }), 409, "publisher_has_nodes").message)
        .toContain("1 node")
      // the banned node is the site admins' to unban, then the owner deletes it
      expectStatus(yield* send(service, "PUT", "/admin/nodes/busy-b", { token: t.siteAdmin, body: { status: "NodeStatusActive" } }), 200, "unban")
      expectStatus(yield* send(service, "DELETE", "/publishers/busy/nodes/busy-b", { token: t.owner }), 204, "node delete")
      expectStatus(yield* send(service, "DELETE", "/publishers/busy", { token: t.owner }), 204, "publisher delete")
      // nothing lost: the deleted nodes and their versions stay, and stay deleted
      expect(yield* query(service, "SELECT id FROM nodes WHERE publisher_id = 'busy' ORDER BY id")).toEqual([{ id: "busy-a" }, { id: "busy-b" }])
      expect(yield* query(service, "SELECT version FROM node_versions WHERE node_id = 'busy-a'")).toEqual([{ version: "1.0.0" }])
      const restore = yield* send(service, "PUT", "/admin/nodes/busy-a", { token: t.siteAdmin, body: { status: "NodeStatusActive" } })
      expectError(restore, 409, "conflict")
      expect(yield* queryOne(service, "SELECT status FROM nodes WHERE id = 'busy-a'")).toEqual({ status: "NodeStatusDeleted" })
    }))

  it.effect("delete: owners and site admins only; the reserved publisher stays", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.upsertPublishers([{ id: "guarded" }])
      for (const [role, userId] of [["owner", cast.owner], ["admin", cast.admin], ["member", cast.member]] as const) {
        yield* addMember(service, "guarded", userId, role)
      }
      for (const token of [t.admin, t.member, t.stranger]) {
        expectError(yield* send(service, "DELETE", "/publishers/guarded", { token }), 403, "forbidden")
      }
      expectError(yield* send(service, "DELETE", "/publishers/guarded"), 401)
      expectError(yield* send(service, "DELETE", "/publishers/nobody-here", { token: t.siteAdmin }), 404, "not_found")
      expectError(yield* send(service, "DELETE", "/publishers/unclaimed", { token: t.siteAdmin }), 409, "conflict")
      const site = yield* bearerClient(service, t.siteAdmin)
      yield* site.api.publishers.deletePublisher({ params: { publisherId: "guarded" } })
      expectError(yield* get(service, "/publishers/guarded"), 404, "not_found")
    }))

  it.effect("delete racing node creation: either the node is created and the delete refused, or the reverse", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (let round = 0; round < 16; round++) {
        const id = `race-${round}`
        yield* publisherOfAnn(service, id)
        const [created, deleted] = yield* Effect.all([
          send(service, "POST", `/publishers/${id}/nodes`, { token: t.owner, body: { id: `${id}-node`, name: "Racer" } }),
          send(service, "DELETE", `/publishers/${id}`, { token: t.owner })
        ], { concurrency: 2 })
        const outcome = `${created.status}/${deleted.status}`
        expect(["201/409", "404/204"], `${id}: ${outcome} ${created.text} ${deleted.text}`).toContain(outcome)
      }
      // no node that is not deleted belongs to a deleted publisher
      expect(yield* query(service, `SELECT n.id FROM nodes n JOIN publishers p ON p.id = n.publisher_id
        WHERE p.deleted_at IS NOT NULL AND n.status <> 'NodeStatusDeleted'`)).toEqual([])
    }), { timeout: 60_000 })

  // --- permissions ------------------------------------------------------------------------------

  it.effect("permissions agree with the writes, for every role", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.insertNodes([{ id: "acme-perm", publisher_id: "acme" }])
      const roles = ["owner", "admin", "member", "stranger", "siteAdmin"] as const
      const table: Array<[string, boolean, boolean, boolean]> = []
      for (const role of roles) {
        const client = yield* bearerClient(service, t[role])
        const onPublisher = yield* client.api.publishers.getPermissionOnPublisher({ params: { publisherId: "acme" } })
        const onNode = yield* client.api.publishers.getPermissionOnPublisherNodes({ params: { publisherId: "acme", nodeId: "acme-perm" } })
        const publisherWrite = yield* send(service, "PUT", "/publishers/acme", { token: t[role], body: { description: `by ${role}` } })
        const nodeWrite = yield* send(service, "PUT", "/publishers/acme/nodes/acme-perm", { token: t[role], body: { description: `by ${role}` } })
        // the answer and the real authorization never disagree
        expect([200, 403]).toContain(publisherWrite.status)
        expect(onPublisher.canEdit, `${role} on the publisher`).toBe(publisherWrite.status === 200)
        expect(onNode.canEdit, `${role} on the node`).toBe(nodeWrite.status === 200)
        table.push([role, onPublisher.canEdit, onNode.canEdit, nodeWrite.status === 200])
      }
      expect(table).toEqual([
        ["owner", true, true, true],
        ["admin", true, true, true],
        ["member", false, false, false],
        ["stranger", false, false, false],
        ["siteAdmin", true, true, true]
      ])
    }))

  it.effect("permissions: unknown publishers, other publishers' and deleted nodes are 404; anonymous callers 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* publisherOfAnn(service, "other-perm")
      yield* service.writes.insertNodes([
        { id: "other-perm-node", publisher_id: "other-perm" },
        { id: "acme-deleted", publisher_id: "acme", status: "NodeStatusDeleted" }
      ])
      expectError(yield* get(service, "/publishers/nobody/permissions", { token: t.owner }), 404, "not_found")
      expectError(yield* get(service, "/publishers/acme/nodes/other-perm-node/permissions", { token: t.owner }), 404, "not_found")
      expectError(yield* get(service, "/publishers/acme/nodes/acme-deleted/permissions", { token: t.owner }), 404, "not_found")
      expectError(yield* get(service, "/publishers/acme/nodes/missing/permissions", { token: t.stranger }), 404, "not_found")
      expectError(yield* get(service, "/publishers/acme/permissions"), 401, "unauthorized")
    }))
})
