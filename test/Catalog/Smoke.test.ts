import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { NodeList } from "../../src/Domain/Node.ts"
import { get } from "../support/Http.ts"
import { Service } from "../support/Service.ts"

layer(Service.layer(), { excludeTestServices: true })("smoke", (it) => {
  it.effect("serves an empty catalogue and then a seeded one", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const empty = yield* get(service, "/nodes")
      expect(empty.status).toBe(200)
      expect(empty.body).toEqual({ limit: 10, nodes: [], page: 1, total: 0, totalPages: 0 })
      yield* service.writes.upsertPublishers([{ id: "acme", name: "Acme" }])
      yield* service.writes.insertNodes([{ id: "n1", publisher_id: "acme", name: "One" }])
      yield* service.writes.insertVersions([
        { node_id: "n1", version: "1.9.0", status: "NodeVersionStatusActive" },
        { node_id: "n1", version: "1.10.0", status: "NodeVersionStatusActive" },
        { node_id: "n1", version: "2.0.0", status: "NodeVersionStatusPending" }
      ])
      const page = yield* get(service, "/nodes")
      const decoded = Schema.decodeUnknownSync(NodeList)(page.body, { onExcessProperty: "error" })
      expect(decoded.total).toBe(1)
      expect(decoded.nodes[0]?.latest_version?.version).toBe("1.10.0")
    }))
})

describe("nothing", () => {
  it("runs", () => expect(1).toBe(1))
})
