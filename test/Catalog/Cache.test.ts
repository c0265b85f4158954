import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { catalogueChannel } from "../../src/Catalog/PageCache.ts"
import { query } from "../support/Db.ts"
import { cacheOf, eventually } from "../support/Eventually.ts"
import { get } from "../support/Http.ts"
import { ServicePair } from "../support/Service.ts"

const ids = (body: any): Array<string> => body.nodes.map((n: { id: string }) => n.id)

layer(ServicePair.layer, { excludeTestServices: true })("list cache across instances", (it) => {
  it.effect("serves a repeated page from the cache", () =>
    Effect.gen(function*() {
      const { a } = yield* ServicePair
      // the set-up's write notifies `a` a moment later, and the notice drops its pages once more
      // (Eventually.ts): a pair dropped so is read again, as a page not yet asked for
      let attempt = 0
      const { value: [first, second] } = yield* eventually(
        Effect.suspend(() => {
          const page = `/nodes?limit=${5 + attempt++}&sort=id`
          return Effect.all([get(a, page), get(a, page)])
        }),
        ([, again]) => again.headers.get("x-cache") === "hit"
      )
      expect(first.headers.get("x-cache")).toBe("miss")
      expect(second.headers.get("x-cache")).toBe("hit")
      expect(second.body).toEqual(first.body)
      expect(second.headers.get("etag")).toBe(first.headers.get("etag"))
      const bypass = yield* get(a, `/nodes?limit=${4 + attempt}&sort=id&latest=true`)
      expect(bypass.headers.get("x-cache")).toBe("bypass")
    }))

  it.effect("a write through the second instance is seen by the first at once", () =>
    Effect.gen(function*() {
      const { a, b } = yield* ServicePair
      expect(yield* cacheOf(a, "/nodes?sort=id")).toBe("hit")
      yield* b.writes.insertNodes([{ id: "fresh-node", publisher_id: "acme", name: "Fresh" }])
      const { value, millis } = yield* eventually(get(a, "/nodes?sort=id"), (r) => ids(r.body).includes("fresh-node"))
      expect(ids(value.body)).toContain("fresh-node")
      expect(millis).toBeLessThan(1000)

      yield* get(a, "/nodes?sort=id")
      yield* b.writes.updateNode("fresh-node", { status: "NodeStatusBanned" })
      const banned = yield* eventually(get(a, "/nodes?sort=id"), (r) => !ids(r.body).includes("fresh-node"))
      expect(ids(banned.value.body)).not.toContain("fresh-node")
    }))

  it.effect("a lost LISTEN connection never leaves stale pages behind", () =>
    Effect.gen(function*() {
      const { a, b } = yield* ServicePair
      yield* get(a, "/nodes?sort=id")
      // cut every catalogue listener's connection (its last statement the LISTEN; the job
      // runner's own LISTENs are left alone): changes made now could go unnoticed
      const cut = yield* query(
        a,
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN %${catalogueChannel}%' AND datname = current_database()`
      )
      expect(cut.length).toBe(2)
      yield* b.writes.insertNodes([{ id: "during-outage", publisher_id: "acme" }])
      const during = yield* get(a, "/nodes?sort=id")
      expect(ids(during.body)).toContain("during-outage")
      // the listener comes back and caching resumes
      const resumed = yield* eventually(
        Effect.andThen(get(a, "/nodes?sort=id"), get(a, "/nodes?sort=id")),
        (r) => r.headers.get("x-cache") === "hit"
      )
      expect(resumed.value.headers.get("x-cache")).toBe("hit")
    }))

  it.effect("answers If-None-Match with 304, cached or not", () =>
    Effect.gen(function*() {
      const { a } = yield* ServicePair
      for (const query of ["/nodes?limit=3", "/nodes?limit=3&latest=true"]) {
        const first = yield* get(a, query)
        const etag = first.headers.get("etag")!
        expect(etag).toMatch(/^"[\w-]+"$/)
        const again = yield* get(a, query, { headers: { "if-none-match": etag } })
        expect(again.status).toBe(304)
        expect(again.body).toBeUndefined()
        const weak = yield* get(a, query, { headers: { "if-none-match": `"other", W/${etag}` } })
        expect(weak.status).toBe(304)
        const stale = yield* get(a, query, { headers: { "if-none-match": `"stale"` } })
        expect(stale.status).toBe(200)
      }
    }))
})

