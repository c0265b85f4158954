/**
 * `POST /bulk/nodes/versions`: many `{node_id, version}` pairs (a lock file) answered in one call,
 * each with its version or a per-item status, in the request's order. Real HTTP against a real
 * PostgreSQL; a property test checks random requests against a model of the catalogue.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import type { NodeStatus } from "../../src/Domain/Node.ts"
import { BulkNodeVersionsResponse, maxBulkVersions } from "../../src/Domain/Versions.ts"
import { arbVersionStatus, decodeExact } from "../support/Catalogue.ts"
import { clientFor } from "../support/Client.ts"
import { expectBadRequest, expectError, expectStatus, send } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"
import { forAll } from "../support/Property.ts"

const decodeResponse = decodeExact(BulkNodeVersionsResponse)
type Pair = { readonly node_id: string; readonly version: string }
let runs = 0

const bulk = (service: Running, pairs: ReadonlyArray<Pair>) =>
  Effect.map(send(service, "POST", "/bulk/nodes/versions", { body: { node_versions: pairs } }), (answer) =>
    decodeResponse(expectStatus(answer, 200, "POST /bulk/nodes/versions").body).node_versions)

/** Each result as `status` or `status: version status`, for comparing with the model. */
const outcome = (r: typeof BulkNodeVersionsResponse.Encoded["node_versions"][number]) =>
  r.status === "success" ? `success: ${r.node_version!.status}` : r.status

layer(Service.layer(), { excludeTestServices: true })("POST /bulk/nodes/versions", (it) => {
  it.effect("seeds nodes in every standing and versions in every status", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.upsertPublishers([{ id: "acme" }, { id: "shut", status: "PublisherStatusBanned" }])
      for (const [id, publisher_id, status] of [
        ["tool", "acme", "NodeStatusActive"],
        ["gone", "acme", "NodeStatusDeleted"],
        ["barred", "acme", "NodeStatusBanned"],
        ["shut-node", "shut", "NodeStatusActive"]
      ] as const) yield* service.writes.insertNodes([{ id, publisher_id, status }])
      yield* service.writes.insertVersions([
        { node_id: "tool", version: "1.0.0", status: "NodeVersionStatusActive" },
        { node_id: "tool", version: "1.1.0", status: "NodeVersionStatusPending" },
        { node_id: "tool", version: "1.2.0", status: "NodeVersionStatusFlagged" },
        { node_id: "tool", version: "0.9.0", status: "NodeVersionStatusDeleted" },
        { node_id: "tool", version: "0.8.0", status: "NodeVersionStatusBanned" },
        { node_id: "gone", version: "1.0.0", status: "NodeVersionStatusActive" },
        { node_id: "barred", version: "1.0.0", status: "NodeVersionStatusActive" },
        { node_id: "shut-node", version: "1.0.0", status: "NodeVersionStatusActive" }
      ])
    }))

  it.effect("each pair gets its own result in the request's order; refusals are per item, never the call", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const anonymous = yield* clientFor(service)
      const pairs: ReadonlyArray<Pair> = [
        { node_id: "tool", version: "1.0.0" },
        { node_id: "nobody", version: "1.0.0" },
        { node_id: "tool", version: "9.9.9" },
        { node_id: "tool", version: "0.9.0" },
        { node_id: "tool", version: "0.8.0" },
        { node_id: "gone", version: "1.0.0" },
        { node_id: "barred", version: "1.0.0" },
        { node_id: "shut-node", version: "1.0.0" },
        { node_id: "tool", version: "1.1.0" },
        { node_id: "tool", version: "1.2.0" },
        { node_id: "tool", version: "1.0.0" }
      ]
      const { node_versions } = yield* anonymous.api.bulkVersions.getBulkNodeVersions({ payload: { node_versions: pairs } })
      expect(node_versions.map((r) => r.identifier)).toEqual(pairs)
      expect(node_versions.map((r) => r.status)).toEqual([
        "success",
        "not_found",
        "not_found",
        "not_found",
        "error",
        "not_found",
        "error",
        "error",
        "success",
        "success",
        "success"
      ])
      const first = node_versions[0]!.node_version!
      expect({ node_id: first.node_id, version: first.version, status: first.status })
        .toEqual({ node_id: "tool", version: "1.0.0", status: "NodeVersionStatusActive" })
      expect(node_versions[8]!.node_version!.status).toBe("NodeVersionStatusPending")
      expect(node_versions[4]!.error_message).toBe("Version '0.8.0' of node 'tool' is banned")
      expect(node_versions[6]!.error_message).toBe("Node 'barred' is banned")
      expect(node_versions[7]!.error_message).toBe("The publisher of node 'shut-node' is banned")
      // only errors carry a message; only successes a version
      for (const r of node_versions) {
        expect(r.error_message !== undefined).toBe(r.status === "error")
        expect(r.node_version !== undefined).toBe(r.status === "success")
      }
    }))

  it.effect("a success carries the version exactly as GET /nodes/{nodeId}/versions/{version} answers it", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const [result] = yield* bulk(service, [{ node_id: "tool", version: "1.0.0" }])
      const single = expectStatus(yield* send(service, "GET", "/nodes/tool/versions/1.0.0"), 200, "GET version")
      expect(result!.node_version).toEqual(single.body)
    }))

  it.effect(`an empty list is an empty answer; ${maxBulkVersions} pairs are answered, one more is 400`, () =>
    Effect.gen(function*() {
      const service = yield* Service
      expect(yield* bulk(service, [])).toEqual([])
      const many = Array.from({ length: maxBulkVersions }, (_, i) => ({ node_id: i % 2 === 0 ? "tool" : `n${i}`, version: "1.0.0" }))
      const answered = yield* bulk(service, many)
      expect(answered.map((r) => r.status)).toEqual(many.map((_, i) => (i % 2 === 0 ? "success" : "not_found")))
      const e = expectError(
        yield* send(service, "POST", "/bulk/nodes/versions", { body: { node_versions: [...many, many[0]] } }),
        400,
        "bad_request"
      )
      expect(e.message).toContain(String(maxBulkVersions))
    }))

  it.effect("a malformed body or pair is 400 naming the field", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{}, "node_versions"],
        [{ node_versions: "tool@1.0.0" }, "node_versions"],
        [{ node_versions: [{ node_id: "tool" }] }, "version"],
        [{ node_versions: [{ version: "1.0.0" }] }, "node_id"],
        [{ node_versions: [{ node_id: 7, version: "1.0.0" }] }, "node_id"],
        [{ node_versions: [{ node_id: "tool", version: "v".repeat(201) }] }, "version"],
        [{ node_versions: [{ node_id: "to\u0000ol", version: "1.0.0" }] }, "node_id"]
      ]
      for (const [body, field] of cases) {
        expectBadRequest(yield* send(service, "POST", "/bulk/nodes/versions", { body }), field)
      }
    }))

  it.effect(
    "random requests: every result is the model's, in order",
    () =>
      forAll(
        {
          nodes: fc.array(
            fc.record({
              status: fc.constantFrom<NodeStatus>("NodeStatusActive", "NodeStatusActive", "NodeStatusBanned", "NodeStatusDeleted"),
              bannedPublisher: fc.boolean(),
              versions: fc.uniqueArray(fc.record({ version: fc.constantFrom("1.0.0", "1.1.0", "2.0.0"), status: arbVersionStatus }), {
                selector: (v) => v.version
              })
            }),
            { maxLength: 4 }
          ),
          asked: fc.array(fc.record({ node: fc.integer({ min: 0, max: 4 }), version: fc.constantFrom("1.0.0", "1.1.0", "2.0.0", "9.0.0") }), {
            maxLength: 30
          })
        },
        ({ asked, nodes }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const run = ++runs
            const nodeId = (i: number) => `b${run}-${i}`
            const publisher = (banned: boolean) => `bulk-${run}${banned ? "-banned" : ""}`
            yield* service.writes.upsertPublishers([{ id: publisher(false) }, { id: publisher(true), status: "PublisherStatusBanned" }])
            for (const [i, n] of nodes.entries()) {
              yield* service.writes.insertNodes([{ id: nodeId(i), publisher_id: publisher(n.bannedPublisher), status: n.status }])
            }
            const versions = nodes.flatMap((n, i) => n.versions.map((v) => ({ node_id: nodeId(i), ...v })))
            if (versions.length > 0) yield* service.writes.insertVersions(versions)

            const model = (node: number, version: string): string => {
              const n = nodes[node]
              if (n === undefined || n.status === "NodeStatusDeleted") return "not_found"
              if (n.status === "NodeStatusBanned" || n.bannedPublisher) return "error"
              const v = n.versions.find((x) => x.version === version)
              if (v === undefined || v.status === "NodeVersionStatusDeleted") return "not_found"
              return v.status === "NodeVersionStatusBanned" ? "error" : `success: ${v.status}`
            }
            const results = yield* bulk(service, asked.map((a) => ({ node_id: nodeId(a.node), version: a.version })))
            expect(results.map(outcome)).toEqual(asked.map((a) => model(a.node, a.version)))
            expect(results.map((r) => r.identifier)).toEqual(asked.map((a) => ({ node_id: nodeId(a.node), version: a.version })))
          }),
        { numRuns: 25 }
      ),
    { timeout: 120_000 }
  )
})
