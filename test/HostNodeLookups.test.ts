/**
 * Host-node lookups across nodes: `GET /host-nodes` (paginated, filtered), `GET
 * /host-nodes/{hostNodeName}/node` (the node that provides it) and `GET
 * /nodes/{nodeId}/versions/{version}/host-nodes/{hostNodeName}` (one record). Public reads: banned
 * nodes and publishers, deleted nodes and versions that are not active are never served. Real
 * HTTP against a real PostgreSQL; a property test checks the provider's choice against a model.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import type { NodeInput } from "../scripts/lib/Seeder.ts"
import { HostNode, HostNodePage } from "../src/Domain/HostNode.ts"
import type { NodeStatus, NodeVersionStatus } from "../src/Domain/Node.ts"
import { compareBytes, decodeExact, decodeNodes, type Query, queryString } from "./support/Catalogue.ts"
import { clientFor } from "./support/Client.ts"
import { query } from "./support/Db.ts"
import { expectBadRequest, expectError, expectStatus, get } from "./support/Http.ts"
import { forAll } from "./support/Property.ts"
import { type Running, Service } from "./support/Service.ts"

const decodePage = decodeExact(HostNodePage)
const decodeRecord = decodeExact(HostNode)
let runs = 0

/** Records straight into the table: the lookups read them whatever wrote them (deleted versions too). */
const record = (service: Running, nodeId: string, version: string, names: ReadonlyArray<string>, policy = "HostNodePolicyActive") =>
  query(
    service,
    `INSERT INTO host_nodes (version_id, host_node_name, policy, category)
     SELECT v.id, name, $3, 'cat-' || name FROM node_versions v, unnest($4::text[]) AS name WHERE v.node_id = $1 AND v.version = $2`,
    [nodeId, version, policy, names]
  )

const listPage = (service: Running, q: Query) =>
  Effect.map(get(service, `/host-nodes${queryString(q)}`), (answer) =>
    decodePage(expectStatus(answer, 200, `/host-nodes${queryString(q)}`).body))

const entries = (page: typeof HostNodePage.Encoded) => page.host_nodes.map((r) => `${r.host_node_name} ${r.node_id}@${r.node_version}`)

/** The id of the node `GET /host-nodes/{name}/node` answers, or its status when it is not 200. */
const providerOf = (service: Running, name: string) =>
  Effect.map(get(service, `/host-nodes/${encodeURIComponent(name)}/node`), (answer) => {
    if (answer.status !== 200) return expectError(answer, 404, "not_found") && 404
    return decodeNodes([answer.body])[0]!.id
  })

const nodes: ReadonlyArray<NodeInput> = [
  { id: "sampler-pack", publisher_id: "acme", downloads: 10 },
  { id: "rival", publisher_id: "acme", downloads: 100 },
  { id: "ranked", publisher_id: "acme", downloads: 0, search_ranking: 1 },
  { id: "preempter", publisher_id: "acme", downloads: 0, preempted_host_node_names: ["Shared"] },
  { id: "moved-on", publisher_id: "acme" },
  { id: "barred", publisher_id: "acme", status: "NodeStatusBanned" },
  { id: "gone", publisher_id: "acme", status: "NodeStatusDeleted" },
  { id: "shut-node", publisher_id: "shut" }
]

layer(Service.layer(), { excludeTestServices: true })("host-node lookups", (it) => {
  it.effect("seeds nodes in every standing, versions in every status and their records", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.upsertPublishers([{ id: "acme" }, { id: "shut", status: "PublisherStatusBanned" }])
      for (const n of nodes) yield* service.writes.insertNodes([n])
      const active: NodeVersionStatus = "NodeVersionStatusActive"
      yield* service.writes.insertVersions([
        { node_id: "sampler-pack", version: "1.0.0", status: active },
        { node_id: "sampler-pack", version: "2.0.0", status: active },
        { node_id: "sampler-pack", version: "3.0.0-beta.1", status: "NodeVersionStatusPending" },
        { node_id: "sampler-pack", version: "0.5.0", status: "NodeVersionStatusDeleted" },
        { node_id: "sampler-pack", version: "0.6.0", status: "NodeVersionStatusBanned" },
        { node_id: "rival", version: "1.0.0", status: active },
        { node_id: "ranked", version: "1.0.0", status: active },
        { node_id: "preempter", version: "1.0.0", status: active },
        { node_id: "moved-on", version: "1.0.0", status: active },
        { node_id: "moved-on", version: "2.0.0", status: active },
        { node_id: "barred", version: "1.0.0", status: active },
        { node_id: "gone", version: "1.0.0", status: active },
        { node_id: "shut-node", version: "1.0.0", status: active }
      ])
      yield* record(service, "sampler-pack", "1.0.0", ["KSamplerX", "Loader (Advanced)"])
      yield* record(service, "sampler-pack", "2.0.0", ["KSamplerX", "Loader (Advanced)", "NewOnly"])
      yield* record(service, "sampler-pack", "3.0.0-beta.1", ["PendingOnly"])
      yield* record(service, "sampler-pack", "0.5.0", ["DeletedOnly"])
      yield* record(service, "sampler-pack", "0.6.0", ["BannedVersionOnly"])
      yield* record(service, "sampler-pack", "2.0.0", ["BannedPolicy"], "HostNodePolicyBanned")
      yield* record(service, "sampler-pack", "2.0.0", ["LocalOnly"], "HostNodePolicyLocalOnly")
      yield* record(service, "rival", "1.0.0", ["KSamplerX"])
      yield* record(service, "ranked", "1.0.0", ["Shared", "RankedOnly"])
      yield* record(service, "preempter", "1.0.0", ["Shared"])
      yield* record(service, "moved-on", "1.0.0", ["OldName"])
      yield* record(service, "barred", "1.0.0", ["BarredOnly"])
      yield* record(service, "gone", "1.0.0", ["GoneOnly"])
      yield* record(service, "shut-node", "1.0.0", ["ShutOnly"])
    }))

  // --- GET /host-nodes/{hostNodeName}/node -------------------------------------------------------

  it.effect("the provider: the node whose latest active version has the host-node (typed client)", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const anonymous = yield* clientFor(service)
      const node = yield* anonymous.api.publicHostNodes.getNodeByHostNodeName({ params: { hostNodeName: "NewOnly" } })
      expect(node.id).toBe("sampler-pack")
      expect(node.latest_version?.version).toBe("2.0.0")
      expect(node.publisher.id).toBe("acme")
      // a name with spaces and brackets, sent percent-encoded
      expect(yield* providerOf(service, "Loader (Advanced)")).toBe("sampler-pack")
      expect(yield* providerOf(service, "LocalOnly")).toBe("sampler-pack")
    }))

  it.effect("several providers: a preempting node first, then the lowest search_ranking, then the most downloads", () =>
    Effect.gen(function*() {
      const service = yield* Service
      // rival (100 downloads) over sampler-pack (10)
      expect(yield* providerOf(service, "KSamplerX")).toBe("rival")
      // preempter lists the name in preempted_host_node_names: it wins over ranked's search_ranking 1
      expect(yield* providerOf(service, "Shared")).toBe("preempter")
    }))

  it.effect("no provider is 404: an older version's name, a version not active, a banned policy, a node not listed", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (
        const name of [
          "OldName",
          "PendingOnly",
          "DeletedOnly",
          "BannedVersionOnly",
          "BannedPolicy",
          "BarredOnly",
          "GoneOnly",
          "ShutOnly",
          "Nobody",
          "ksamplerx"
        ]
      ) expect(yield* providerOf(service, name), name).toBe(404)
    }))

  // --- GET /nodes/{nodeId}/versions/{version}/host-nodes/{hostNodeName} ----------------------------

  it.effect("one record of an active version (typed client); absent fields omitted", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const anonymous = yield* clientFor(service)
      const found = yield* anonymous.api.publicHostNodes.getHostNode({
        params: { nodeId: "sampler-pack", version: "2.0.0", hostNodeName: "Loader (Advanced)" }
      })
      expect(found.host_node_name).toBe("Loader (Advanced)")
      const raw = expectStatus(
        yield* get(service, `/nodes/sampler-pack/versions/2.0.0/host-nodes/${encodeURIComponent("Loader (Advanced)")}`),
        200,
        "GET record"
      )
      expect(decodeRecord(raw.body)).toEqual({
        host_node_name: "Loader (Advanced)",
        category: "cat-Loader (Advanced)",
        policy: "HostNodePolicyActive"
      })
    }))

  it.effect("the record is 404 when absent or its version is not active, 403 node_banned for a banned node or publisher", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const path = (nodeId: string, version: string, name: string) => `/nodes/${nodeId}/versions/${version}/host-nodes/${name}`
      for (
        const [nodeId, version, name] of [
          ["sampler-pack", "2.0.0", "Nobody"],
          ["sampler-pack", "1.0.0", "NewOnly"],
          ["sampler-pack", "3.0.0-beta.1", "PendingOnly"],
          ["sampler-pack", "0.5.0", "DeletedOnly"],
          ["sampler-pack", "0.6.0", "BannedVersionOnly"],
          ["sampler-pack", "9.9.9", "KSamplerX"],
          ["gone", "1.0.0", "GoneOnly"],
          ["nobody", "1.0.0", "KSamplerX"]
        ] as const
      ) expectError(yield* get(service, path(nodeId, version, name)), 404, "not_found")
      expectError(yield* get(service, path("barred", "1.0.0", "BarredOnly")), 403, "node_banned")
      expectError(yield* get(service, path("shut-node", "1.0.0", "ShutOnly")), 403, "node_banned")
    }))

  // --- GET /host-nodes ---------------------------------------------------------------------------

  it.effect("the listing: public records only, by name (bytes), node, newest version; with each node and version", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const anonymous = yield* clientFor(service)
      const page = yield* anonymous.api.publicHostNodes.listAllHostNodes({ query: {} })
      const expected = [
        ["KSamplerX", "rival", "1.0.0"],
        ["KSamplerX", "sampler-pack", "2.0.0"],
        ["KSamplerX", "sampler-pack", "1.0.0"],
        ["Loader (Advanced)", "sampler-pack", "2.0.0"],
        ["Loader (Advanced)", "sampler-pack", "1.0.0"],
        ["BannedPolicy", "sampler-pack", "2.0.0"],
        ["LocalOnly", "sampler-pack", "2.0.0"],
        ["NewOnly", "sampler-pack", "2.0.0"],
        ["OldName", "moved-on", "1.0.0"],
        ["RankedOnly", "ranked", "1.0.0"],
        ["Shared", "preempter", "1.0.0"],
        ["Shared", "ranked", "1.0.0"]
      ].sort((a, b) => compareBytes(a[0]!, b[0]!) || compareBytes(a[1]!, b[1]!))
        .map(([name, node, version]) => `${name} ${node}@${version}`)
      expect({ total: page.total, page: page.page, pageSize: page.pageSize, totalPages: page.totalPages })
        .toEqual({ total: expected.length, page: 1, pageSize: 100, totalPages: 1 })
      expect(page.host_nodes.map((r) => `${r.host_node_name} ${r.node_id}@${r.node_version}`)).toEqual(expected)

      // pages of 5 cover the same records in the same order
      const walked: Array<string> = []
      for (let p = 1; p <= 4; p++) {
        const served = yield* listPage(service, { page: p, pageSize: 5 })
        expect(served.totalPages).toBe(3)
        walked.push(...entries(served))
      }
      expect(walked).toEqual(expected)
    }))

  it.effect("the listing's filters: node_id, node_version, host_node_name (exact), together", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const cases: ReadonlyArray<readonly [Query, ReadonlyArray<string>]> = [
        [{ node_id: "rival" }, ["KSamplerX rival@1.0.0"]],
        [{ node_id: "sampler-pack", node_version: "1.0.0" }, ["KSamplerX sampler-pack@1.0.0", "Loader (Advanced) sampler-pack@1.0.0"]],
        [{ host_node_name: "KSamplerX" }, ["KSamplerX rival@1.0.0", "KSamplerX sampler-pack@2.0.0", "KSamplerX sampler-pack@1.0.0"]],
        [{ host_node_name: "ksamplerx" }, []],
        [{ host_node_name: "KSamplerX", node_version: "1.0.0" }, ["KSamplerX rival@1.0.0", "KSamplerX sampler-pack@1.0.0"]],
        [{ node_id: "sampler-pack", node_version: "3.0.0-beta.1" }, []],
        [{ node_id: "barred" }, []],
        [{ node_id: "shut-node" }, []],
        [{ node_id: "gone" }, []]
      ]
      for (const [q, expected] of cases) {
        const page = yield* listPage(service, q)
        expect(entries(page), JSON.stringify(q)).toEqual(expected)
        expect(page.total).toBe(expected.length)
      }
    }))

  it.effect("the listing's pageSize above 500 is served as 500; bad parameters are 400 naming them", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expect((yield* listPage(service, { pageSize: 100_000 })).pageSize).toBe(500)
      for (
        const [q, name] of [
          [{ page: "0" }, "page"],
          [{ pageSize: "-1" }, "pageSize"],
          [{ pageSize: "ten" }, "pageSize"],
          [{ node_id: "x".repeat(201) }, "node_id"],
          [{ host_node_name: "a\u0000b" }, "host_node_name"]
        ] as const
      ) expectBadRequest(yield* get(service, `/host-nodes${queryString(q)}`), name)
    }))

  it.effect(
    "the provider is the model's choice among random nodes",
    () =>
      forAll(
        {
          candidates: fc.array(
            fc.record({
              status: fc.constantFrom<NodeStatus>("NodeStatusActive", "NodeStatusActive", "NodeStatusActive", "NodeStatusBanned", "NodeStatusDeleted"),
              downloads: fc.constantFrom(0, 5, 50),
              search_ranking: fc.option(fc.constantFrom(1, 2), { nil: undefined }),
              preempts: fc.boolean(),
              // which of its two versions provide the name, and whether the newer one is active
              inOld: fc.boolean(),
              inNew: fc.boolean(),
              newActive: fc.boolean()
            }),
            { maxLength: 5 }
          )
        },
        ({ candidates }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const run = ++runs
            const name = `Prop${run}`
            const id = (i: number) => `c${run}-${i}`
            for (const [i, c] of candidates.entries()) {
              yield* service.writes.insertNodes([{
                id: id(i),
                publisher_id: "acme",
                status: c.status,
                downloads: c.downloads,
                ...(c.search_ranking === undefined ? {} : { search_ranking: c.search_ranking }),
                ...(c.preempts ? { preempted_host_node_names: [name] } : {})
              }])
              yield* service.writes.insertVersions([
                { node_id: id(i), version: "1.0.0", status: "NodeVersionStatusActive" },
                { node_id: id(i), version: "2.0.0", status: c.newActive ? "NodeVersionStatusActive" : "NodeVersionStatusFlagged" }
              ])
              if (c.inOld) yield* record(service, id(i), "1.0.0", [name])
              if (c.inNew) yield* record(service, id(i), "2.0.0", [name])
            }
            const providers = candidates
              .map((c, i) => ({ ...c, id: id(i) }))
              .filter((c) => c.status === "NodeStatusActive" && (c.newActive ? c.inNew : c.inOld))
              .sort((a, b) =>
                Number(b.preempts) - Number(a.preempts) ||
                (a.search_ranking ?? Infinity) - (b.search_ranking ?? Infinity) ||
                b.downloads - a.downloads ||
                compareBytes(a.id, b.id)
              )
            expect(yield* providerOf(service, name)).toBe(providers[0]?.id ?? 404)
          }),
        { numRuns: 30 }
      ),
    120_000
  )
})
