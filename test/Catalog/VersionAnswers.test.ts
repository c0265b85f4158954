/**
 * `GET /nodes/{nodeId}/versions/{versionId}` served from memory (src/Catalog/VersionCache.ts):
 * the kept answer is byte for byte what HttpApi encodes for the same version (here, the same
 * record in `GET /nodes/{nodeId}/versions`, which HttpApi still encodes), on the first read and
 * on later ones, by string and by id; and a write seen by this instance changes the next read.
 * (Every instance seeing a write: test/SeveralInstances.test.ts.)
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { versionId } from "../support/Catalogue.ts"
import { expectStatus, getText } from "../support/Http.ts"
import { Service } from "../support/Service.ts"

layer(Service.layer(), { excludeTestServices: true })("version answers kept in memory", (it) => {
  it.effect("are the bytes HttpApi encodes, every time, and follow writes", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.upsertPublishers([{ id: "acme" }])
      yield* service.writes.insertNodes([{ id: "tool", publisher_id: "acme" }])
      yield* service.writes.insertVersions([{
        node_id: "tool",
        version: "1.2.0",
        status: "NodeVersionStatusActive",
        status_reason: "passed checks",
        changelog: "Adds a slider — and «quotes» \"too\"",
        dependencies: ["torch>=2"],
        supported_os: ["Linux"],
        supported_host_version: ">=1.0.0 <2.0.0",
        tags: ["image"],
        created_at: new Date("2024-06-07T08:09:10.011Z")
      }])
      const id = yield* versionId(service, "tool", "1.2.0")
      const encodedByHttpApi = Effect.map(
        getText(service, "/nodes/tool/versions?statuses=NodeVersionStatusActive&statuses=NodeVersionStatusFlagged"),
        (r) => JSON.stringify((JSON.parse(expectStatus(r, 200, "list").text) as ReadonlyArray<{ version: string }>).find((v) => v.version === "1.2.0"))
      )
      const expected = yield* encodedByHttpApi
      for (const path of ["/nodes/tool/versions/1.2.0", "/nodes/tool/versions/1.2.0", `/nodes/tool/versions/${id}`, `/nodes/tool/versions/${id}`]) {
        const answer = expectStatus(yield* getText(service, path), 200, path)
        expect(answer.text).toBe(expected)
        expect(answer.headers.get("content-type")).toBe("application/json")
        expect(answer.headers.get("content-length")).toBe(String(Buffer.byteLength(expected)))
      }

      yield* service.writes.updateNode("tool", { status: "NodeStatusBanned" })
      expect((yield* getText(service, "/nodes/tool/versions/1.2.0")).status).toBe(403)
      expect((yield* getText(service, "/nodes/tool/versions/1.2.0")).status).toBe(403)
      yield* service.writes.updateNode("tool", { status: "NodeStatusActive" })
      yield* service.writes.setVersionStatus("tool", "1.2.0", "NodeVersionStatusFlagged")
      const flagged = expectStatus(yield* getText(service, "/nodes/tool/versions/1.2.0"), 200, "flagged")
      expect(JSON.parse(flagged.text).status).toBe("NodeVersionStatusFlagged")
      expect(flagged.text).toBe(yield* encodedByHttpApi)
    }))
})
