/**
 * A publisher's change writes its own row, not its nodes' (issue 12, finding 11), and still
 * reaches every listing and cache at once, and `GET /nodes?timestamp=` (incremental sync).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { bearerClient } from "./support/Client.ts"
import { query } from "./support/Db.ts"
import { cacheOf, eventually } from "./support/Eventually.ts"
import { get } from "./support/Http.ts"
import { type Running, ServicePair } from "./support/Service.ts"

const sleep = (millis: number) => Effect.sleep(`${millis} millis`)

/** Each node's row version (`xmin` changes with every write of the row) and stored `updated_at`. */
const nodeRows = (service: Running, publisherId: string) =>
  Effect.map(
    query<{ id: string; xmin: string; updated_at: string }>(
      service,
      "SELECT id, xmin::text, updated_at::text FROM nodes WHERE publisher_id = $1 ORDER BY id",
      [publisherId]
    ),
    (rows) => rows.map((r) => `${r.id} ${r.xmin} ${r.updated_at}`)
  )

/** The publisher names a listing shows, by node id (a publisher's listing is a bare array). */
const publisherNames = (body: any): Record<string, string> =>
  Object.fromEntries((Array.isArray(body) ? body : body.nodes).map((n: { id: string; publisher: { name: string } }) => [n.id, n.publisher.name]))

/** The node ids of a page of `GET /nodes`. */
const ids = (body: unknown): Array<string> => (body as { nodes: Array<{ id: string }> }).nodes.map((n) => n.id)

const nodeIds = ["writes-a", "writes-b", "writes-c"]
/** Pages of `GET /nodes`, cached by every instance. */
const cached = ["/nodes?sort=id&limit=100", `/nodes?sort=id&node_id=${nodeIds.join("&node_id=")}`]
const listings = [...cached, "/publishers/writes/nodes"]

layer(ServicePair.layer, { excludeTestServices: true })("publisher writes", (it) => {
  it.effect("PUT /publishers/{id} writes no node row, and every listing and cache shows the change at once", () =>
    Effect.gen(function*() {
      const { a, b } = yield* ServicePair
      const token = yield* Effect.promise(() => a.token({ sub: "writer" }))
      const owner = yield* bearerClient(a, token)
      yield* owner.api.publishers.createPublisher({ payload: { id: "writes", name: "Before" } })
      yield* b.writes.insertNodes(nodeIds.map((id) => ({ id, publisher_id: "writes" })))
      yield* b.writes.insertNodes([{ id: "writes-gone", publisher_id: "writes", status: "NodeStatusDeleted" }])
      // both instances hold the pages with the old name
      for (const service of [a, b]) {
        for (const path of cached) {
          expect(yield* cacheOf(service, path), path).toBe("hit")
        }
      }
      const before = yield* nodeRows(a, "writes")

      const updated = yield* owner.api.publishers.updatePublisher({ params: { publisherId: "writes" }, payload: { name: "After" } })
      expect(updated.name).toBe("After")
      expect(yield* nodeRows(a, "writes")).toEqual(before)

      // the writing instance drops its pages after its commit; the other on the notification
      for (const path of listings) {
        expect(Object.values(publisherNames((yield* get(a, path, { token })).body)), path).not.toContain("Before")
        const { value: other } = yield* eventually(get(b, path, { token }), (r) => !Object.values(publisherNames(r.body)).includes("Before"))
        expect(publisherNames(other.body), path).toMatchObject({ "writes-a": "After", "writes-b": "After", "writes-c": "After" })
      }
      for (const id of nodeIds) expect((yield* get(b, `/nodes/${id}`)).body).toMatchObject({ publisher: { name: "After" } })
    }))

  it.effect("GET /nodes?timestamp= counts a publisher's change as one of its nodes", () =>
    Effect.gen(function*() {
      const { a, b } = yield* ServicePair
      const owner = yield* bearerClient(a, yield* Effect.promise(() => a.token({ sub: "writer" })))
      yield* b.writes.insertNodes([{ id: "acme-node", publisher_id: "acme" }])
      yield* sleep(25)
      const t = new Date().toISOString()
      yield* sleep(25)
      const since = (service: Running, at: string) =>
        Effect.map(get(service, `/nodes?sort=id&limit=100&timestamp=${at}`), (r) => ids(r.body))
      expect(yield* since(a, t)).toEqual([])

      yield* owner.api.publishers.updatePublisher({ params: { publisherId: "writes" }, payload: { description: "Renamed after t" } })
      // its listed nodes, not the deleted one, nor another publisher's
      for (const service of [a, b]) expect((yield* eventually(since(service, t), (ids) => ids.length > 0)).value).toEqual(nodeIds)
      yield* sleep(25)
      const later = new Date().toISOString()
      expect(yield* since(a, later)).toEqual([])
    }))

  it.effect("a ban writes only the nodes whose listing changes; the unban brings them back to incremental sync", () =>
    Effect.gen(function*() {
      const { a } = yield* ServicePair
      const site = yield* bearerClient(a, yield* Effect.promise(() => a.token({ sub: "moderator", admin: true })))
      const deleted = () => Effect.map(nodeRows(a, "writes"), (rows) => rows.filter((r) => r.startsWith("writes-gone ")))
      const untouched = yield* deleted()
      const banned = yield* site.api.publishers.updatePublisher({ params: { publisherId: "writes" }, payload: { status: "PublisherStatusBanned" } })
      expect(banned.status).toBe("PublisherStatusBanned")
      expect(ids((yield* get(a, "/nodes?sort=id&limit=100")).body)).not.toContain("writes-a")
      yield* sleep(25)
      const t = new Date().toISOString()
      yield* sleep(25)
      yield* site.api.publishers.updatePublisher({ params: { publisherId: "writes" }, payload: { status: "PublisherStatusActive" } })
      const since = ids((yield* get(a, `/nodes?sort=id&limit=100&timestamp=${t}`)).body)
      expect(since).toEqual(nodeIds)
      expect(yield* deleted()).toEqual(untouched)
    }))
})
