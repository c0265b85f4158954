/**
 * The host application's registry calls (issue 26, item 8), replayed as ComfyUI_frontend
 * `src/services/comfyRegistryService.ts` makes them (axios, `Content-Type: application/json` on
 * every request, `params` serialised as a query) against an instance that answers in the clients'
 * words (ANSWER_ALIASES=true), with every field the service then reads:
 * `listAllPacks`, `search` (`comfy_node_search`), `getPackById`, `getPackVersions`,
 * `getPackByVersion`, `getPublisherById`, `listPacksForPublisher` (`include_banned`),
 * `postPackReview` (`star` in the query, no body), `getNodeDefs` and `getNodeDef` (the version's
 * `comfy-nodes`, an array, found by `comfy_node_name`), and `packNodesAvailable`
 * (`latest_version.comfy_node_extract_status === 'success'`); and the conflict check's read of the
 * packs' `supported_comfyui_version` and `supported_os`.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { seedActors, tokensFor } from "../support/Actors.ts"
import { Catalogue } from "../support/Catalogue.ts"
import { expectStatus, send } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"

const tokens = tokensFor("stranger", "siteAdmin")

/** `registryApiClient`: axios.create({ headers: { 'Content-Type': 'application/json' } }). */
const axiosCall = (service: Running, method: string, path: string, token?: string) =>
  Effect.map(send<any>(service, method, path, { token, headers: { "content-type": "application/json", accept: "application/json, text/plain, */*" } }), (answer) =>
    expectStatus(answer, 200, `${method} ${path}`).body)

layer(Service.layer((c) => ({ ...c, aliases: { ...c.aliases, inAnswers: true } })), { excludeTestServices: true })(
  "ComfyUI_frontend comfyRegistryService.ts, replayed",
  (it) => {
    it.effect("setup: a pack with an extracted version, another whose extraction is pending", () =>
      Effect.gen(function*() {
        const service = yield* Service
        yield* new Catalogue().add(service, {
          publishers: [{ id: "impact" }, { id: "acme" }],
          nodes: [
            { id: "impact-pack", publisher_id: "impact", name: "Impact Pack", supported_os: ["linux", "windows"], supported_host_version: ">=0.3.0" },
            { id: "fresh-pack", publisher_id: "impact", name: "Fresh Pack" }
          ],
          versions: [
            { node_id: "impact-pack", version: "8.1.0", status: "NodeVersionStatusActive", supported_host_version: ">=0.3.0" },
            { node_id: "fresh-pack", version: "0.1.0", status: "NodeVersionStatusActive", host_node_extract_status: "pending" }
          ]
        })
        yield* seedActors(service, tokens)
        // the extractor's records: the extraction is then a success
        const records = [{ host_node_name: "SAMLoader", category: "ImpactPack" }, { host_node_name: "Detailer (SEGS)" }]
        expectStatus(yield* send(service, "POST", "/nodes/impact-pack/versions/8.1.0/comfy-nodes", { token: tokens.siteAdmin, body: records }), 201, "records")
      }))

    it.effect("listAllPacks, search and the conflict check's fields", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const all = yield* axiosCall(service, "GET", "/nodes?page=1&limit=64")
        const impact = all.nodes.find((n: any) => n.id === "impact-pack")
        expect({ total: all.total, totalPages: all.totalPages }).toEqual({ total: 2, totalPages: 1 })
        // the conflict check: packs' supported_comfyui_version and supported_os
        expect(impact).toMatchObject({ supported_comfyui_version: ">=0.3.0", supported_os: ["linux", "windows"] })
        const byNode = yield* axiosCall(service, "GET", "/nodes/search?comfy_node_search=SAMLoader&limit=16&page=1")
        expect(byNode.nodes.map((n: any) => n.id)).toEqual(["impact-pack"])
        const byText = yield* axiosCall(service, "GET", "/nodes/search?search=impact&limit=16&page=1")
        expect(byText.nodes.map((n: any) => n.id)).toContain("impact-pack")
      }))

    it.effect("packNodesAvailable: success once extracted, not while pending", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const available = (node: any) => node.latest_version?.comfy_node_extract_status === "success"
        expect(available(yield* axiosCall(service, "GET", "/nodes/impact-pack"))).toBe(true)
        expect(available(yield* axiosCall(service, "GET", "/nodes/fresh-pack"))).toBe(false)
        const all = yield* axiosCall(service, "GET", "/nodes?page=1&limit=64")
        expect(all.nodes.filter(available).map((n: any) => n.id)).toEqual(["impact-pack"])
      }))

    it.effect("getNodeDefs and getNodeDef: the version's comfy-nodes, an array, found by comfy_node_name", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const defs = yield* axiosCall(service, "GET", "/nodes/impact-pack/versions/8.1.0/comfy-nodes")
        expect(Array.isArray(defs)).toBe(true)
        const def = defs.find((nodeDef: any) => nodeDef.comfy_node_name === "SAMLoader")
        expect(def).toMatchObject({ comfy_node_name: "SAMLoader", category: "ImpactPack", policy: "ComfyNodePolicyActive" })
      }))

    it.effect("getPackById, getPackVersions, getPackByVersion, getPublisherById, listPacksForPublisher", () =>
      Effect.gen(function*() {
        const service = yield* Service
        expect((yield* axiosCall(service, "GET", "/nodes/impact-pack")).name).toBe("Impact Pack")
        const versions = yield* axiosCall(service, "GET", "/nodes/impact-pack/versions")
        expect(versions.map((v: any) => v.version)).toEqual(["8.1.0"])
        const version = yield* axiosCall(service, "GET", "/nodes/impact-pack/versions/8.1.0")
        expect(version).toMatchObject({ version: "8.1.0", supported_comfyui_version: ">=0.3.0", comfy_node_extract_status: "success" })
        expect((yield* axiosCall(service, "GET", "/publishers/impact")).id).toBe("impact")
        const packs = yield* axiosCall(service, "GET", "/publishers/impact/nodes?include_banned=true", tokens.siteAdmin)
        expect(packs.map((n: any) => n.id).sort()).toEqual(["fresh-pack", "impact-pack"])
      }))

    it.effect("postPackReview: star in the query, no body; the pack's rating follows", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const node = yield* axiosCall(service, "POST", "/nodes/impact-pack/reviews?star=4", tokens.stranger)
        expect(node).toMatchObject({ id: "impact-pack", rating: 4 })
      }))
  }
)
