/**
 * The unfiltered listing answers `total` from a trigger-maintained count; it must equal a real
 * count after every kind of write, bulk ones and TRUNCATE included. Concurrent misses of one
 * page share one query and all get its answer.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { clientFor } from "../support/Client.ts"
import { query } from "../support/Db.ts"
import { cacheOf } from "../support/Eventually.ts"
import { get } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"

const totals = (service: Running) =>
  Effect.gen(function*() {
    const listed = yield* query<{ n: number }>(service, "SELECT count(*)::int AS n FROM nodes WHERE listed")
    const client = yield* clientFor(service)
    const page = yield* client.api.catalog.listAllNodes({ query: { limit: 1, latest: true } })
    return { served: page.total, counted: listed[0]!.n }
  })

layer(Service.layer(), { excludeTestServices: true })("total of the unfiltered listing", (it) => {
  it.effect("follows bulk inserts, status changes, publisher bans, deletes and TRUNCATE", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const check = Effect.gen(function*() {
        const { counted, served } = yield* totals(service)
        expect(served).toBe(counted)
        return served
      })
      yield* service.writes.upsertPublishers([{ id: "p1" }, { id: "p2" }])
      yield* service.writes.insertNodes(
        Array.from({ length: 2500 }, (_, i) => ({ id: `n${i}`, publisher_id: i % 2 === 0 ? "p1" : "p2" }))
      )
      expect(yield* check).toBe(2500)
      yield* service.writes.updateNode("n1", { status: "NodeStatusBanned" })
      expect(yield* check).toBe(2499)
      yield* service.writes.setPublisherStatus("p1", "PublisherStatusBanned")
      expect(yield* check).toBe(1249)
      yield* service.writes.setPublisherStatus("p1", "PublisherStatusActive")
      expect(yield* check).toBe(2499)
      yield* query(service, "DELETE FROM nodes WHERE id IN ('n2', 'n3', 'n5')")
      expect(yield* check).toBe(2496)
      yield* query(service, "TRUNCATE nodes CASCADE")
      expect(yield* check).toBe(0)
      yield* service.writes.insertNodes([{ id: "again", publisher_id: "p2" }])
      expect(yield* check).toBe(1)
    }))

  it.effect("concurrent misses of one page all get the same answer, and the page is cached", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const path = "/nodes?limit=7&sort=id;desc"
      const answers = yield* Effect.all(Array.from({ length: 24 }, () => get(service, path)), { concurrency: "unbounded" })
      expect(new Set(answers.map((a) => a.status))).toEqual(new Set([200]))
      expect(new Set(answers.map((a) => a.headers.get("etag"))).size).toBe(1)
      // the first answers wait for the shared query, later ones already find the page cached
      expect(answers.some((a) => a.headers.get("x-cache") === "miss")).toBe(true)
      expect(answers.every((a) => ["miss", "hit"].includes(a.headers.get("x-cache")!))).toBe(true)
      expect(yield* cacheOf(service, path)).toBe("hit")
    }))
})
