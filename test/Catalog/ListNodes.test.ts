/**
 * GET /nodes, parameter by parameter, over loopback HTTP against the real database. Each block
 * runs on its own fresh database, so that a block's JS model describes the whole catalogue.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { sortColumns } from "../../src/Domain/Node.ts"
import type { NodeInput, VersionInput } from "../../scripts/lib/Seeder.ts"
import {
  Catalogue,
  decodeNodeList,
  getPage,
  ids,
  isoMillis,
  type ModelQuery,
  queryString,
  sleep,
  updatedAtMicros,
  uuidPattern,
  walkPages,
  type WireNodeList
} from "../support/Catalogue.ts"
import { clientFor, type ListParams } from "../support/Client.ts"
import { addMember } from "../support/Db.ts"
import { expectBadRequest, expectError, expectStatus, get } from "../support/Http.ts"
import { Service } from "../support/Service.ts"
import { forAll } from "../support/Property.ts"

const at = (iso: string) => new Date(iso)

/** One block of tests on a fresh database and service. */
const onFreshService = layer(Service.layer(), { excludeTestServices: true })

const fresh = { latest: "true" } as const

/** A page of `GET /nodes` from the database (`latest`), through the typed client. */
const listedPage = (params: ListParams) =>
  Effect.gen(function*() {
    const client = yield* clientFor(yield* Service)
    return yield* client.api.catalog.listAllNodes({ query: { latest: true, ...params } })
  })

const idsOf = (nodes: ReadonlyArray<{ readonly id: string }>) => nodes.map((n) => n.id)

onFreshService("GET /nodes: page, limit and the wire format", (it) => {
  const cat = new Catalogue()
  // 23 listed nodes with distinct downloads: the default order is by downloads, descending
  const nodes: Array<NodeInput> = Array.from({ length: 23 }, (_, i) => ({
    id: `node-${String(i).padStart(2, "0")}`,
    publisher_id: "acme",
    downloads: (i * 7) % 23 * 10,
    created_at: at(`2024-01-01T00:00:${String(i).padStart(2, "0")}.000Z`)
  }))
  const orderedIds = () => cat.expected({}).map((n) => n.id)

  it.effect("seeds", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* cat.add(service, { publishers: [{ id: "acme", name: "Acme" }], nodes })
    }))

  it.effect("defaults to page 1 of 10 nodes in the default order", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const page = yield* getPage(service, "/nodes", fresh)
      expect({ ...page, nodes: ids(page.nodes) }).toEqual({
        limit: 10,
        nodes: orderedIds().slice(0, 10),
        page: 1,
        total: 23,
        totalPages: 3
      })
      // the model agrees with a hand-written expectation: the most downloaded first
      expect(page.nodes[0]!.downloads).toBe(220)
      expect(page.nodes.map((n) => n.downloads)).toEqual([...page.nodes.map((n) => n.downloads!)].sort((a, b) => b - a))
    }))

  it.effect("serves the requested page and limit, the last page partially filled", () =>
    Effect.gen(function*() {
      const expectedIds = orderedIds()
      const p2 = yield* listedPage({ page: 2, limit: 7 })
      expect({ ...p2, nodes: idsOf(p2.nodes) }).toEqual({
        limit: 7,
        nodes: expectedIds.slice(7, 14),
        page: 2,
        total: 23,
        totalPages: 4
      })
      const p4 = yield* listedPage({ page: 4, limit: 7 })
      expect({ ...p4, nodes: idsOf(p4.nodes) }).toEqual({
        limit: 7,
        nodes: expectedIds.slice(21),
        page: 4,
        total: 23,
        totalPages: 4
      })
      const one = yield* listedPage({ page: 23, limit: 1 })
      expect(idsOf(one.nodes)).toEqual([expectedIds[22]])
      expect(one.totalPages).toBe(23)
      const exact = yield* listedPage({ limit: 23 })
      expect(idsOf(exact.nodes)).toEqual(expectedIds)
      expect(exact.totalPages).toBe(1)
    }))

  it.effect("a page past the end is 200 with no nodes and the true total", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const [page, limit, totalPages] of [[5, 7, 4], [4, 10, 3], [1_000_000, 10, 3], [1_000_000_000, 500, 1], [2, 23, 1], [2, 500, 1]] as const) {
        const p = yield* getPage(service, "/nodes", { ...fresh, page, limit })
        expect(p).toEqual({ limit, nodes: [], page, total: 23, totalPages })
      }
      // the cached path answers the same
      const cached = yield* getPage(service, "/nodes", { page: 9 })
      expect(cached).toEqual({ limit: 10, nodes: [], page: 9, total: 23, totalPages: 3 })
    }))

  it.effect("clamps limit to 500 and echoes the served value", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const limit of [500, 501, 1000, 1_000_000_000, Number.MAX_SAFE_INTEGER]) {
        const p = yield* getPage(service, "/nodes", { ...fresh, limit })
        expect({ limit: p.limit, page: p.page, total: p.total, totalPages: p.totalPages, n: p.nodes.length })
          .toEqual({ limit: 500, page: 1, total: 23, totalPages: 1, n: 23 })
      }
      const past = yield* getPage(service, "/nodes", { ...fresh, limit: 5000, page: 2 })
      expect(past).toEqual({ limit: 500, nodes: [], page: 2, total: 23, totalPages: 1 })
    }))

  it.effect("refuses a page or limit below 1 with 400 naming the parameter", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const [name, value] of [["page", "0"], ["limit", "0"], ["page", "-1"], ["limit", "-5"], ["limit", "1.5"]] as const) {
        const e = expectError(yield* get(service, `/nodes?${name}=${value}`), 400, "bad_request")
        expect(e.message).toContain(name)
      }
    }))

  it.effect("writes every field exactly as the interface names it and omits absent ones", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const full: NodeInput = {
        id: "full-node",
        publisher_id: "rich",
        name: "Full Node",
        description: "Has everything",
        author: "Ada",
        license: "LICENSE",
        icon: "https://example.test/icon.png",
        banner_url: "https://example.test/banner.png",
        category: "image",
        repository: "https://repohost.test/ada/full-node",
        repohost_stars: 42,
        downloads: 1234,
        rating: 4.5,
        search_ranking: 3,
        supported_os: ["Linux", "Windows"],
        supported_accelerators: ["CUDA"],
        supported_host_version: ">=1.0.0",
        supported_host_frontend_version: ">=2.0.0",
        tags: ["image", "upscale"],
        tags_admin: ["reviewed"],
        preempted_host_node_names: ["OldUpscale"],
        translations: { fr: { name: "Noeud complet" } },
        created_at: at("2023-05-06T07:08:09.123Z")
      }
      const version: VersionInput = {
        node_id: "full-node",
        version: "1.2.3",
        status: "NodeVersionStatusActive",
        status_reason: "checked",
        changelog: "Fixes",
        dependencies: ["numpy>=1.0"],
        deprecated: true,
        supported_os: ["Linux"],
        supported_accelerators: ["CUDA"],
        supported_host_version: ">=1.0.0 <3.0.0",
        supported_host_frontend_version: ">=2.0.0",
        tags: ["stable"],
        created_at: at("2023-06-01T00:00:00.500Z")
      }
      yield* service.writes.upsertPublishers([
        { id: "rich", name: "Rich", description: "A publisher", website: "https://rich.test", created_at: at("2022-01-02T03:04:05.006Z") }
      ])
      yield* service.writes.insertNodes([full])
      yield* service.writes.insertNodes([{ id: "bare-node", publisher_id: "rich", created_at: at("2023-01-01T00:00:00.000Z") }])
      yield* service.writes.insertVersions([version])
      const page = yield* getPage(service, "/nodes", { ...fresh, node_id: ["full-node", "bare-node"], sort: ["id"] })
      expect(ids(page.nodes)).toEqual(["bare-node", "full-node"])
      const [bare, node] = page.nodes
      const { id: versionId, ...latest } = node!.latest_version!
      expect(versionId).toMatch(uuidPattern)
      expect(node).toEqual({
        author: "Ada",
        banner_url: "https://example.test/banner.png",
        category: "image",
        created_at: "2023-05-06T07:08:09.123Z",
        description: "Has everything",
        downloads: 1234,
        repohost_stars: 42,
        icon: "https://example.test/icon.png",
        id: "full-node",
        latest_version: node!.latest_version,
        license: "LICENSE",
        name: "Full Node",
        preempted_host_node_names: ["OldUpscale"],
        publisher: {
          createdAt: "2022-01-02T03:04:05.006Z",
          description: "A publisher",
          id: "rich",
          name: "Rich",
          status: "PublisherStatusActive",
          website: "https://rich.test"
        },
        rating: 4.5,
        repository: "https://repohost.test/ada/full-node",
        search_ranking: 3,
        status: "NodeStatusActive",
        supported_accelerators: ["CUDA"],
        supported_host_frontend_version: ">=2.0.0",
        supported_host_version: ">=1.0.0",
        supported_os: ["Linux", "Windows"],
        tags: ["image", "upscale"],
        tags_admin: ["reviewed"],
        translations: { fr: { name: "Noeud complet" } }
      })
      expect(latest).toEqual({
        changelog: "Fixes",
        createdAt: "2023-06-01T00:00:00.500Z",
        dependencies: ["numpy>=1.0"],
        dependency_requirements: [{ requirement: "numpy>=1.0", name: "numpy", package: "numpy", extras: [], specifier: ">=1.0" }],
        deprecated: true,
        node_id: "full-node",
        status: "NodeVersionStatusActive",
        status_reason: "checked",
        supported_accelerators: ["CUDA"],
        supported_host_frontend_version: ">=2.0.0",
        supported_host_version: ">=1.0.0 <3.0.0",
        supported_os: ["Linux"],
        tags: ["stable"],
        tags_admin: [],
        version: "1.2.3",
        yanked: false
      })
      // a node with nothing optional set: absent fields are omitted, not null; but clients index
      // name and description directly (ComfyUI-Manager glob/manager_core.py, comfy-cli
      // comfy_cli/registry/api.py): its id and "" stand in for them
      for (const absent of ["author", "rating", "search_ranking", "latest_version", "translations", "icon"]) {
        expect(bare).not.toHaveProperty(absent)
      }
      expect({ name: bare!.name, description: bare!.description }).toEqual({ name: "bare-node", description: "" })
      expect(bare!.created_at).toMatch(isoMillis)
      expect(bare!.publisher?.id).toBe("rich")
    }))

  // registry-web's generated client (src/api/generated.ts, GetNodeParams) sends include_translations
  it.effect("GET /nodes/{nodeId}: include_translations=false leaves out translations; true and absent keep them", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const full = expectStatus(yield* get(service, "/nodes/full-node"), 200, "full-node").body as Record<string, unknown>
      expect(full["translations"]).toEqual({ fr: { name: "Noeud complet" } })
      expect(expectStatus(yield* get(service, "/nodes/full-node?include_translations=true"), 200, "true").body).toEqual(full)
      const { translations: _kept, ...rest } = full
      expect(expectStatus(yield* get(service, "/nodes/full-node?include_translations=false"), 200, "false").body).toStrictEqual(rest)
      const client = yield* clientFor(service)
      const typed = yield* client.api.catalog.getNode({ params: { nodeId: "full-node" }, query: { include_translations: false } })
      expect(typed.translations).toBeUndefined()
      expect(typed.name).toBe(full["name"])
    }))

  it.effect(
    "GET /nodes/{nodeId}: include_translations is true/1 or false/0, anything else 400 naming it",
    () =>
      forAll(
        { value: fc.oneof(fc.constantFrom("true", "false", "1", "0", "TRUE", "no", ""), fc.string({ maxLength: 6 })) },
        ({ value }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const answer = yield* get(service, `/nodes/full-node${queryString({ include_translations: value })}`)
            if (["true", "1", "false", "0"].includes(value)) {
              const body = expectStatus(answer, 200, value).body as Record<string, unknown>
              expect("translations" in body, value).toBe(value === "true" || value === "1")
            } else {
              expectBadRequest(answer, "include_translations")
            }
          }),
        { numRuns: 40 }
      ),
    { timeout: 60_000 }
  )
})

onFreshService("GET /nodes: what one batch of Seeder.insertNodes stores", (it) => {
  // Seeds and later endpoints write many nodes at once; every node must keep its own fields.
  it.effect("a batch of nodes with different optional fields stores each node's own values", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.upsertPublishers([{ id: "p" }])
      const written = yield* Effect.exit(service.writes.insertNodes([
        { id: "plain", publisher_id: "p" },
        { id: "rich", publisher_id: "p", name: "Rich", downloads: 7, rating: 4.5, search_ranking: 1, supported_os: ["Linux"] },
        { id: "hidden", publisher_id: "p", status: "NodeStatusBanned" }
      ]))
      expect(written._tag).toBe("Success")
      const page = yield* getPage(service, "/nodes", { ...fresh, sort: ["id"] })
      expect(ids(page.nodes)).toEqual(["plain", "rich"])
      const rich = page.nodes.find((n) => n.id === "rich")
      expect(rich).toMatchObject({ name: "Rich", downloads: 7, rating: 4.5, search_ranking: 1, supported_os: ["Linux"] })
    }))

  it.effect("a batch whose first node sets a field a later one leaves out stores the later one's default", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const written = yield* Effect.exit(service.writes.insertNodes([
        { id: "counted", publisher_id: "p", downloads: 3, repohost_stars: 2 },
        { id: "uncounted", publisher_id: "p" }
      ]))
      expect(written._tag).toBe("Success")
      const page = yield* getPage(service, "/nodes", { ...fresh, node_id: ["uncounted"] })
      expect(page.nodes[0]).toMatchObject({ id: "uncounted", downloads: 0, repohost_stars: 0 })
    }))
})

onFreshService("GET /nodes: supported_os, supported_accelerator, node_id, form_factor", (it) => {
  const cat = new Catalogue()
  const created = at("2024-02-01T00:00:00.000Z")
  const node = (id: string, os: Array<string>, accelerators: Array<string>, downloads: number): NodeInput => ({
    id,
    publisher_id: "pub",
    supported_os: os,
    supported_accelerators: accelerators,
    downloads,
    created_at: created
  })

  it.effect("seeds", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* cat.add(service, {
        publishers: [{ id: "pub" }, { id: "gone", status: "PublisherStatusBanned" }],
        nodes: [
          node("linux-only", ["Linux"], ["CUDA"], 90),
          node("win-mac", ["Windows", "macOS"], ["cpu"], 80),
          node("everywhere", [], [], 70),
          node("mac-metal", ["MACOS"], ["Metal", "CPU"], 60),
          node("linux-win", ["linux", "windows"], [], 50),
          node("any-os-cuda", [], ["cuda", "ROCm"], 40),
          { ...node("banned-linux", ["Linux"], [], 30), status: "NodeStatusBanned" },
          { ...node("deleted-any", [], [], 20), status: "NodeStatusDeleted" },
          { ...node("of-banned-publisher", [], [], 10), publisher_id: "gone" }
        ]
      })
    }))

  const check = (q: Omit<ModelQuery, "sort" | "host_version"> & { form_factor?: string }, expected: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const page = yield* listedPage({ ...q, limit: 100 })
      expect(idsOf(page.nodes)).toEqual(cat.expected(q).map((n) => n.id))
      expect(idsOf(page.nodes)).toEqual(expected)
      expect(page.total).toBe(expected.length)
    })

  it.effect("supported_os matches case-insensitively; nodes declaring none match every OS", () =>
    Effect.gen(function*() {
      yield* check({ supported_os: "linux" }, ["linux-only", "everywhere", "linux-win", "any-os-cuda"])
      yield* check({ supported_os: "LINUX" }, ["linux-only", "everywhere", "linux-win", "any-os-cuda"])
      yield* check({ supported_os: "macos" }, ["win-mac", "everywhere", "mac-metal", "any-os-cuda"])
      yield* check({ supported_os: "Windows" }, ["win-mac", "everywhere", "linux-win", "any-os-cuda"])
      // an OS nobody declares: only the nodes declaring none
      yield* check({ supported_os: "Plan9" }, ["everywhere", "any-os-cuda"])
      // whole values, not substrings
      yield* check({ supported_os: "lin" }, ["everywhere", "any-os-cuda"])
    }))

  it.effect("supported_accelerator follows the same rule", () =>
    Effect.gen(function*() {
      yield* check({ supported_accelerator: "cuda" }, ["linux-only", "everywhere", "linux-win", "any-os-cuda"])
      yield* check({ supported_accelerator: "CPU" }, ["win-mac", "everywhere", "mac-metal", "linux-win"])
      yield* check({ supported_accelerator: "metal" }, ["everywhere", "mac-metal", "linux-win"])
      yield* check({ supported_accelerator: "tpu" }, ["everywhere", "linux-win"])
    }))

  it.effect("supported_os and supported_accelerator combine", () =>
    check({ supported_os: "linux", supported_accelerator: "rocm" }, ["everywhere", "linux-win", "any-os-cuda"]))

  it.effect("node_id keeps only the nodes named, repeatable, never unlisted ones", () =>
    Effect.gen(function*() {
      yield* check({ node_id: ["win-mac"] }, ["win-mac"])
      yield* check({ node_id: ["mac-metal", "linux-only", "no-such-node"] }, ["linux-only", "mac-metal"])
      yield* check({ node_id: ["banned-linux", "deleted-any", "of-banned-publisher", "everywhere"] }, ["everywhere"])
      yield* check({ node_id: ["no-such-node"] }, [])
      yield* check({ node_id: ["linux-only", "win-mac", "linux-win"], supported_os: "windows" }, ["win-mac", "linux-win"])
    }))

  it.effect("form_factor is accepted and does not filter", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const all = yield* getPage(service, "/nodes", { ...fresh, limit: 100 })
      expect(all.total).toBe(6)
      for (const form_factor of ["desktop-win", "desktop-mac", "git-windows", "git-mac", "git-linux", "other", "toaster"]) {
        const page = yield* getPage(service, "/nodes", { ...fresh, limit: 100, form_factor })
        expect(page).toEqual(all)
        // and on the cached path too
        const cached = yield* getPage(service, "/nodes", { limit: 100, form_factor })
        expect(cached).toEqual(all)
      }
      yield* check({ supported_os: "linux", form_factor: "git-linux" }, ["linux-only", "everywhere", "linux-win", "any-os-cuda"])
    }))

  it.effect("unknown query parameters are ignored", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const all = yield* getPage(service, "/nodes", { ...fresh, limit: 100 })
      expect(yield* getPage(service, "/nodes", { ...fresh, limit: 100, colour: "blue", search: "x" })).toEqual(all)
    }))
})

onFreshService("GET /nodes: banned and deleted nodes are never listed", (it) => {
  const cat = new Catalogue()
  const created = at("2024-03-01T00:00:00.000Z")

  const listed = Effect.gen(function*() {
    const service = yield* Service
    const page = yield* getPage(service, "/nodes", { ...fresh, limit: 100 })
    expect(page.total).toBe(page.nodes.length)
    expect(ids(page.nodes)).toEqual(cat.expected({}).map((n) => n.id))
    return ids(page.nodes).sort()
  })

  it.effect("only active nodes of active publishers, following status changes", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* cat.add(service, {
        publishers: [{ id: "good" }, { id: "bad", status: "PublisherStatusBanned" }],
        nodes: [
          { id: "active", publisher_id: "good", created_at: created },
          { id: "deleted", publisher_id: "good", status: "NodeStatusDeleted", created_at: created },
          { id: "banned", publisher_id: "good", status: "NodeStatusBanned", created_at: created },
          { id: "of-bad", publisher_id: "bad", created_at: created },
          { id: "banned-of-bad", publisher_id: "bad", status: "NodeStatusBanned", created_at: created }
        ]
      })
      expect(yield* listed).toEqual(["active"])

      // unbanning the publisher lists its active nodes, not its banned ones
      yield* service.writes.setPublisherStatus("bad", "PublisherStatusActive")
      cat.publishers.get("bad")!.status = "PublisherStatusActive"
      expect(yield* listed).toEqual(["active", "of-bad"])

      // banning it again hides them
      yield* service.writes.setPublisherStatus("bad", "PublisherStatusBanned")
      cat.publishers.get("bad")!.status = "PublisherStatusBanned"
      expect(yield* listed).toEqual(["active"])

      // node status changes: ban, delete, restore
      yield* service.writes.updateNode("active", { status: "NodeStatusBanned" })
      cat.nodes.get("active")!.status = "NodeStatusBanned"
      expect(yield* listed).toEqual([])
      yield* service.writes.updateNode("deleted", { status: "NodeStatusActive" })
      cat.nodes.get("deleted")!.status = "NodeStatusActive"
      expect(yield* listed).toEqual(["deleted"])
      yield* service.writes.updateNode("active", { status: "NodeStatusActive" })
      cat.nodes.get("active")!.status = "NodeStatusActive"
      expect(yield* listed).toEqual(["active", "deleted"])
    }))

  it.effect("a publisher upserted again keeps its status rule", () =>
    Effect.gen(function*() {
      const service = yield* Service
      // renaming the banned publisher (status given again) must not list its nodes
      yield* service.writes.upsertPublishers([{ id: "bad", name: "Renamed", status: "PublisherStatusBanned" }])
      expect(yield* listed).toEqual(["active", "deleted"])
    }))

  it.effect("no filter can reach an unlisted node", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.insertVersions([
        { node_id: "of-bad", version: "1.0.0", status: "NodeVersionStatusActive" },
        { node_id: "banned", version: "1.0.0", status: "NodeVersionStatusActive" }
      ])
      for (
        const q of [
          { node_id: ["of-bad", "banned", "banned-of-bad"] },
          { host_version: "1.0.0" },
          { supported_os: "linux" },
          { timestamp: "2000-01-01T00:00:00Z" },
          { sort: ["name;desc"] }
        ]
      ) {
        const page = yield* getPage(service, "/nodes", { ...fresh, limit: 100, ...q })
        for (const id of ids(page.nodes)) expect(["active", "deleted"]).toContain(id)
      }
    }))
})

onFreshService("GET /nodes: timestamp", (it) => {
  const iso = (d: Date) => d.toISOString()
  /** The same instant written with a +02:00 offset. */
  const withOffset = (d: Date) => {
    const shifted = new Date(d.getTime() + 2 * 3600_000).toISOString().replace("Z", "")
    return `${shifted}+02:00`
  }

  it.effect("catches nodes created and nodes updated after it (a new version is an update)", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.upsertPublishers([{ id: "p" }])
      yield* service.writes.insertNodes(
        ["old-untouched", "old-updated", "old-new-version", "old-version-status", "old-pending-version"].map((id) => ({
          id,
          publisher_id: "p"
        }))
      )
      yield* service.writes.insertVersions([{ node_id: "old-version-status", version: "1.0.0", status: "NodeVersionStatusPending" }])
      yield* sleep(25)
      const t = new Date()
      yield* sleep(25)

      const since = (ts: string) =>
        Effect.map(getPage(service, "/nodes", { ...fresh, limit: 100, timestamp: ts, sort: ["id"] }), (p) => {
          expect(p.total).toBe(p.nodes.length)
          return ids(p.nodes)
        })
      expect(yield* since(iso(t))).toEqual([])

      yield* service.writes.insertNodes([{ id: "new-node", publisher_id: "p" }])
      yield* service.writes.updateNode("old-updated", { downloads: 5 })
      yield* service.writes.insertVersions([{ node_id: "old-new-version", version: "2.0.0", status: "NodeVersionStatusActive" }])
      yield* service.writes.insertVersions([{ node_id: "old-pending-version", version: "0.1.0" }])

      const expected = ["new-node", "old-new-version", "old-pending-version", "old-updated"]
      expect(yield* since(iso(t))).toEqual(expected)
      // any ISO 8601 spelling of the same instant
      expect(yield* since(withOffset(t))).toEqual(expected)
      // a time before everything, and one after everything
      expect(yield* since("2000-01-01T00:00:00Z")).toEqual([...expected, "old-untouched", "old-version-status"].sort())
      expect(yield* since("2000-01-01")).toHaveLength(6)
      yield* sleep(25)
      const later = new Date()
      expect(yield* since(iso(later))).toEqual([])

      // a version's status change is an update of the node (its latest_version changes)
      yield* sleep(25)
      yield* service.writes.setVersionStatus("old-version-status", "1.0.0", "NodeVersionStatusActive")
      expect(yield* since(iso(later))).toEqual(["old-version-status"])
      const page = yield* getPage(service, "/nodes", { ...fresh, timestamp: iso(later) })
      expect(page.nodes[0]!.latest_version?.version).toBe("1.0.0")
    }))

  it.effect("combines with the other filters and pages", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* sleep(25)
      const t = new Date()
      yield* sleep(25)
      yield* service.writes.insertNodes(
        Array.from({ length: 12 }, (_, i) => ({ id: `batch-${String(i).padStart(2, "0")}`, publisher_id: "p", supported_os: i % 2 ? ["Linux"] : ["Windows"] }))
      )
      const walked = yield* walkPages(service, "/nodes", { ...fresh, timestamp: iso(t), sort: ["id"] }, 5)
      expect(walked.total).toBe(12)
      expect(ids(walked.nodes)).toEqual(Array.from({ length: 12 }, (_, i) => `batch-${String(i).padStart(2, "0")}`))
      const linux = yield* getPage(service, "/nodes", { ...fresh, timestamp: iso(t), supported_os: "linux", limit: 100 })
      expect(linux.total).toBe(6)
    }))

  it.effect("a malformed timestamp is 400 naming the parameter", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const bad of ["yesterday", "2024-13-01T00:00:00Z", "1700000000", ""]) {
        const e = expectError(yield* get(service, `/nodes${queryString({ timestamp: bad })}`), 400, "bad_request")
        expect(e.message).toContain("timestamp")
      }
    }))
})

onFreshService("GET /nodes: sort", (it) => {
  const cat = new Catalogue()
  const times = [at("2024-01-01T00:00:00.000Z"), at("2024-01-01T00:00:00.001Z"), at("2023-12-31T23:59:59.999Z")]
  const names = [undefined, "alpha", "Alpha", "beta", "b", "alpha-2", "Zed", "éclair"]
  // ids chosen so that their byte order differs from a dictionary's (case, punctuation)
  const nodeIds = ["a", "B", "a-b", "ab", "a_b", "Z9", "z-1", "m", "M-2", "node.x", "node-x", "n0", "-lead", "a0", "A0", "q"]

  it.effect("seeds nodes with many ties and stored update times", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* cat.add(service, {
        publishers: [{ id: "pub" }],
        nodes: nodeIds.map((id, i): NodeInput => ({
          id,
          publisher_id: "pub",
          downloads: [0, 5, 5, 10][i % 4]!,
          ...(i % 3 === 0 ? {} : { rating: [1.5, 4][i % 2]! }),
          ...(i % 5 === 0 ? {} : { search_ranking: [2, 1, 2][i % 3]! }),
          repohost_stars: [0, 3][i % 2]!,
          ...(names[i % names.length] === undefined ? {} : { name: names[i % names.length]! }),
          created_at: times[i % times.length]!
        }))
      })
      // distinct update times for some nodes, in an order unrelated to their ids
      for (const id of ["q", "a", "node.x", "B"]) {
        yield* sleep(2)
        yield* service.writes.updateNode(id, { description: `touched ${id}` })
      }
      yield* sleep(2)
      yield* service.writes.insertVersions([{ node_id: "m", version: "1.0.0", status: "NodeVersionStatusActive" }])
      const stored = yield* updatedAtMicros(service)
      for (const node of cat.nodes.values()) node.updatedAt = stored.get(node.id)!
    }))

  const expectOrder = (sort: ReadonlyArray<string>, model: ModelQuery["sort"]) =>
    Effect.gen(function*() {
      const service = yield* Service
      const page = yield* getPage(service, "/nodes", { ...fresh, limit: 100, sort })
      const expected = cat.expected({ sort: model ?? [] }).map((n) => n.id)
      expect(ids(page.nodes)).toEqual(expected)
      expect(page.total).toBe(nodeIds.length)
      // and page by page (limit 3) the same order
      const walked = yield* walkPages(service, "/nodes", { ...fresh, sort }, 3)
      expect(ids(walked.nodes)).toEqual(expected)
      return ids(page.nodes)
    })

  for (const column of sortColumns) {
    it.effect(`by ${column} ascending and descending, ties broken by id, absent values last`, () =>
      Effect.gen(function*() {
        const asc = yield* expectOrder([column], [{ column, desc: false }])
        expect(yield* expectOrder([`${column};asc`], [{ column, desc: false }])).toEqual(asc)
        const desc = yield* expectOrder([`${column};desc`], [{ column, desc: true }])
        if (column === "id") expect(desc).toEqual([...asc].reverse())
        // the order really depends on the direction
        expect(desc).not.toEqual(asc)
      }))
  }

  it.effect("hand-checked orders: id in byte order, name in byte order with unnamed last", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const byId = yield* getPage(service, "/nodes", { ...fresh, limit: 100, sort: ["id"] })
      expect(ids(byId.nodes)).toEqual(["-lead", "A0", "B", "M-2", "Z9", "a", "a-b", "a0", "a_b", "ab", "m", "n0", "node-x", "node.x", "q", "z-1"])
      const byName = yield* getPage(service, "/nodes", { ...fresh, limit: 100, sort: ["name;desc"] })
      const named = byName.nodes.map((n) => n.name ?? null)
      const present = named.filter((n) => n !== null)
      expect(named.slice(present.length).every((n) => n === null)).toBe(true)
      expect(present[0]).toBe("éclair")
      const byRating = yield* getPage(service, "/nodes", { ...fresh, limit: 100, sort: ["rating;desc"] })
      const ratings = byRating.nodes.map((n) => n.rating)
      expect(ratings.slice(0, ratings.indexOf(undefined))).toEqual([...ratings.filter((r) => r !== undefined)].sort((a, b) => b! - a!))
      expect(ratings.slice(ratings.indexOf(undefined)).every((r) => r === undefined)).toBe(true)
    }))

  it.effect("repeated sort parameters apply in the order given", () =>
    Effect.gen(function*() {
      yield* expectOrder(["downloads;desc", "name"], [{ column: "downloads", desc: true }, { column: "name", desc: false }])
      yield* expectOrder(["rating", "search_ranking;desc"], [{ column: "rating", desc: false }, { column: "search_ranking", desc: true }])
      yield* expectOrder(
        ["repohost_stars", "created_at;desc", "downloads"],
        [{ column: "repohost_stars", desc: false }, { column: "created_at", desc: true }, { column: "downloads", desc: false }]
      )
      yield* expectOrder(["updated_at;desc", "id;desc"], [{ column: "updated_at", desc: true }, { column: "id", desc: true }])
      // a later key never overrides an earlier one
      const a = yield* expectOrder(["search_ranking", "downloads"], [{ column: "search_ranking", desc: false }, { column: "downloads", desc: false }])
      const b = yield* expectOrder(["downloads", "search_ranking"], [{ column: "downloads", desc: false }, { column: "search_ranking", desc: false }])
      expect(a).not.toEqual(b)
    }))

  it.effect("the ';' may be sent percent-encoded or raw", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const encoded = yield* getPage(service, "/nodes", { ...fresh, limit: 100, sort: ["downloads;desc", "name;desc"] })
      const raw = yield* get(service, "/nodes?latest=true&limit=100&sort=downloads;desc&sort=name;desc")
      expect(raw.status).toBe(200)
      expect(decodeNodeList(raw.body)).toEqual(encoded)
      expect(ids(encoded.nodes)).toEqual(
        cat.expected({ sort: [{ column: "downloads", desc: true }, { column: "name", desc: true }] }).map((n) => n.id)
      )
    }))

  it.effect("without sort: search_ranking ascending (unset last), then downloads descending, then id", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const page = yield* getPage(service, "/nodes", { ...fresh, limit: 100 })
      expect(ids(page.nodes)).toEqual(cat.expected({}).map((n) => n.id))
      const rankings = page.nodes.map((n) => n.search_ranking ?? Infinity)
      expect(rankings).toEqual([...rankings].sort((a, b) => a - b))
      expect(rankings.at(-1)).toBe(Infinity)
    }))

  it.effect("another column is 400 naming the parameter", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const bad of ["publisher", "downloads;up", "DOWNLOADS", "name;desc;desc", "", "id,name"]) {
        const e = expectError(yield* get(service, `/nodes${queryString({ sort: [bad] })}`), 400, "bad_request")
        expect(e.message).toContain("sort")
      }
    }))

  it.effect("sort names every column of CONTRACT.md", () =>
    Effect.sync(() =>
      expect([...sortColumns].sort()).toEqual(
        ["created_at", "updated_at", "downloads", "rating", "name", "id", "search_ranking", "repohost_stars"].sort()
      )
    ))
})

onFreshService("GET /nodes: latest_version and host_version", (it) => {
  const cat = new Catalogue()
  const created = at("2024-04-01T00:00:00.000Z")
  const active = "NodeVersionStatusActive" as const
  const v = (node_id: string, version: string, status: VersionInput["status"], supported_host_version?: string): VersionInput => ({
    node_id,
    version,
    status,
    ...(supported_host_version === undefined ? {} : { supported_host_version })
  })

  it.effect("seeds", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* cat.add(service, {
        publishers: [{ id: "pub" }],
        nodes: ["semver", "prerelease", "inactive-top", "none-active", "no-versions", "host-a", "host-any", "host-split", "host-pre"]
          .map((id, i) => ({ id, publisher_id: "pub", downloads: 100 - i, created_at: created }))
      })
      yield* cat.add(service, {
        versions: [
          // inserted so that neither the newest row nor the text order is the answer
          v("semver", "1.10.0", active),
          v("semver", "1.9.0", active),
          v("semver", "1.2.0", active),
          v("semver", "2.0.0-rc.1", active),
          v("prerelease", "1.0.0-beta.11", active),
          v("prerelease", "1.0.0-beta.2", active),
          v("prerelease", "1.0.0-alpha.beta", active),
          v("prerelease", "1.0.0-alpha.1", active),
          v("inactive-top", "1.0.0", active),
          v("inactive-top", "9.0.0", "NodeVersionStatusPending"),
          v("inactive-top", "8.0.0", "NodeVersionStatusFlagged"),
          v("inactive-top", "7.0.0", "NodeVersionStatusDeleted"),
          v("inactive-top", "6.0.0", "NodeVersionStatusBanned"),
          v("none-active", "3.0.0", "NodeVersionStatusPending"),
          v("none-active", "2.0.0", "NodeVersionStatusFlagged"),
          v("none-active", "1.0.0", "NodeVersionStatusDeleted"),
          v("host-a", "1.0.0", active, ">=1.0.0 <2.0.0"),
          v("host-a", "1.5.0", active, ">=1.2.0 <2.0.0"),
          v("host-a", "2.0.0", active, ">=2.0.0"),
          v("host-a", "2.1.0", "NodeVersionStatusPending"),
          v("host-a", "3.0.0", "NodeVersionStatusFlagged", ">=0.0.0"),
          v("host-any", "0.1.0", active),
          v("host-split", "1.0.0", active, "<1.0.0 || >=3.0.0"),
          v("host-split", "1.1.0", active, "~1.4.0"),
          v("host-pre", "5.0.0", active, ">=2.0.0-rc.1 <2.0.0"),
          v("host-pre", "4.0.0", active, "^1.9.0")
        ]
      })
    }))

  const latestOf = (page: WireNodeList) => Object.fromEntries(page.nodes.map((n) => [n.id!, n.latest_version?.version ?? null]))

  it.effect("latest_version is the highest semantic version among Active versions", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const page = yield* getPage(service, "/nodes", { ...fresh, limit: 100 })
      expect(latestOf(page)).toEqual({
        semver: "2.0.0-rc.1",
        prerelease: "1.0.0-beta.11",
        "inactive-top": "1.0.0",
        "none-active": null,
        "no-versions": null,
        "host-a": "2.0.0",
        "host-any": "0.1.0",
        "host-split": "1.1.0",
        "host-pre": "5.0.0"
      })
      for (const node of page.nodes) {
        expect(node.latest_version?.version).toBe(cat.latestVersion(node.id!)?.version)
        if (node.latest_version) {
          expect(node.latest_version.status).toBe(active)
          expect(node.latest_version.node_id).toBe(node.id)
        } else {
          // absent, not null
          expect(Object.keys(node)).not.toContain("latest_version")
        }
      }
    }))

  it.effect("a release outranks its release candidate; 1.10.0 outranks 1.9.0", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* cat.add(service, { versions: [v("semver", "2.0.0", active)] })
      const page = yield* getPage(service, "/nodes", { ...fresh, node_id: ["semver"] })
      expect(page.nodes[0]!.latest_version?.version).toBe("2.0.0")
      // withdrawing 2.0.0 and the candidate leaves 1.10.0, not 1.9.0
      yield* service.writes.setVersionStatus("semver", "2.0.0", "NodeVersionStatusFlagged")
      yield* service.writes.setVersionStatus("semver", "2.0.0-rc.1", "NodeVersionStatusDeleted")
      for (const version of cat.versions) {
        if (version.node_id === "semver" && version.version.startsWith("2.")) {
          ;(version as { status?: VersionInput["status"] }).status = "NodeVersionStatusFlagged"
        }
      }
      const after = yield* getPage(service, "/nodes", { ...fresh, node_id: ["semver"] })
      expect(after.nodes[0]!.latest_version?.version).toBe("1.10.0")
      expect(cat.latestVersion("semver")?.version).toBe("1.10.0")
    }))

  it.effect("a node whose only Active version is withdrawn loses latest_version", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.setVersionStatus("host-any", "0.1.0", "NodeVersionStatusBanned")
      const page = yield* getPage(service, "/nodes", { ...fresh, node_id: ["host-any"] })
      expect(page.total).toBe(1)
      expect(page.nodes[0]).not.toHaveProperty("latest_version")
      yield* service.writes.setVersionStatus("host-any", "0.1.0", "NodeVersionStatusActive")
      const back = yield* getPage(service, "/nodes", { ...fresh, node_id: ["host-any"] })
      expect(back.nodes[0]!.latest_version?.version).toBe("0.1.0")
    }))

  it.effect("host_version keeps nodes with an admitting Active version, and nodes with none; latest_version is the newest admitted", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const hand: Record<string, Record<string, string>> = {
        "0.5.0": { "host-any": "0.1.0", "host-split": "1.0.0" },
        "1.1.0": { "host-a": "1.0.0", "host-any": "0.1.0" },
        "1.3.0": { "host-a": "1.5.0", "host-any": "0.1.0" },
        "1.4.7": { "host-a": "1.5.0", "host-any": "0.1.0", "host-split": "1.1.0" },
        "1.9.5": { "host-a": "1.5.0", "host-any": "0.1.0", "host-pre": "4.0.0" },
        // prereleases of the host are compared as semver does with includePrerelease
        "2.0.0-rc.2": { "host-a": "1.5.0", "host-any": "0.1.0", "host-pre": "5.0.0" },
        "2.0.0": { "host-a": "2.0.0", "host-any": "0.1.0" },
        "3.0.0": { "host-a": "2.0.0", "host-any": "0.1.0", "host-split": "1.0.0" }
      }
      // nodes with unrestricted Active versions are always there, and so are nodes with no
      // installable version at all (they claim nothing about hosts), without latest_version
      const unrestricted = { semver: "1.10.0", prerelease: "1.0.0-beta.11", "inactive-top": "1.0.0", "none-active": null, "no-versions": null }
      for (const [host, expected] of Object.entries(hand)) {
        const page = yield* getPage(service, "/nodes", { ...fresh, limit: 100, host_version: host })
        const model = cat.expected({ host_version: host })
        expect(ids(page.nodes)).toEqual(model.map((n) => n.id))
        expect(latestOf(page)).toEqual({ ...unrestricted, ...expected })
        for (const node of page.nodes) expect(node.latest_version?.version).toBe(cat.latestVersion(node.id!, host)?.version)
        expect(page.total).toBe(model.length)
      }
    }))

  it.effect("host_version tolerates a leading v and surrounding space; other spellings are 400", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const plain = yield* getPage(service, "/nodes", { ...fresh, limit: 100, host_version: "1.3.0" })
      expect(yield* getPage(service, "/nodes", { ...fresh, limit: 100, host_version: "v1.3.0" })).toEqual(plain)
      expect(yield* getPage(service, "/nodes", { ...fresh, limit: 100, host_version: " 1.3.0 " })).toEqual(plain)
      // "" and "unknown" mean no filter (test/Compat/Clients.test.ts)
      for (const bad of ["latest", "1.3", "1.x"]) {
        const e = expectError(yield* get(service, `/nodes${queryString({ host_version: bad })}`), 400, "bad_request")
        expect(e.message).toContain("host_version")
      }
    }))

  it.effect("host_version combines with pages and sort", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const sort = [{ column: "id", desc: true }] as const
      const walked = yield* walkPages(service, "/nodes", { ...fresh, host_version: "1.3.0", sort: ["id;desc"] }, 2)
      expect(ids(walked.nodes)).toEqual(cat.expected({ host_version: "1.3.0", sort }).map((n) => n.id))
    }))
})

onFreshService("GET /nodes: the host-version filter against its model", (it) => {
  const cat = new Catalogue()
  const statuses = [
    "NodeVersionStatusActive",
    "NodeVersionStatusPending",
    "NodeVersionStatusFlagged",
    "NodeVersionStatusBanned",
    "NodeVersionStatusDeleted"
  ] as const
  const ranges = ["", ">=1.0.0 <2.0.0", "^2.1", "<1.0.0 || >=3.0.0", ">=2.0.0-rc.1", "~1.4.0", "1.x || >=3", ">=9.0.0"]
  const semverText = fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 2 }))
    .map(([a, b, c]) => `${a}.${b}.${c}`)
  const version = fc.record({ version: semverText, status: fc.constantFrom(...statuses), range: fc.constantFrom(...ranges) })
  // a node: its versions (distinct version strings), none at all in some runs
  const node = fc.uniqueArray(version, { maxLength: 4, selector: (v) => v.version })
  const host = fc.tuple(semverText, fc.constantFrom("", "-rc.1")).map(([v, pre]) => v + pre)
  let run = 0

  it.effect("seeds", () =>
    Effect.gen(function*() {
      yield* cat.add(yield* Service, { publishers: [{ id: "pub" }] })
    }))

  it.effect(
    "the listed set is the model's: no installable version stays, all installable ones excluding the host is dropped",
    () =>
      forAll(
        { nodes: fc.array(node, { minLength: 1, maxLength: 6 }), host },
        ({ nodes, host }) =>
          Effect.gen(function*() {
            const service = yield* Service
            run += 1
            const ids = nodes.map((_, i) => `hv-${run}-${i}`)
            yield* cat.add(service, { nodes: ids.map((id) => ({ id, publisher_id: "pub" })) })
            yield* cat.add(service, {
              versions: nodes.flatMap((versions, i) =>
                versions.map((v): VersionInput => ({
                  node_id: ids[i]!,
                  version: v.version,
                  status: v.status,
                  ...(v.range === "" ? {} : { supported_host_version: v.range })
                })))
            })
            const page = yield* getPage(service, "/nodes", { ...fresh, limit: 100, node_id: ids, host_version: host })
            const model = cat.expected({ node_id: ids, host_version: host })
            expect(idsOf(page.nodes as ReadonlyArray<{ id: string }>)).toEqual(model.map((n) => n.id))
            expect(page.total).toBe(model.length)
            for (const listed of page.nodes) {
              expect(listed.latest_version?.version, listed.id).toBe(cat.latestVersion(listed.id!, host)?.version)
            }
          }),
        { numRuns: 40 }
      ),
    { timeout: 120_000 }
  )
})

onFreshService("GET /nodes: cache headers", (it) => {
  it.effect("latest=true bypasses the cache; answers carry an ETag and honour If-None-Match", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.upsertPublishers([{ id: "p" }])
      yield* service.writes.insertNodes([{ id: "n1", publisher_id: "p" }, { id: "n2", publisher_id: "p" }])

      const bypass = yield* get(service, "/nodes?latest=true")
      expect(bypass.status).toBe(200)
      expect(bypass.headers.get("x-cache")).toBe("bypass")
      const etag = bypass.headers.get("etag")
      expect(etag).toMatch(/^"[^"]+"$/)
      expect(decodeNodeList(bypass.body).total).toBe(2)
      expect((yield* get(service, "/nodes?latest=1")).headers.get("x-cache")).toBe("bypass")

      // the same page without latest=true: the same body and so the same ETag, hit or miss
      const cachedA = yield* get(service, "/nodes")
      const cachedB = yield* get(service, "/nodes")
      for (const answer of [cachedA, cachedB]) {
        expect(answer.status).toBe(200)
        expect(["hit", "miss"]).toContain(answer.headers.get("x-cache"))
        expect(answer.text).toBe(bypass.text)
        expect(answer.headers.get("etag")).toBe(etag)
      }
      expect(cachedA.headers.get("x-cache")).not.toBe("bypass")

      // If-None-Match: strong, weak, in a list, or * -> 304 with an empty body
      for (const inm of [etag!, `W/${etag}`, `"other", ${etag}`, "*"]) {
        for (const path of ["/nodes?latest=true", "/nodes"]) {
          const response = yield* get(service, path, { headers: { "if-none-match": inm } })
          expect(response.status).toBe(304)
          expect(response.text).toBe("")
          expect(response.headers.get("etag")).toBe(etag)
        }
      }
      // a stale tag gets the page
      const stale = yield* get(service, "/nodes?latest=true", { headers: { "if-none-match": "\"stale\"" } })
      expect(stale.status).toBe(200)
      expect(stale.text).toBe(bypass.text)

      // other pages have other tags, and a write changes the tag
      const other = yield* get(service, "/nodes?latest=true&limit=1")
      expect(other.headers.get("etag")).not.toBe(etag)
      yield* service.writes.updateNode("n1", { downloads: 9 })
      const changed = yield* get(service, "/nodes?latest=true", { headers: { "if-none-match": etag! } })
      expect(changed.status).toBe(200)
      expect(changed.headers.get("etag")).not.toBe(etag)
      expect(decodeNodeList(changed.body).nodes.find((n) => n.id === "n1")?.downloads).toBe(9)
    }))

  it.effect("a write through this instance is visible at once on the cached path", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.upsertPublishers([{ id: "cache-p" }])
      yield* service.writes.insertNodes([{ id: "cache-n", publisher_id: "cache-p" }])
      // the race is between the write's commit and the arrival of its notification: try often
      for (let i = 1; i <= 60; i++) {
        // fill the cache, write, and ask again straight away
        expect((yield* get(service, "/nodes?node_id=cache-n")).status).toBe(200)
        yield* service.writes.updateNode("cache-n", { downloads: 100 + i })
        const after = decodeNodeList((yield* get(service, "/nodes?node_id=cache-n")).body)
        expect(after.nodes[0]?.downloads).toBe(100 + i)
      }
    }))

  it.effect("members and tokens play no part in the public listing", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* addMember(service, "p", "someone", "owner")
      const token = yield* Effect.promise(() => service.token({ sub: "someone" }))
      const anonymous = yield* get(service, "/nodes?latest=true")
      const member = yield* get(service, "/nodes?latest=true", { token })
      expect(member.status).toBe(200)
      expect(member.text).toBe(anonymous.text)
    }))
})
