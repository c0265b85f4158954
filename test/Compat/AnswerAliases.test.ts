/**
 * The answer vocabulary (issue 26, item 1: ANSWER_ALIASES). On, every answer the clients in the
 * field read carries their words beside the interface's: the host application's conflict check
 * reads `supported_comfyui_version` of `POST /bulk/nodes/versions` (ComfyUI_frontend
 * src/services/comfyRegistryService.ts, `getBulkNodeVersions`), the web front-end reads
 * `github_stars`, `preempted_comfy_node_names`, `comfy_node_extract_status`, `comfy_node_name` and
 * the `ComfyNodePolicy…` values (registry-web src/api/generated.ts). Off (the default), none of
 * these words is in any answer, and the answers are the interface's alone. The typed client reads
 * an instance with it on. The fast path against the typed encoding under both settings is in
 * Catalog/FastPath.prop.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { seedActors, tokensFor } from "../support/Actors.ts"
import { Catalogue } from "../support/Catalogue.ts"
import { bearerClient } from "../support/Client.ts"
import { expectStatus, get, send, sendText } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"

const tokens = tokensFor("siteAdmin")

const seed = (service: Running) =>
  Effect.gen(function*() {
    yield* new Catalogue().add(service, {
      publishers: [{ id: "acme" }],
      nodes: [{
        id: "loader",
        publisher_id: "acme",
        repohost_stars: 42,
        supported_host_version: ">=0.3.0",
        supported_host_frontend_version: ">=1.2.0",
        preempted_host_node_names: ["OldLoader"]
      }],
      versions: [{
        node_id: "loader",
        version: "1.0.0",
        status: "NodeVersionStatusActive",
        supported_host_version: ">=0.3.0 <0.4.0",
        supported_host_frontend_version: ">=1.2.0"
      }]
    })
    yield* seedActors(service, tokens)
    yield* send(service, "POST", "/nodes/loader/versions/1.0.0/host-nodes", {
      token: tokens.siteAdmin,
      body: [{ host_node_name: "FancyLoader", policy: "HostNodePolicyLocalOnly" }]
    })
  })

/** Every answer of the routes the clients read, as text. */
const answers = (service: Running) =>
  Effect.gen(function*() {
    const paths = [
      "/nodes?latest=true",
      "/nodes?comfyui_version=0.3.5",
      "/nodes/search?search=loader",
      "/nodes/loader",
      "/nodes/loader/versions",
      "/nodes/loader/versions/1.0.0",
      "/nodes/loader/versions/1.0.0/host-nodes",
      "/nodes/loader/versions/1.0.0/host-nodes/FancyLoader",
      "/host-nodes?host_node_name=FancyLoader",
      "/host-nodes/FancyLoader/node",
      "/publishers/acme/nodes"
    ]
    const texts: Record<string, string> = {}
    for (const path of paths) texts[path] = expectStatus(yield* sendText(service, "GET", path, { token: tokens.siteAdmin }), 200, path).text
    const bulk = yield* sendText(service, "POST", "/bulk/nodes/versions", { body: { node_versions: [{ node_id: "loader", version: "1.0.0" }] } })
    texts["POST /bulk/nodes/versions"] = expectStatus(bulk, 200, "bulk").text
    return texts
  })

const clientWords = /comfyui|comfy_node|github|ComfyNode/

layer(Service.layer(), { excludeTestServices: true })("ANSWER_ALIASES off (the default)", (it) => {
  it.effect("no answer the clients read carries any of their words", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* seed(service)
      for (const [path, text] of Object.entries(yield* answers(service))) expect(text, path).not.toMatch(clientWords)
    }))
})

layer(Service.layer((c) => ({ ...c, aliases: { ...c.aliases, inAnswers: true } })), { excludeTestServices: true })(
  "ANSWER_ALIASES=true",
  (it) => {
    it.effect("setup", () => Effect.flatMap(Service, seed))

    it.effect("the host application's conflict check reads the version's host range from the bulk answer", () =>
      Effect.gen(function*() {
        const service = yield* Service
        // ComfyUI_frontend comfyRegistryService.ts getBulkNodeVersions: { node_versions: [{ node_id, version }] }
        const answer = yield* send<{ node_versions: Array<{ status: string; node_version: Record<string, unknown> }> }>(
          service,
          "POST",
          "/bulk/nodes/versions",
          { body: { node_versions: [{ node_id: "loader", version: "1.0.0" }] } }
        )
        const version = expectStatus(answer, 200, "bulk").body.node_versions[0]!.node_version
        expect(version.supported_comfyui_version).toBe(">=0.3.0 <0.4.0")
        expect(version.supported_comfyui_frontend_version).toBe(">=1.2.0")
        // and the interface's own names, beside them
        expect(version.supported_host_version).toBe(">=0.3.0 <0.4.0")
      }))

    it.effect("a node, in a listing, in search and on its own, carries the clients' words beside the interface's", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const listed = expectStatus(yield* get(service, "/nodes?latest=true"), 200, "list").body as { nodes: Array<Record<string, unknown>> }
        const found = expectStatus(yield* get(service, "/nodes/search?search=loader"), 200, "search").body as { nodes: Array<Record<string, unknown>> }
        const own = expectStatus(yield* get(service, "/nodes/loader"), 200, "node").body as Record<string, unknown>
        for (const [what, node] of [["list", listed.nodes[0]!], ["search", found.nodes[0]!], ["node", own]] as const) {
          expect(node, what).toMatchObject({
            github_stars: 42,
            repohost_stars: 42,
            supported_comfyui_version: ">=0.3.0",
            supported_host_version: ">=0.3.0",
            supported_comfyui_frontend_version: ">=1.2.0",
            preempted_comfy_node_names: ["OldLoader"],
            preempted_host_node_names: ["OldLoader"],
            // the records posted in the set-up made the extraction a success (ComfyUI_frontend packNodesAvailable reads it)
            latest_version: {
              supported_comfyui_version: ">=0.3.0 <0.4.0",
              supported_comfyui_frontend_version: ">=1.2.0",
              host_node_extract_status: "success",
              comfy_node_extract_status: "success"
            }
          })
        }
      }))

    it.effect("host-node records carry comfy_node_name and the policy in the clients' word", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const records = expectStatus(yield* get(service, "/nodes/loader/versions/1.0.0/host-nodes"), 200, "records").body as {
          host_nodes?: Array<Record<string, unknown>>
        } | Array<Record<string, unknown>>
        const list = Array.isArray(records) ? records : records.host_nodes ?? []
        expect(list[0]).toMatchObject({ host_node_name: "FancyLoader", comfy_node_name: "FancyLoader", policy: "ComfyNodePolicyLocalOnly" })
        // registry-web's ListAllComfyNodes200: { comfy_nodes, total }, on the path it calls
        const all = expectStatus(yield* get(service, "/comfy-nodes?comfy_node_name=FancyLoader"), 200, "all records").body as Record<string, unknown>
        expect(all.comfy_nodes).toEqual(all.host_nodes)
        expect(all.comfy_nodes).toMatchObject([{ comfy_node_name: "FancyLoader", policy: "ComfyNodePolicyLocalOnly" }])
        const one = expectStatus(yield* get(service, "/nodes/loader/versions/1.0.0/host-nodes/FancyLoader"), 200, "record").body
        expect(one).toMatchObject({ comfy_node_name: "FancyLoader", policy: "ComfyNodePolicyLocalOnly" })
      }))

    it.effect("an ETag is of the bytes sent: a revalidation with it is 304", () =>
      Effect.gen(function*() {
        const service = yield* Service
        for (const path of ["/nodes/loader", "/nodes?latest=true"]) {
          const first = yield* sendText(service, "GET", path)
          const etag = first.headers.get("etag")
          expect(etag, path).toBeTruthy()
          expect(first.text, path).toContain("supported_comfyui_version")
          expect((yield* sendText(service, "GET", path, { headers: { "if-none-match": etag! } })).status, path).toBe(304)
        }
      }))

    it.effect("the typed client reads the answers, the clients' policy word included", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const client = yield* bearerClient(service, tokens.siteAdmin)
        const node = yield* client.api.catalog.getNode({ params: { nodeId: "loader" } })
        expect(node.supported_host_version).toBe(">=0.3.0")
        const record = yield* client.api.publicHostNodes.getHostNode({ params: { nodeId: "loader", version: "1.0.0", hostNodeName: "FancyLoader" } })
        expect(record.policy).toBe("HostNodePolicyLocalOnly")
      }))
  }
)
