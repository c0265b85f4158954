/**
 * The fast path's JSON and the typed records agree. For random catalogues (every optional field
 * present or absent, translations with nulls inside, times with sub-millisecond digits, versions
 * with and without archives, in every status), a node as `GET /nodes` renders it in PostgreSQL
 * (Catalog/NodePages.ts) equals the Schema encoding of the same node read as a Domain record
 * (`GET /nodes/{id}`, Catalog/Records.ts): same keys, same values, its publisher included; and so
 * does the publisher read on its own. A version has one rendering that both paths share, so its
 * JSON is held to what was stored instead: the newest active version, field for field, as the
 * listing, the node and the version's own route answer it. Both ways obey ANSWER_ALIASES alike:
 * off, the interface's words alone; on, the clients' words beside them.
 */
import { requirementRecord } from "../../src/Domain/Requirements.ts"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import semver from "semver"
import type { NodeInput, VersionInput } from "../../scripts/lib/Seeder.ts"
import type { NodeStatus, NodeVersionStatus } from "../../src/Domain/Node.ts"
import { arbVersionStatus, decodeNodeListWithExtras, getPage } from "../support/Catalogue.ts"
import { query } from "../support/Db.ts"
import { expectStatus, get } from "../support/Http.ts"
import { Service } from "../support/Service.ts"
import { forAll } from "../support/Property.ts"

const text = fc.option(fc.string({ minLength: 0, maxLength: 12 }), { nil: undefined })
const list = fc.array(fc.constantFrom("Linux", "windows", "cuda", "a b", "é", ""), { maxLength: 3 })
const nodeStatus = fc.constantFrom<NodeStatus>("NodeStatusActive", "NodeStatusActive", "NodeStatusActive", "NodeStatusBanned")
const moment = fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2027, 0, 1) }).map((ms) => new Date(ms))
/** Microseconds added to every stored time of a run: both paths must cut them to milliseconds alike. */
const micros = fc.integer({ min: 0, max: 999 })

const arbTranslations = fc.option(
  fc.dictionary(
    fc.constantFrom("fr", "de", "ja"),
    fc.dictionary(fc.constantFrom("name", "description"), fc.oneof(fc.string({ maxLength: 6 }), fc.constant(null)), { maxKeys: 2 }),
    { maxKeys: 2 }
  ),
  { nil: undefined }
)

const arbVersion = fc.record({
  version: fc.constantFrom("0.1.0", "1.0.0", "1.10.0", "2.0.0-rc.1", "3.0.0+build.7"),
  status: arbVersionStatus,
  archived: fc.boolean(),
  changelog: text,
  status_reason: text,
  dependencies: list,
  deprecated: fc.option(fc.boolean(), { nil: undefined }),
  supported_os: list,
  supported_accelerators: list,
  supported_host_version: fc.option(fc.constantFrom(">=1.0.0", "^2.1", "1.x || >=3"), { nil: undefined }),
  supported_host_frontend_version: text,
  tags: list,
  created_at: moment
})

const arbNode = fc.record({
  name: text,
  description: text,
  author: text,
  license: text,
  icon: text,
  banner_url: text,
  category: text,
  repository: text,
  status_detail: text,
  rating: fc.option(fc.double({ min: 0, max: 5, noNaN: true }), { nil: undefined }),
  search_ranking: fc.option(fc.integer({ min: -5, max: 5 }), { nil: undefined }),
  downloads: fc.nat(10_000),
  repohost_stars: fc.nat(100),
  status: nodeStatus,
  supported_os: list,
  supported_accelerators: list,
  supported_host_version: text,
  supported_host_frontend_version: text,
  tags: list,
  tags_admin: list,
  preempted_host_node_names: list,
  translations: arbTranslations,
  created_at: moment,
  versions: fc.uniqueArray(arbVersion, { selector: (v) => v.version, maxLength: 3 })
})

const arbPublisher = fc.record({ name: text, description: text, website: text, created_at: moment })

/** Keys whose value is undefined left out, as the seeder's input has no undefined fields. */
const defined = <A extends object>(a: A): A => Object.fromEntries(Object.entries(a).filter(([, v]) => v !== undefined)) as A

/** A version as the wire shows it, from what was stored; its id is the database's. */
const expectedVersion = (nodeId: string, v: typeof arbVersion extends fc.Arbitrary<infer A> ? A : never, archives: string) =>
  defined({
    changelog: v.changelog,
    createdAt: v.created_at.toISOString(),
    dependencies: v.dependencies,
    // stored with the version (migration 0026): each dependency read as a PEP 508 requirement
    dependency_requirements: v.dependencies.map(requirementRecord),
    deprecated: v.deprecated ?? false,
    downloadUrl: v.archived && v.status === "NodeVersionStatusActive" ? `${archives}${nodeId}/${v.version}` : undefined,
    node_id: nodeId,
    status: v.status,
    status_reason: v.status_reason,
    supported_accelerators: v.supported_accelerators,
    supported_host_frontend_version: v.supported_host_frontend_version,
    supported_host_version: v.supported_host_version,
    supported_os: v.supported_os,
    tags: v.tags,
    tags_admin: [],
    version: v.version,
    yanked: false
  })

/** The newest active version: the one a node's `latest_version` shows. */
const newestActive = <V extends { readonly version: string; readonly status: NodeVersionStatus }>(versions: ReadonlyArray<V>) =>
  versions.filter((v) => v.status === "NodeVersionStatusActive").sort((a, b) => semver.rcompare(a.version, b.version))[0]

/**
 * With ANSWER_ALIASES on, a version's fields also under the clients' words (the default ones,
 * comfyui and comfy_node), written out here rather than derived from the service's table.
 */
const withClientWords = <V extends Record<string, unknown>>(v: V) =>
  defined({
    ...v,
    supported_comfyui_version: v.supported_host_version,
    supported_comfyui_frontend_version: v.supported_host_frontend_version,
    comfy_node_extract_status: v.host_node_extract_status
  })

let runs = 0

for (const inAnswers of [false, true]) {
  layer(Service.layer((c) => ({ ...c, aliases: { ...c.aliases, inAnswers } })), { excludeTestServices: true })(
    `the fast path and the typed records, ANSWER_ALIASES=${inAnswers}`,
    (it) => {
      it.effect(
        "a listed node, its latest version and its publisher are the same JSON both ways",
        () =>
          forAll(
            { publisher: arbPublisher, nodes: fc.array(arbNode, { minLength: 1, maxLength: 6 }), micros },
            ({ micros, nodes, publisher }) =>
              Effect.gen(function*() {
                const service = yield* Service
                const run = ++runs
                const publisherId = `fp-${run}`
                const seeded: Array<NodeInput> = nodes.map(({ versions: _versions, ...node }, i) =>
                  defined({ ...node, id: `fp-${run}-${i}`, publisher_id: publisherId })
                )
                const versions: Array<VersionInput> = nodes.flatMap((node, i) =>
                  node.versions.map(({ archived: _archived, ...v }) => defined({ ...v, node_id: `fp-${run}-${i}` }))
                )
                yield* service.writes.upsertPublishers([defined({ id: publisherId, ...publisher })])
                for (const node of seeded) yield* service.writes.insertNodes([node])
                yield* service.writes.insertVersions(versions)
                // some versions have their archive: those that are also active get a download URL
                const archived = nodes.flatMap((node, i) => node.versions.filter((v) => v.archived).map((v) => `fp-${run}-${i}@${v.version}`))
                yield* query(service, "UPDATE node_versions SET archive_bytes = 1 WHERE node_id || '@' || version = ANY($1)", [archived])
                const later = `${micros} microseconds`
                yield* query(service, "UPDATE publishers SET created_at = created_at + $2::interval WHERE id = $1", [publisherId, later])
                yield* query(service, "UPDATE nodes SET created_at = created_at + $2::interval WHERE publisher_id = $1", [publisherId, later])
                yield* query(
                  service,
                  "UPDATE node_versions v SET created_at = v.created_at + $2::interval FROM nodes n WHERE n.id = v.node_id AND n.publisher_id = $1",
                  [publisherId, later]
                )

                const page = yield* getPage(
                service,
                "/nodes",
                { node_id: seeded.map((n) => n.id), latest: "true", limit: 500 },
                undefined,
                inAnswers ? decodeNodeListWithExtras : undefined
              )
                expect(page.nodes.map((n) => n.id).sort()).toEqual(seeded.filter((n) => n.status === "NodeStatusActive").map((n) => n.id).sort())
                const archives = `${service.config.publicBaseUrl}/archives/`
                for (const listed of page.nodes) {
                  const typed = expectStatus(yield* get(service, `/nodes/${listed.id}`), 200, listed.id).body
                  expect(typed, listed.id).toStrictEqual(listed)
                  const node = nodes[Number(listed.id.split("-").pop())]!
                  // the clients' words beside the interface's, or none of them
                  const clientWords = {
                    supported_comfyui_version: node.supported_host_version,
                    supported_comfyui_frontend_version: node.supported_host_frontend_version,
                    preempted_comfy_node_names: node.preempted_host_node_names,
                    github_stars: node.repohost_stars
                  }
                  for (const [word, value] of Object.entries(clientWords)) {
                    expect((listed as Record<string, unknown>)[word], `${listed.id} ${word}`).toStrictEqual(inAnswers ? value : undefined)
                  }
                  const stored = newestActive(nodes[Number(listed.id.split("-").pop())]!.versions)
                  if (stored === undefined) {
                    expect(listed.latest_version, `${listed.id} latest_version`).toBeUndefined()
                  } else {
                    const expected = { ...expectedVersion(listed.id, stored, archives), id: listed.latest_version?.id }
                    expect(listed.latest_version, `${listed.id} latest_version`).toStrictEqual(inAnswers ? withClientWords(expected) : expected)
                    const version = yield* get(service, `/nodes/${listed.id}/versions/${encodeURIComponent(stored.version)}`)
                    expect(expectStatus(version, 200, listed.id).body, `${listed.id} version`).toStrictEqual(listed.latest_version)
                  }
                  const owner = yield* get(service, `/publishers/${publisherId}`)
                  expect(expectStatus(owner, 200, publisherId).body, `${listed.id} publisher`).toStrictEqual(listed.publisher)
                }
              }),
            // the clients' words change the names only: fewer runs for them
            { numRuns: inAnswers ? 10 : 25 }
          ),
        { timeout: 120_000 }
      )
    }
  )
}
