/**
 * The host-node routes under the clients' node word (HOST_NODE_ALIAS, `comfy_node` gives
 * `comfy-nodes`): each of the clients' requests answers exactly what its `/host-nodes` route
 * answers (status, body bytes, the headers a client or a cache reads), 404s and 403s included.
 * The paths are the clients' own: ComfyUI_frontend src/services/comfyRegistryService.ts
 * (`getNodeDefs`: `/nodes/{packId}/versions/{versionId}/comfy-nodes`) and registry-web
 * src/api/generated.ts (`getNodeByComfyNodeName`: `/comfy-nodes/{comfyNodeName}/node`,
 * `listComfyNodes`, `getComfyNode`: `/nodes/{nodeId}/versions/{version}/comfy-nodes/{comfyNodeName}`,
 * `listAllComfyNodes`: `/comfy-nodes?comfy_node_name=`). With the word empty they are unknown paths.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { seedActors, tokensFor } from "../support/Actors.ts"
import { query } from "../support/Db.ts"
import { expectError, expectStatus, type Reply, send, sendText } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"

const tokens = tokensFor("stranger", "siteAdmin")

/** What a client or a cache reads of an answer: everything but the per-request headers. */
const seen = (reply: Reply) => ({
  status: reply.status,
  text: reply.text,
  headers: ["content-type", "content-length", "etag", "cache-control", "vary", "allow", "last-modified"].map(
    (name) => [name, reply.headers.get(name)]
  )
})

/** The same request under both paths: the same answer, which is returned. */
const sameAnswer = (service: Running, method: string, alias: string, canonical: string, token?: string) =>
  Effect.gen(function*() {
    const viaAlias = yield* sendText(service, method, alias, { token })
    const viaInterface = yield* sendText(service, method, canonical, { token })
    expect(seen(viaAlias), `${method} ${alias} as ${canonical}`).toEqual(seen(viaInterface))
    return viaAlias
  })

const seed = Effect.gen(function*() {
  const service = yield* Service
  yield* service.writes.upsertPublishers([{ id: "acme" }])
  yield* service.writes.insertNodes([
    { id: "pack", publisher_id: "acme" },
    { id: "barred", publisher_id: "acme", status: "NodeStatusBanned" }
  ])
  yield* service.writes.insertVersions([
    { node_id: "pack", version: "1.0.0", status: "NodeVersionStatusActive" },
    { node_id: "pack", version: "2.0.0-beta.1", status: "NodeVersionStatusPending" },
    { node_id: "barred", version: "1.0.0", status: "NodeVersionStatusActive" }
  ])
  yield* seedActors(service, tokens)
  yield* query(
    service,
    `INSERT INTO host_nodes (version_id, host_node_name, category)
     SELECT v.id, name, 'cat' FROM node_versions v, unnest($2::text[]) AS name WHERE v.node_id = $1 AND v.version = '1.0.0'`,
    ["pack", ["KSamplerX", "Loader (Advanced)"]]
  )
})

/** Each client request under the alias, beside its interface path. */
const pairs: ReadonlyArray<readonly [string, string]> = [
  ["/comfy-nodes/KSamplerX/node", "/host-nodes/KSamplerX/node"],
  ["/comfy-nodes/Loader%20(Advanced)/node", "/host-nodes/Loader%20(Advanced)/node"],
  ["/nodes/pack/versions/1.0.0/comfy-nodes", "/nodes/pack/versions/1.0.0/host-nodes"],
  ["/nodes/pack/versions/1.0.0/comfy-nodes/KSamplerX", "/nodes/pack/versions/1.0.0/host-nodes/KSamplerX"],
  ["/comfy-nodes?comfy_node_name=KSamplerX&page=1&pageSize=10", "/host-nodes?host_node_name=KSamplerX&page=1&pageSize=10"],
  ["/comfy-nodes?node_id=pack", "/host-nodes?node_id=pack"]
]

/** The same, where the interface answers a refusal. */
const refusals: ReadonlyArray<readonly [string, string, number]> = [
  ["/comfy-nodes/Nobody/node", "/host-nodes/Nobody/node", 404],
  ["/nodes/pack/versions/9.9.9/comfy-nodes", "/nodes/pack/versions/9.9.9/host-nodes", 404],
  ["/nodes/none/versions/1.0.0/comfy-nodes", "/nodes/none/versions/1.0.0/host-nodes", 404],
  ["/nodes/pack/versions/1.0.0/comfy-nodes/Nobody", "/nodes/pack/versions/1.0.0/host-nodes/Nobody", 404],
  ["/nodes/barred/versions/1.0.0/comfy-nodes", "/nodes/barred/versions/1.0.0/host-nodes", 403],
  ["/comfy-nodes?pageSize=0", "/host-nodes?pageSize=0", 400]
]

layer(Service.layer(), { excludeTestServices: true })("host-node paths under the clients' word", (it) => {
  it.effect("seeds a pack with host-node records", () => seed)

  it.effect("each client's read answers what the /host-nodes route answers", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const [alias, canonical] of pairs) {
        expectStatus(yield* sameAnswer(service, "GET", alias, canonical), 200, alias)
      }
      // the host application reads the records' names
      const defs = yield* send<ReadonlyArray<{ host_node_name: string }>>(service, "GET", "/nodes/pack/versions/1.0.0/comfy-nodes")
      expect(defs.body.map((r) => r.host_node_name)).toEqual(["KSamplerX", "Loader (Advanced)"])
    }))

  it.effect("refusals are the same: missing, banned, bad input, a method the path has not", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const [alias, canonical, status] of refusals) {
        expectStatus(yield* sameAnswer(service, "GET", alias, canonical), status, alias)
      }
      // a 405 names the path as sent: all else is the same
      const viaAlias = yield* send(service, "DELETE", "/comfy-nodes/KSamplerX/node")
      const viaInterface = yield* send(service, "DELETE", "/host-nodes/KSamplerX/node")
      expectError(viaAlias, 405, "method_not_allowed")
      expect(viaAlias.headers.get("allow")).toBe(viaInterface.headers.get("allow"))
      expect(viaAlias.text).toBe(viaInterface.text.replace("/host-nodes/", "/comfy-nodes/"))
    }))

  it.effect("writes under the alias are the same routes: the records POST and its refusal", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const body = [{ host_node_name: "Added" }]
      expectError(
        yield* send(service, "POST", "/nodes/pack/versions/2.0.0-beta.1/comfy-nodes", { token: tokens.stranger, body }),
        403
      )
      expectStatus(
        yield* send(service, "POST", "/nodes/pack/versions/2.0.0-beta.1/comfy-nodes", { token: tokens.siteAdmin, body }),
        201,
        "POST under the alias"
      )
      const records = yield* send<ReadonlyArray<{ host_node_name: string }>>(service, "GET", "/nodes/pack/versions/2.0.0-beta.1/host-nodes")
      expect(records.body.map((r) => r.host_node_name)).toEqual(["Added"])
    }))
})

layer(Service.layer((c) => ({ ...c, aliases: { ...c.aliases, hostNode: "" } })), { excludeTestServices: true })(
  "host-node paths with the node word off",
  (it) => {
    it.effect("seeds a pack with host-node records", () => seed)

    it.effect("the clients' paths are unknown; the interface's still answer", () =>
      Effect.gen(function*() {
        const service = yield* Service
        for (const [alias, canonical] of pairs) {
          expectError(yield* send(service, "GET", alias), 404, "not_found")
          expectStatus(yield* send(service, "GET", canonical), 200, canonical)
        }
      }))
  }
)
