/**
 * `GET /versions`, the moderation queue across nodes: site admins see every status of every node;
 * everyone else (anonymous callers too) sees the active versions of listed nodes, whatever they
 * ask. Newest first, then id. Real HTTP against a real PostgreSQL; a property test walks every
 * page of random catalogues against a model.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import type { NodeInput, VersionInput } from "../../scripts/lib/Seeder.ts"
import type { NodeStatus, NodeVersionStatus } from "../../src/Domain/Node.ts"
import type { PublisherStatus } from "../../src/Domain/Publisher.ts"
import { NodeVersionPage } from "../../src/Domain/Versions.ts"
import { arbVersionStatus, decodeExact, type Query, queryString } from "../support/Catalogue.ts"
import { clientFor } from "../support/Client.ts"
import { query } from "../support/Db.ts"
import { expectBadRequest, expectError, expectStatus, get } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"
import { forAll } from "../support/Property.ts"

const decodePage = decodeExact(NodeVersionPage)
type WirePage = typeof NodeVersionPage.Encoded

const allStatuses: ReadonlyArray<NodeVersionStatus> = [
  "NodeVersionStatusActive",
  "NodeVersionStatusDeleted",
  "NodeVersionStatusBanned",
  "NodeVersionStatusPending",
  "NodeVersionStatusFlagged"
]

/** A 200 page of the queue, decoded exactly. */
const getQueue = (service: Running, q: Query, token?: string) =>
  Effect.map(get(service, `/versions${queryString(q)}`, { token }), (answer) =>
    decodePage(expectStatus(answer, 200, `/versions${queryString(q)}`).body))

const pairs = (page: WirePage) => page.versions.map((v) => `${v.node_id}@${v.version}`)

// --- the model -----------------------------------------------------------------------------------

interface ModelVersion {
  readonly id: string
  readonly pair: string
  readonly node_id: string
  readonly status: NodeVersionStatus
  readonly status_reason: string | undefined
  readonly created: number
}

/** Every version the file wrote, with where its node and publisher stand. */
class Model {
  readonly versions: Array<ModelVersion> = []
  readonly nodeStatus = new Map<string, NodeStatus>()
  readonly nodePublisher = new Map<string, string>()
  readonly publisherStatus = new Map<string, PublisherStatus>()

  listed(nodeId: string) {
    return this.nodeStatus.get(nodeId) === "NodeStatusActive" &&
      this.publisherStatus.get(this.nodePublisher.get(nodeId)!) === "PublisherStatusActive"
  }

  /** What the queue answers, in order. */
  expected(q: { siteAdmin: boolean; statuses?: ReadonlyArray<NodeVersionStatus>; nodeId?: string; reason?: string }) {
    return this.versions
      .filter((v) => q.statuses === undefined || q.statuses.includes(v.status))
      .filter((v) => q.siteAdmin || (v.status === "NodeVersionStatusActive" && this.listed(v.node_id)))
      .filter((v) => q.nodeId === undefined || v.node_id === q.nodeId)
      .filter((v) => q.reason === undefined || (v.status_reason ?? "").toLowerCase().includes(q.reason.toLowerCase()))
      // newest first, then the id (uuids compare as their lower-case text)
      .sort((a, b) => b.created - a.created || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  }
}

const model = new Model()

/** Writes publishers, nodes and versions, and records them (with their stored ids) in the model. */
const seed = (
  service: Running,
  data: {
    publishers: ReadonlyArray<{ id: string; status?: PublisherStatus }>
    nodes: ReadonlyArray<NodeInput>
    versions: ReadonlyArray<VersionInput & { created_at: Date }>
  }
) =>
  Effect.gen(function*() {
    yield* service.writes.upsertPublishers(data.publishers)
    for (const n of data.nodes) yield* service.writes.insertNodes([n])
    if (data.versions.length > 0) yield* service.writes.insertVersions(data.versions)
    for (const p of data.publishers) model.publisherStatus.set(p.id, p.status ?? "PublisherStatusActive")
    for (const n of data.nodes) {
      model.nodeStatus.set(n.id, n.status ?? "NodeStatusActive")
      model.nodePublisher.set(n.id, n.publisher_id)
    }
    const ids = yield* query<{ id: string; pair: string }>(
      service,
      `SELECT id::text, node_id || '@' || version AS pair FROM node_versions WHERE node_id = ANY($1)`,
      [data.nodes.map((n) => n.id)]
    )
    const idOf = new Map(ids.map((r) => [r.pair, r.id]))
    for (const v of data.versions) {
      const pair = `${v.node_id}@${v.version}`
      model.versions.push({
        id: idOf.get(pair)!,
        pair,
        node_id: v.node_id,
        status: v.status ?? "NodeVersionStatusPending",
        status_reason: v.status_reason,
        created: v.created_at.getTime()
      })
    }
  })

const at = (minute: number) => new Date(Date.UTC(2025, 0, 1, 0, minute))

// --- the fixed catalogue -------------------------------------------------------------------------

let adminToken = ""
let runs = 0
let strangerToken = ""

layer(Service.layer(), { excludeTestServices: true })("GET /versions", (it) => {
  it.effect("seeds a catalogue with every status, a banned node, a deleted one and a banned publisher", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* seed(service, {
        publishers: [{ id: "acme" }, { id: "shut", status: "PublisherStatusBanned" }],
        nodes: [
          { id: "alpha", publisher_id: "acme" },
          { id: "beta", publisher_id: "acme" },
          { id: "gone", publisher_id: "acme", status: "NodeStatusDeleted" },
          { id: "barred", publisher_id: "acme", status: "NodeStatusBanned" },
          { id: "shut-node", publisher_id: "shut" }
        ],
        versions: [
          { node_id: "alpha", version: "0.9.0", status: "NodeVersionStatusDeleted", created_at: at(0) },
          { node_id: "alpha", version: "1.0.0", status: "NodeVersionStatusActive", status_reason: "Checks passed", created_at: at(1) },
          { node_id: "alpha", version: "1.1.0", status: "NodeVersionStatusPending", created_at: at(2) },
          {
            node_id: "alpha",
            version: "1.2.0",
            status: "NodeVersionStatusFlagged",
            status_reason: "Suspicious EVAL() call",
            created_at: at(3)
          },
          { node_id: "beta", version: "2.0.0", status: "NodeVersionStatusActive", created_at: at(4) },
          { node_id: "beta", version: "2.2.0", status: "NodeVersionStatusActive", created_at: at(4) },
          { node_id: "beta", version: "2.1.0", status: "NodeVersionStatusBanned", status_reason: "malware", created_at: at(5) },
          { node_id: "gone", version: "1.0.0", status: "NodeVersionStatusActive", created_at: at(6) },
          { node_id: "barred", version: "1.0.0", status: "NodeVersionStatusActive", created_at: at(7) },
          { node_id: "shut-node", version: "1.0.0", status: "NodeVersionStatusActive", created_at: at(8) }
        ]
      })
      adminToken = yield* Effect.promise(() => service.token({ sub: "root", admin: true }))
      strangerToken = yield* Effect.promise(() => service.token({ sub: "stan" }))
    }))

  it.effect("a site admin sees every version of every node, newest first (typed client)", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const admin = yield* clientFor(service, { bearer: adminToken })
      const page = yield* admin.api.versionQueue.listAllNodeVersions({ query: { pageSize: 100 } })
      expect({ page: page.page, pageSize: page.pageSize, total: page.total, totalPages: page.totalPages })
        .toEqual({ page: 1, pageSize: 100, total: 10, totalPages: 1 })
      expect(page.versions.map((v) => `${v.node_id}@${v.version}`)).toEqual(model.expected({ siteAdmin: true }).map((v) => v.pair))
      expect(page.versions.slice(0, 3).map((v) => `${v.node_id}@${v.version}`)).toEqual(["shut-node@1.0.0", "barred@1.0.0", "gone@1.0.0"])
      // status_reason only when asked for
      expect(page.versions.every((v) => v.status_reason === undefined)).toBe(true)
    }))

  it.effect("anonymous callers and plain users see active versions of listed nodes only, whatever they ask", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const anonymous = yield* clientFor(service)
      const expected = model.expected({ siteAdmin: false }).map((v) => v.pair)
      expect(expected.slice(-1)).toEqual(["alpha@1.0.0"])
      expect(expected).toHaveLength(3)
      const page = yield* anonymous.api.versionQueue.listAllNodeVersions({ query: {} })
      expect(page.versions.map((v) => `${v.node_id}@${v.version}`)).toEqual(expected)
      expect(page.total).toBe(3)
      for (const token of [undefined, strangerToken]) {
        expect(pairs(yield* getQueue(service, {}, token))).toEqual(expected)
        // asking for other statuses shows nothing more
        const asked = yield* getQueue(service, { statuses: ["NodeVersionStatusPending", "NodeVersionStatusFlagged"] }, token)
        expect(asked.total).toBe(0)
        expect(asked.versions).toEqual([])
        expect(pairs(yield* getQueue(service, { statuses: [...allStatuses] }, token))).toEqual(expected)
        // a banned or deleted node's active versions stay hidden, even by name
        for (const nodeId of ["barred", "gone", "shut-node"]) expect((yield* getQueue(service, { nodeId }, token)).total).toBe(0)
      }
    }))

  it.effect("statuses (repeated), nodeId and status_reason (any case, as text) narrow the site admin's queue", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const cases: ReadonlyArray<readonly [Query, Parameters<Model["expected"]>[0]]> = [
        [{ statuses: ["NodeVersionStatusPending", "NodeVersionStatusFlagged"] }, {
          siteAdmin: true,
          statuses: ["NodeVersionStatusPending", "NodeVersionStatusFlagged"]
        }],
        [{ statuses: "NodeVersionStatusBanned" }, { siteAdmin: true, statuses: ["NodeVersionStatusBanned"] }],
        [{ nodeId: "alpha" }, { siteAdmin: true, nodeId: "alpha" }],
        [{ nodeId: "nobody" }, { siteAdmin: true, nodeId: "nobody" }],
        [{ status_reason: "eval()" }, { siteAdmin: true, reason: "eval()" }],
        [{ status_reason: "%" }, { siteAdmin: true, reason: "%" }],
        [{ status_reason: "_" }, { siteAdmin: true, reason: "_" }],
        [{ status_reason: "CHECKS", nodeId: "alpha", statuses: "NodeVersionStatusActive" }, {
          siteAdmin: true,
          reason: "CHECKS",
          nodeId: "alpha",
          statuses: ["NodeVersionStatusActive"]
        }]
      ]
      for (const [q, m] of cases) {
        const page = yield* getQueue(service, { ...q, pageSize: 100 }, adminToken)
        expect(pairs(page), JSON.stringify(q)).toEqual(model.expected(m).map((v) => v.pair))
        expect(page.total).toBe(model.expected(m).length)
      }
      expect(pairs(yield* getQueue(service, { status_reason: "eval()" }, adminToken))).toEqual(["alpha@1.2.0"])
    }))

  it.effect("include_status_reason=true adds each version's status_reason; without it, none is sent", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const shown = yield* getQueue(service, { nodeId: "alpha", include_status_reason: "true", pageSize: 100 }, adminToken)
      expect(shown.versions.map((v) => [v.version, v.status_reason])).toEqual([
        ["1.2.0", "Suspicious EVAL() call"],
        ["1.1.0", undefined],
        ["1.0.0", "Checks passed"],
        ["0.9.0", undefined]
      ])
      for (const flag of [{}, { include_status_reason: "false" }]) {
        const hidden = yield* getQueue(service, { nodeId: "alpha", ...flag }, adminToken)
        expect(hidden.versions.every((v) => !("status_reason" in v))).toBe(true)
      }
    }))

  it.effect("pages: pageSize above 100 is served as 100 (like limit), a page past the end is empty", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const clamped = yield* getQueue(service, { pageSize: 1000 }, adminToken)
      expect(clamped.pageSize).toBe(100)
      const second = yield* getQueue(service, { pageSize: 4, page: 2 }, adminToken)
      expect({ page: second.page, pageSize: second.pageSize, total: second.total, totalPages: second.totalPages })
        .toEqual({ page: 2, pageSize: 4, total: 10, totalPages: 3 })
      expect(pairs(second)).toEqual(model.expected({ siteAdmin: true }).slice(4, 8).map((v) => v.pair))
      const past = yield* getQueue(service, { pageSize: 4, page: 4 }, adminToken)
      expect({ versions: past.versions, total: past.total }).toEqual({ versions: [], total: 10 })
      // the default page size is 10
      expect((yield* getQueue(service, {}, adminToken)).pageSize).toBe(10)
    }))

  it.effect("a bad parameter is 400 naming it; a token that does not verify is 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const cases: ReadonlyArray<readonly [Query, string]> = [
        [{ page: "0" }, "page"],
        [{ page: "x" }, "page"],
        [{ pageSize: "0" }, "pageSize"],
        [{ pageSize: "1.5" }, "pageSize"],
        [{ statuses: "Active" }, "statuses"],
        [{ statuses: ["NodeVersionStatusActive", "nope"] }, "statuses"],
        [{ include_status_reason: "yes" }, "include_status_reason"],
        [{ nodeId: "n".repeat(201) }, "nodeId"],
        [{ status_reason: "r".repeat(201) }, "status_reason"]
      ]
      for (const [q, name] of cases) expectBadRequest(yield* get(service, `/versions${queryString(q)}`), name)
      expectError(yield* get(service, "/versions", { token: "not-a-jwt" }), 401, "unauthorized")
    }))

  it.effect(
    "every page of random catalogues, as a site admin and as the public, is the model's queue",
    () =>
      forAll(
        {
          nodes: fc.uniqueArray(
            fc.record({
              suffix: fc.constantFrom("a", "b", "c", "d", "e", "f"),
              status: fc.constantFrom<NodeStatus>("NodeStatusActive", "NodeStatusActive", "NodeStatusBanned", "NodeStatusDeleted"),
              bannedPublisher: fc.boolean(),
              versions: fc.uniqueArray(
                fc.record({
                  version: fc.constantFrom("1.0.0", "1.1.0", "2.0.0", "2.0.0-rc.1", "3.0.0"),
                  status: arbVersionStatus,
                  reason: fc.option(fc.constantFrom("ok", "Flagged: eval", "EVAL here"), { nil: undefined }),
                  minute: fc.integer({ min: 0, max: 4 })
                }),
                { selector: (v) => v.version, maxLength: 5 }
              )
            }),
            { selector: (n) => n.suffix, maxLength: 5 }
          ),
          siteAdmin: fc.boolean(),
          pageSize: fc.integer({ min: 3, max: 40 }),
          statuses: fc.option(fc.subarray([...allStatuses], { minLength: 1 }), { nil: undefined }),
          reason: fc.option(fc.constantFrom("eval", "OK"), { nil: undefined })
        },
        ({ nodes, pageSize, reason, siteAdmin, statuses }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const run = ++runs
            const publisher = (banned: boolean) => `prop-${run}${banned ? "-banned" : ""}`
            yield* seed(service, {
              publishers: [{ id: publisher(false) }, { id: publisher(true), status: "PublisherStatusBanned" }],
              nodes: nodes.map((n) => ({ id: `p${run}-${n.suffix}`, publisher_id: publisher(n.bannedPublisher), status: n.status })),
              versions: nodes.flatMap((n) =>
                n.versions.map((v) => ({
                  node_id: `p${run}-${n.suffix}`,
                  version: v.version,
                  status: v.status,
                  created_at: at(v.minute),
                  ...(v.reason === undefined ? {} : { status_reason: v.reason })
                }))
              )
            })
            const expected = model.expected({
              siteAdmin,
              ...(statuses === undefined ? {} : { statuses }),
              ...(reason === undefined ? {} : { reason })
            }).map((v) => v.pair)
            const q: Query = { pageSize, statuses, status_reason: reason }
            const token = siteAdmin ? adminToken : undefined
            const served: Array<string> = []
            const totalPages = Math.ceil(expected.length / pageSize)
            for (let page = 1; page <= totalPages + 1; page++) {
              const p = yield* getQueue(service, { ...q, page }, token)
              expect({ total: p.total, totalPages: p.totalPages, page: p.page }).toEqual({ total: expected.length, totalPages, page })
              served.push(...pairs(p))
            }
            expect(served).toEqual(expected)
          }),
        { numRuns: 15 }
      ),
    { timeout: 120_000 }
  )
})
