/**
 * GET /nodes/search over loopback HTTP against the real database: each searched field finds its
 * node, ranking, prefixes and identifier parts, what is never found (banned, deleted, of a banned
 * publisher), changes seen at once (triggers), parameters, and properties of paging and of
 * arbitrary search text.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import type { NodeInput } from "../../scripts/lib/Seeder.ts"
import { Catalogue, decodeNodeList, getPage, ids, type Query, queryString, walkPages } from "../support/Catalogue.ts"
import { clientFor } from "../support/Client.ts"
import { expectBadRequest, expectError, expectStatus, get, getText, send } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"
import { forAll } from "../support/Property.ts"

/** A search text that is not blank yet has no letter or digit: nothing to look for, a 400. */
const nothingToLookFor = (text: string) => text.trim() !== "" && !/[\p{L}\p{N}]/u.test(text)

/** The ids `GET /nodes/search` answers on its first page of 500, through the typed client. */
const found = (
  service: Running,
  search: string,
  more: { readonly supported_os?: string; readonly supported_accelerator?: string } = {}
) =>
  Effect.gen(function*() {
    const client = yield* clientFor(service)
    const page = yield* client.api.catalog.searchNodes({ query: { search, limit: 500, ...more } })
    expect(page.total).toBe(page.nodes.length)
    return page.nodes.map((n) => n.id)
  })

const recordHostNodes = (service: Running, token: string, nodeId: string, version: string, names: ReadonlyArray<string>) =>
  Effect.map(
    send(service, "POST", `/nodes/${nodeId}/versions/${version}/host-nodes`, {
      token,
      body: names.map((host_node_name) => ({ host_node_name }))
    }),
    (answer) => expectStatus(answer, 201, `POST host-nodes of ${nodeId}@${version}`)
  )

layer(Service.layer(), { excludeTestServices: true })("GET /nodes/search", (it) => {
  const cat = new Catalogue()
  let admin = ""
  const nodes: Array<NodeInput> = [
    { id: "comfyui-impact-pack", publisher_id: "acme", name: "Impact Pack", downloads: 10 },
    { id: "alpha-node", publisher_id: "acme", name: "Quasar Tools" },
    { id: "tagged", publisher_id: "acme", tags: ["zebrafish", "video"] },
    { id: "authored", publisher_id: "acme", author: "Marguerite Yourcenar" },
    { id: "described", publisher_id: "acme", description: "Converts workflows into lullabies." },
    { id: "hosting", publisher_id: "acme" },
    { id: "name-match", publisher_id: "acme", name: "Nebula", downloads: 1 },
    { id: "desc-match", publisher_id: "acme", description: "A nebula of small things", downloads: 1000 },
    { id: "image-tools", publisher_id: "acme", name: "Image Tools", supported_os: ["Linux"] },
    { id: "snake_case_pack", publisher_id: "acme", name: "Snake", supported_os: ["Windows"] },
    { id: "banned-quasar", publisher_id: "acme", name: "Quasar Banned", status: "NodeStatusBanned" },
    { id: "deleted-quasar", publisher_id: "acme", name: "Quasar Deleted", status: "NodeStatusDeleted" },
    { id: "shady-quasar", publisher_id: "shady", name: "Quasar Shady" },
    { id: "renamed", publisher_id: "acme", name: "Oldname Thing" },
    // host-node names: an exact name, a longer one it starts, one it is inside
    { id: "up-exact", publisher_id: "acme", downloads: 0 },
    { id: "up-prefix", publisher_id: "acme", downloads: 50 },
    { id: "up-infix", publisher_id: "acme", downloads: 100 },
    // repositories in the forms publishers write them
    { id: "repo-plain", publisher_id: "acme", downloads: 10, repository: "https://github.com/Acme-Org/Widget-Pack" },
    { id: "repo-git", publisher_id: "acme", downloads: 5, repository: "https://github.com/acme-org/widget-pack-extra.git" },
    { id: "repo-scp", publisher_id: "acme", downloads: 1, repository: "git@github.com:other/widget-pack.git" }
  ]
  /** Nodes with host-node names, recorded on their 1.0.0. */
  const hostNodes: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
    ["up-exact", ["ZoomUpscaler"]],
    ["up-prefix", ["ZoomUpscalerPro"]],
    ["up-infix", ["MegaZoomUpscaler"]],
    ["repo-plain", ["WidgetUpscaler"]]
  ]

  it.effect("seeds", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* cat.add(service, {
        publishers: [{ id: "acme" }, { id: "shady", status: "PublisherStatusBanned" }],
        nodes,
        versions: [
          { node_id: "hosting", version: "1.0.0", status: "NodeVersionStatusActive" },
          { node_id: "hosting", version: "0.9.0", status: "NodeVersionStatusActive" },
          { node_id: "comfyui-impact-pack", version: "1.2.0", status: "NodeVersionStatusActive" },
          { node_id: "comfyui-impact-pack", version: "1.10.0", status: "NodeVersionStatusActive" },
          ...hostNodes.map(([node_id]) => ({ node_id, version: "1.0.0", status: "NodeVersionStatusActive" as const }))
        ]
      })
      admin = yield* Effect.promise(() => service.token({ sub: "root", admin: true }))
      yield* recordHostNodes(service, admin, "hosting", "1.0.0", ["OrbitalSamplerAdvanced", "PlainHostNode"])
      yield* recordHostNodes(service, admin, "hosting", "0.9.0", ["LegacyWidget"])
      for (const [nodeId, names] of hostNodes) yield* recordHostNodes(service, admin, nodeId, "1.0.0", names)
    }))

  it.effect("each searched field finds its node: id, name, tags, author, description, host-node names", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expect(yield* found(service, "comfyui-impact-pack")).toEqual(["comfyui-impact-pack"])
      expect(yield* found(service, "Quasar")).toEqual(["alpha-node"])
      expect(yield* found(service, "zebrafish")).toEqual(["tagged"])
      expect(yield* found(service, "yourcenar")).toEqual(["authored"])
      expect(yield* found(service, "lullabies")).toEqual(["described"])
      expect(yield* found(service, "OrbitalSamplerAdvanced")).toEqual(["hosting"])
      expect(yield* found(service, "LegacyWidget")).toEqual(["hosting"])
    }))

  it.effect("identifiers are found by their parts: dashes, underscores and camel case", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const term of ["impact", "impact-pack", "comfyui impact", "IMPACT_PACK"]) {
        expect(yield* found(service, term), term).toEqual(["comfyui-impact-pack"])
      }
      expect(yield* found(service, "case")).toEqual(["snake_case_pack"])
      expect(yield* found(service, "orbital sampler")).toEqual(["hosting"])
    }))

  it.effect("the last word matches as a prefix; earlier words, negated and quoted ones do not", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expect(yield* found(service, "imag")).toEqual(["image-tools"])
      expect(yield* found(service, "image-to")).toEqual(["image-tools"])
      expect(yield* found(service, "imag tools")).toEqual([])
      expect(yield* found(service, "\"imag\"")).toEqual([])
      expect(yield* found(service, "tools -image")).toEqual(["alpha-node"])
    }))

  it.effect("websearch syntax: phrases, or, negation", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expect(yield* found(service, "\"quasar tools\"")).toEqual(["alpha-node"])
      expect(yield* found(service, "\"tools quasar\"")).toEqual([])
      expect((yield* found(service, "zebrafish or lullabies")).sort()).toEqual(["described", "tagged"])
    }))

  it.effect("a name match ranks above a description match, whatever the downloads", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expect(yield* found(service, "nebula")).toEqual(["name-match", "desc-match"])
    }))

  it.effect("banned and deleted nodes, and nodes of a banned publisher, are never found", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expect(yield* found(service, "quasar")).toEqual(["alpha-node"])
      expect(yield* found(service, "shady")).toEqual([])
      expect(yield* found(service, "banned-quasar")).toEqual([])
    }))

  it.effect("a found node is the same JSON as GET /nodes gives, latest_version included", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const searched = yield* getPage(service, "/nodes/search", { search: "impact" })
      const listed = yield* getPage(service, "/nodes", { node_id: ["comfyui-impact-pack"], latest: "true" })
      expect(searched.nodes).toEqual(listed.nodes)
      expect(searched.nodes[0]?.latest_version?.version).toBe("1.10.0")
    }))

  it.effect("supported_os and supported_accelerator filter like GET /nodes", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expect(yield* found(service, "image or snake", { supported_os: "linux" })).toEqual(["image-tools"])
      expect(yield* found(service, "image or snake", { supported_os: "WINDOWS" })).toEqual(["snake_case_pack"])
      expect((yield* found(service, "image or snake", { supported_accelerator: "cuda" })).sort()).toEqual(["image-tools", "snake_case_pack"])
    }))

  it.effect("changes are seen at once: renames, tags, bans, host-node records and deleted versions", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expect(yield* found(service, "oldname")).toEqual(["renamed"])
      yield* service.writes.updateNode("renamed", { name: "Newname Thing", tags: ["periwinkle"] })
      expect(yield* found(service, "oldname")).toEqual([])
      expect(yield* found(service, "newname")).toEqual(["renamed"])
      expect(yield* found(service, "periwinkle")).toEqual(["renamed"])

      yield* service.writes.updateNode("renamed", { status: "NodeStatusBanned" })
      expect(yield* found(service, "newname")).toEqual([])
      yield* service.writes.updateNode("renamed", { status: "NodeStatusActive" })
      expect(yield* found(service, "newname")).toEqual(["renamed"])
      yield* service.writes.setPublisherStatus("shady", "PublisherStatusActive")
      expect(yield* found(service, "shady")).toEqual(["shady-quasar"])
      yield* service.writes.setPublisherStatus("shady", "PublisherStatusBanned")
      expect(yield* found(service, "shady")).toEqual([])

      expect(yield* found(service, "mercator")).toEqual([])
      yield* service.writes.insertVersions([{ node_id: "renamed", version: "1.0.0", status: "NodeVersionStatusActive" }])
      yield* recordHostNodes(service, admin, "renamed", "1.0.0", ["MercatorProjection"])
      expect(yield* found(service, "mercator")).toEqual(["renamed"])
      yield* service.writes.setVersionStatus("renamed", "1.0.0", "NodeVersionStatusDeleted")
      expect(yield* found(service, "mercator")).toEqual([])
      yield* service.writes.setVersionStatus("renamed", "1.0.0", "NodeVersionStatusActive")
      expect(yield* found(service, "mercator")).toEqual(["renamed"])
    }))

  it.effect("page and limit as in GET /nodes: defaults, clamping, a page past the end", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const first = yield* getPage(service, "/nodes/search", { search: "quasar or nebula or impact" })
      expect({ ...first, nodes: first.nodes.length }).toEqual({ limit: 10, nodes: 4, page: 1, total: 4, totalPages: 1 })
      const clamped = yield* getPage(service, "/nodes/search", { search: "nebula", limit: 501 })
      expect(clamped.limit).toBe(500)
      const past = yield* getPage(service, "/nodes/search", { search: "nebula", page: 3, limit: 1 })
      expect({ ...past, nodes: past.nodes.length }).toEqual({ limit: 1, nodes: 0, page: 3, total: 2, totalPages: 2 })
    }))

  it.effect("bad parameters are 400 naming the parameter; unknown ones are ignored", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const cases: ReadonlyArray<readonly [string, string]> = [
        [`search=${"a".repeat(201)}`, "search"],
        ["search=a%00b", "search"],
        ["search=a&page=0", "page"],
        ["search=a&page=x", "page"],
        ["search=a&limit=-1", "limit"],
        ["search=a&limit=1.5", "limit"],
        [`search=a&supported_os=${"x".repeat(201)}`, "supported_os"]
      ]
      for (const [query, param] of cases) expectBadRequest(yield* get(service, `/nodes/search?${query}`), param)
      const ignored = yield* getPage(service, "/nodes/search", { search: "nebula", sort: "nonsense", whatever: "1" })
      expect(ids(ignored.nodes)).toEqual(["name-match", "desc-match"])
    }))

  /** The ids a raw `GET /nodes/search` answers on its first page of 500 (all of them). */
  const searched = (service: Running, q: Query, token?: string) =>
    Effect.map(getPage(service, "/nodes/search", { ...q, limit: 500 }, token), (page) => {
      expect(page.total).toBe(page.nodes.length)
      return ids(page.nodes)
    })

  it.effect("no criterion lists every listed node in GET /nodes's default order; blank criteria are none", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const listed = yield* getPage(service, "/nodes", { limit: 500, latest: "true" })
      expect(listed.total).toBeGreaterThan(10)
      for (const q of [{}, { search: "" }, { search: "  ", host_node_search: "", repository_url_search: " " }]) {
        const page = yield* getPage(service, "/nodes/search", { ...q, limit: 500 })
        expect(page, JSON.stringify(q)).toEqual(listed)
      }
      // paged like GET /nodes, filters included
      const second = yield* getPage(service, "/nodes/search", { page: 2, limit: 3 })
      expect(ids(second.nodes)).toEqual(ids(listed.nodes).slice(3, 6))
      const linux = yield* getPage(service, "/nodes", { supported_os: "linux", limit: 500 })
      expect(yield* searched(service, { supported_os: "linux" })).toEqual(ids(linux.nodes))
    }))

  it.effect("host_node_search: host-node names by substring, case-insensitive; exact names first, then prefixes", () =>
    Effect.gen(function*() {
      const service = yield* Service
      // what ComfyUI_frontend (src/services/providers/registrySearchProvider.ts) sends for a node search:
      // the name alone, with limit and page; its alias comfy_node_search is mapped onto host_node_search
      const client = yield* clientFor(service)
      const page = yield* client.api.catalog.searchNodes({ query: { host_node_search: "ZoomUpscaler", limit: 20, page: 1 } })
      expect(page.nodes.map((n) => n.id)).toEqual(["up-exact", "up-prefix", "up-infix"])
      expect(yield* searched(service, { host_node_search: "zoomupscaler" })).toEqual(["up-exact", "up-prefix", "up-infix"])
      // no exact name nor prefix: the registry's order (downloads)
      expect(yield* searched(service, { host_node_search: "Upscaler" })).toEqual(["up-infix", "up-prefix", "repo-plain", "up-exact"])
      expect(yield* searched(service, { host_node_search: "  UPSCALERPRO " })).toEqual(["up-prefix"])
      expect(yield* searched(service, { host_node_search: "LegacyWidget" })).toEqual(["hosting"])
      expect(yield* searched(service, { host_node_search: "Sampler" })).toEqual(["hosting"])
      // LIKE's wildcards are plain characters here; a pattern never spans two names
      expect(yield* searched(service, { host_node_search: "Zoom%Upscaler" })).toEqual([])
      expect(yield* searched(service, { host_node_search: "Zoom_pscaler" })).toEqual([])
      expect(yield* searched(service, { host_node_search: "Advanced\nPlain" })).toEqual([])
      expect(yield* searched(service, { host_node_search: "NoSuchHostNode" })).toEqual([])
    }))

  it.effect("repository_url_search: a repository URL or a part of one, with or without scheme, .git or trailing slash", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
        // the exact repository first, then the ones containing it
        ["https://github.com/Acme-Org/Widget-Pack", ["repo-plain", "repo-git"]],
        ["github.com/acme-org/widget-pack/", ["repo-plain", "repo-git"]],
        ["https://github.com/acme-org/widget-pack-extra", ["repo-git"]],
        ["http://www.github.com/Acme-Org/Widget-Pack-Extra.git/", ["repo-git"]],
        ["git@github.com:other/widget-pack.git", ["repo-scp"]],
        ["https://github.com/other/widget-pack", ["repo-scp"]],
        ["ACME-ORG", ["repo-plain", "repo-git"]],
        ["widget-pack", ["repo-plain", "repo-git", "repo-scp"]],
        ["https://nowhere.example/acme-org/widget-pack", []],
        ["widget%pack", []]
      ]
      for (const [part, expected] of cases) expect(yield* searched(service, { repository_url_search: part }), part).toEqual(expected)
    }))

  it.effect("criteria combine with AND, and with the filters", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expect(yield* searched(service, { host_node_search: "upscaler", repository_url_search: "widget" })).toEqual(["repo-plain"])
      expect(yield* searched(service, { search: "mega", host_node_search: "upscaler" })).toEqual(["up-infix"])
      expect(yield* searched(service, { search: "nebula", host_node_search: "upscaler" })).toEqual([])
      expect(yield* searched(service, { host_node_search: "upscaler", supported_os: "linux" })).toEqual(["up-infix", "up-prefix", "repo-plain", "up-exact"])
      expect(yield* searched(service, { search: "image", supported_os: "windows" })).toEqual([])
    }))

  it.effect("include_banned adds banned nodes and those of banned publishers for site admins; others get 403", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const stranger = yield* Effect.promise(() => service.token({ sub: "stan" }))
      expect((yield* searched(service, { search: "quasar", include_banned: "true" }, admin)).sort())
        .toEqual(["alpha-node", "banned-quasar", "shady-quasar"])
      const everything = yield* searched(service, { include_banned: "true" }, admin)
      expect(everything).toEqual(expect.arrayContaining(["banned-quasar", "shady-quasar", "alpha-node"]))
      expect(everything).not.toContain("deleted-quasar")
      // registry-web (components/nodes/AdminCreateNodeFormModal.tsx) looks for similar nodes as a site admin
      // with include_banned=true and the host-node search (comfy_node_search there, mapped onto ours)
      expect(yield* searched(service, { include_banned: "true", host_node_search: "ZoomUpscaler" }, admin))
        .toEqual(["up-exact", "up-prefix", "up-infix"])
      for (const token of [undefined, stranger]) {
        expectError(yield* get(service, "/nodes/search?include_banned=true&search=quasar", { token }), 403, "forbidden")
      }
      // asking not to include them is anyone's right
      expect(yield* searched(service, { search: "quasar", include_banned: "false" })).toEqual(["alpha-node"])
    }))

  it.effect(
    "the criteria's validation: text within its length and without NUL (and for search, with a letter or digit) is 200, else 400 naming the parameter",
    () =>
      forAll(
        {
          param: fc.constantFrom("search", "host_node_search", "repository_url_search"),
          value: fc.oneof(
            fc.string({ unit: fc.constantFrom(..."%_\\:/@.- aZ9é\u0000"), maxLength: 30 }),
            fc.string({ unit: "grapheme", maxLength: 40 }),
            fc.integer({ min: 195, max: 2005 }).map((n) => "x".repeat(n))
          )
        },
        ({ param, value }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const answer = yield* getText(service, `/nodes/search${queryString({ [param]: value })}`)
            const max = param === "repository_url_search" ? 2000 : 200
            if (value.includes("\u0000") || value.length > max || (param === "search" && nothingToLookFor(value))) {
              expectBadRequest({ ...answer, body: JSON.parse(answer.text) }, param)
            } else {
              expectStatus(answer, 200, `${param} ${JSON.stringify(value)}`)
              decodeNodeList(JSON.parse(answer.text))
            }
          }),
        { numRuns: 100 }
      ),
    { timeout: 120_000 }
  )

  it.effect(
    "include_banned: true/1 and false/0 are read, anything else is 400 naming it",
    () =>
      forAll(
        { value: fc.oneof(fc.constantFrom("true", "false", "1", "0", "TRUE", "yes", ""), fc.string({ maxLength: 6 })) },
        ({ value }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const answer = yield* get(service, `/nodes/search${queryString({ include_banned: value, search: "quasar" })}`, { token: admin })
            if (["true", "1"].includes(value)) {
              expect(ids(decodeNodeList(expectStatus(answer, 200, value).body).nodes).sort()).toEqual(["alpha-node", "banned-quasar", "shady-quasar"])
            } else if (["false", "0"].includes(value)) {
              expect(ids(decodeNodeList(expectStatus(answer, 200, value).body).nodes)).toEqual(["alpha-node"])
            } else {
              expectBadRequest(answer, "include_banned")
            }
          }),
        { numRuns: 60 }
      ),
    { timeout: 60_000 }
  )

  it.effect(
    "any search text with a letter or digit is answered 200 with a node list, any other a 400 naming search, never 5xx",
    () =>
      forAll(
        {
          search: fc.oneof(
            fc.string({ unit: fc.constantFrom(..."&|!():*'\\\"<->-_. aZ9é"), minLength: 1, maxLength: 40 }),
            fc.string({ unit: "grapheme", minLength: 1, maxLength: 60 })
          )
        },
        ({ search }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const answer = yield* getText(service, `/nodes/search${queryString({ search })}`)
            if (search.includes("\u0000") || search.length > 200 || nothingToLookFor(search)) {
              expectBadRequest({ ...answer, body: JSON.parse(answer.text) }, "search")
            } else {
              expectStatus(answer, 200, `search ${JSON.stringify(search)}`)
              decodeNodeList(JSON.parse(answer.text))
            }
          }),
        { numRuns: 150 }
      ),
    { timeout: 120_000 }
  )
})

// --- paging over random catalogues ----------------------------------------------------------------

const words = ["alpha", "bravo", "charlie", "delta", "echo"] as const

const arbNode = fc.record({
  name: fc.subarray([...words]),
  description: fc.subarray([...words]),
  tags: fc.subarray([...words]),
  downloads: fc.constantFrom(0, 5, 5, 100),
  search_ranking: fc.option(fc.constantFrom(1, 2), { nil: undefined }),
  status: fc.constantFrom("NodeStatusActive", "NodeStatusActive", "NodeStatusActive", "NodeStatusBanned", "NodeStatusDeleted") as fc.Arbitrary<
    NonNullable<NodeInput["status"]>
  >
})

let runs = 0

/** Three letters per run: a run's words are no prefix of another run's. */
const runTag = (run: number) => [2, 1, 0].map((i) => String.fromCharCode(97 + Math.floor(run / 26 ** i) % 26)).join("")

layer(Service.layer(), { excludeTestServices: true })("GET /nodes/search: paging", (it) => {
  it.effect(
    "walking the pages yields every match exactly once, in the order of one big page, with the right total",
    () =>
      forAll(
        {
          catalogue: fc.array(arbNode, { maxLength: 25 }),
          term: fc.constantFrom(...words),
          limit: fc.integer({ min: 1, max: 7 })
        },
        ({ catalogue, limit, term }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const run = ++runs
            const tag = runTag(run)
            const word = (w: string) => `${w}${tag}`
            const cat = new Catalogue()
            const nodes: Array<NodeInput> = catalogue.map((n, i) => ({
              id: `s${run}-${i}`,
              publisher_id: "pub",
              name: n.name.map(word).join(" "),
              description: n.description.map(word).join(" "),
              tags: n.tags.map(word),
              downloads: n.downloads,
              status: n.status,
              ...(n.search_ranking === undefined ? {} : { search_ranking: n.search_ranking })
            }))
            yield* cat.add(service, { publishers: [{ id: "pub" }], nodes })
            const expected = catalogue.flatMap((n, i) =>
              n.status === "NodeStatusActive" && [n.name, n.description, n.tags].some((field) => field.includes(term))
                ? [`s${run}-${i}`]
                : []
            )
            const search = word(term)
            const walked = yield* walkPages(service, "/nodes/search", { search }, limit)
            expect(walked.total).toBe(expected.length)
            const walkedIds = ids(walked.nodes)
            expect(new Set(walkedIds).size).toBe(walkedIds.length)
            expect([...walkedIds].sort()).toEqual([...expected].sort())
            const whole = yield* getPage(service, "/nodes/search", { search, limit: 500 })
            expect(walkedIds).toEqual(ids(whole.nodes))
          }),
        { numRuns: 20 }
      ),
    { timeout: 180_000 }
  )
})
