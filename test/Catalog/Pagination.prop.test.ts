/**
 * Properties of paging: for random catalogues (many ties, random statuses), page sizes and
 * sorts, walking every page yields each matching node exactly once, in a total order equal to a
 * JS model's, with `total` and `totalPages` consistent on every page.
 *
 * The database persists across runs within this file, so each run writes its own publishers and
 * node ids (a run counter in every id) and asks only for them: through `node_id` for GET /nodes,
 * through its own publisher for the publisher listing.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { sortColumns } from "../../src/Domain/Node.ts"
import type { NodeInput } from "../../scripts/lib/Seeder.ts"
import {
  arbVersionStatus,
  Catalogue,
  compareNodes,
  ids,
  type ModelNode,
  type ModelQuery,
  sortParam,
  updatedAtMicros,
  walkPages,
  type WireNode
} from "../support/Catalogue.ts"
import { addMember } from "../support/Db.ts"
import { Service } from "../support/Service.ts"
import { forAll } from "../support/Property.ts"

// --- arbitraries: small value pools, so that ties are the rule ---------------------------------

const versionPool = ["0.1.0", "1.9.0", "1.10.0", "2.0.0-rc.1", "2.0.0-rc.10", "2.0.0", "10.0.0"]

const arbNode = fc.record({
  // ids differing in case and punctuation, so that byte order matters
  suffix: fc.string({ unit: fc.constantFrom(..."aAbB-_.0"), minLength: 1, maxLength: 3 }),
  second: fc.boolean(),
  name: fc.option(fc.constantFrom("a", "A", "b", "node", "Node", "node-x", "é"), { nil: undefined }),
  downloads: fc.constantFrom(0, 1, 2, 1000),
  rating: fc.option(fc.constantFrom(1, 2.5, 5), { nil: undefined }),
  search_ranking: fc.option(fc.constantFrom(1, 2, 3), { nil: undefined }),
  repohost_stars: fc.constantFrom(0, 7),
  status: fc.constantFrom("NodeStatusActive", "NodeStatusActive", "NodeStatusActive", "NodeStatusBanned", "NodeStatusDeleted") as fc
    .Arbitrary<NonNullable<NodeInput["status"]>>,
  supported_os: fc.subarray(["Linux", "windows", "macOS"]),
  createdSecond: fc.constantFrom(0, 1, 2),
  touched: fc.boolean(),
  versions: fc.uniqueArray(fc.record({ version: fc.constantFrom(...versionPool), status: arbVersionStatus }), {
    selector: (v) => v.version,
    maxLength: 4
  })
})

const arbCatalogue = fc.uniqueArray(arbNode, { selector: (n) => n.suffix, maxLength: 30 })
const arbSort = fc.array(fc.record({ column: fc.constantFrom(...sortColumns), desc: fc.boolean() }), { maxLength: 3 })
const arbLimit = fc.oneof(fc.integer({ min: 1, max: 12 }), fc.constant(500), fc.constant(501))

let runs = 0

/** Writes a random catalogue under fresh publishers and answers its model. */
type RandomNode = typeof arbNode extends fc.Arbitrary<infer T> ? T : never

const seed = (catalogue: ReadonlyArray<RandomNode>, secondBanned: boolean) =>
  Effect.gen(function*() {
    const service = yield* Service
    const run = ++runs
    const cat = new Catalogue()
    const first = `pub-${run}`
    const second = `pub-${run}-b`
    const nodes: Array<NodeInput> = catalogue.map((n) => ({
      id: `r${run}-${n.suffix}`,
      publisher_id: n.second ? second : first,
      downloads: n.downloads,
      repohost_stars: n.repohost_stars,
      status: n.status,
      supported_os: n.supported_os,
      created_at: new Date(Date.UTC(2024, 0, 1, 0, 0, n.createdSecond)),
      ...(n.name === undefined ? {} : { name: n.name }),
      ...(n.rating === undefined ? {} : { rating: n.rating }),
      ...(n.search_ranking === undefined ? {} : { search_ranking: n.search_ranking })
    }))
    yield* cat.add(service, {
      publishers: [{ id: first }, { id: second, ...(secondBanned ? { status: "PublisherStatusBanned" as const } : {}) }],
      nodes,
      versions: catalogue.flatMap((n) => n.versions.map((v) => ({ node_id: `r${run}-${n.suffix}`, ...v })))
    })
    for (const n of catalogue) if (n.touched) yield* service.writes.updateNode(`r${run}-${n.suffix}`, { description: "touched" })
    const stored = yield* updatedAtMicros(service)
    for (const node of cat.nodes.values()) node.updatedAt = stored.get(node.id)!
    return { run, cat, first, second, service }
  })

/** Each node exactly once, in the model's order, each carrying the model's latest_version. */
const expectWalk = (cat: Catalogue, served: ReadonlyArray<WireNode>, expected: ReadonlyArray<ModelNode>) => {
  expect(new Set(ids(served)).size).toBe(served.length)
  expect(ids(served)).toEqual(expected.map((n) => n.id))
  for (const node of served) expect(node.latest_version?.version).toBe(cat.latestVersion(node.id!)?.version)
}

layer(Service.layer(), { excludeTestServices: true })("paging", (it) => {
  it.effect(
    "GET /nodes: every matching node exactly once, in the model's total order",
    () =>
      forAll(
        {
          catalogue: arbCatalogue,
          limit: arbLimit,
          sort: arbSort,
          os: fc.option(fc.constantFrom("linux", "WINDOWS", "beos"), { nil: undefined }),
          secondBanned: fc.boolean()
        },
        ({ catalogue, limit, os, secondBanned, sort }) =>
          Effect.gen(function*() {
            const { cat, run, service } = yield* seed(catalogue, secondBanned)
            const nodeIds = [...cat.nodes.keys(), `r${run}-missing`]
            const q: ModelQuery = { sort, node_id: nodeIds, ...(os === undefined ? {} : { supported_os: os }) }
            const expected = cat.expected(q)
            const walked = yield* walkPages(service, "/nodes", {
              latest: "true",
              node_id: nodeIds,
              sort: sort.map(sortParam),
              supported_os: os
            }, limit)
            expect(walked.total).toBe(expected.length)
            expectWalk(cat, walked.nodes, expected)
          }),
        { numRuns: 20 }
      ),
    { timeout: 120_000 }
  )

  it.effect(
    "GET /nodes: the same walk through the cached path agrees with the database",
    () =>
      forAll(
        { catalogue: arbCatalogue, limit: fc.integer({ min: 1, max: 8 }), sort: arbSort },
        ({ catalogue, limit, sort }) =>
          Effect.gen(function*() {
            const { cat, run, service } = yield* seed(catalogue, false)
            const nodeIds = [...cat.nodes.keys(), `r${run}-missing`]
            const expected = cat.expected({ sort, node_id: nodeIds })
            const walked = yield* walkPages(service, "/nodes", { node_id: nodeIds, sort: sort.map(sortParam) }, limit)
            expect(walked.total).toBe(expected.length)
            expectWalk(cat, walked.nodes, expected)
          }),
        { numRuns: 15 }
      ),
    { timeout: 120_000 }
  )

  it.effect(
    "GET /publishers/{id}/nodes/v2: pages cover the publisher's nodes exactly once, with and without banned ones",
    () =>
      forAll(
        { catalogue: arbCatalogue, limit: arbLimit },
        ({ catalogue, limit }) =>
          Effect.gen(function*() {
            const { cat, first, run, service } = yield* seed(catalogue, false)
            const owner = `owner-${run}`
            yield* addMember(service, first, owner, "owner")
            const token = yield* Effect.promise(() => service.token({ sub: owner }))
            const mine = [...cat.nodes.values()].filter((n) => n.publisher_id === first)
            const order = (nodes: Array<ModelNode>) => nodes.sort(compareNodes([]))
            const listed = order(mine.filter((n) => n.status === "NodeStatusActive"))
            const withBanned = order(mine.filter((n) => n.status !== "NodeStatusDeleted"))

            const path = `/publishers/${first}/nodes/v2`
            const plain = yield* walkPages(service, path, {}, limit, token)
            expect(plain.total).toBe(listed.length)
            expectWalk(cat, plain.nodes, listed)
            const all = yield* walkPages(service, path, { include_banned: "true" }, limit, token)
            expect(all.total).toBe(withBanned.length)
            expectWalk(cat, all.nodes, withBanned)
          }),
        { numRuns: 15 }
      ),
    { timeout: 120_000 }
  )
})
