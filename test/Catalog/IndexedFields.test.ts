/**
 * The fields clients index directly are on every node answered (CONTRACT.md, Conventions):
 * ComfyUI-Manager reads `cnr['name']`, `cnr['description']` and `cnr['publisher']['name']`
 * (glob/manager_core.py, over the pages glob/cnr_utils.py fetches) and comfy-cli reads
 * `node["id"]`, `node["name"]` and `node["description"]` (comfy_cli/registry/api.py,
 * `map_node_to_node_class`), all without a default: a missing key is a `KeyError` there.
 * Nodes created through the endpoints without a name or a description, by a publisher without a
 * name, are read through every listing and read.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { decodeNodes, getPage, type WireNode } from "../support/Catalogue.ts"
import { expectStatus, get, send } from "../support/Http.ts"
import { Service } from "../support/Service.ts"
import { publish } from "../Publishing/Flow.ts"

const nodeIds = ["quiet-published", "quiet-created"]

/** What the two clients index, as they would read it from the JSON. */
const indexed = (node: Record<string, any>) => ({
  id: node["id"],
  name: node["name"],
  description: node["description"],
  publisher: { id: node["publisher"]["id"], name: node["publisher"]["name"] }
})

/** Nodes without their own name and description show their id and "", and their publisher its id. */
const expectIndexed = (nodes: ReadonlyArray<WireNode>, where: string, expected: ReadonlyArray<string> = nodeIds) => {
  const ours = nodes.filter((n) => nodeIds.includes(n.id))
  expect(ours.map((n) => n.id).sort(), where).toEqual([...expected].sort())
  for (const node of ours) {
    expect(indexed(node), `${where}: ${node.id}`).toEqual({
      id: node.id,
      name: node.id,
      description: "",
      publisher: { id: "nameless", name: "nameless" }
    })
  }
}

layer(Service.layer(), { excludeTestServices: true })("fields clients index directly", (it) => {
  it.effect("a node published or created without name or description has id, name, description and publisher's id and name everywhere", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const owner = yield* Effect.promise(() => service.token({ sub: "nora" }))
      const admin = yield* Effect.promise(() => service.token({ sub: "root", admin: true }))
      // a publisher created without a name
      const publisher = expectStatus(yield* send<any>(service, "POST", "/publishers", { token: owner, body: { id: "nameless" } }), 201, "publisher")
      expect(publisher.body.name).toBe("nameless")
      const pat = expectStatus(
        yield* send<{ token: string }>(service, "POST", "/publishers/nameless/tokens", { token: owner, body: { name: "cli" } }),
        201,
        "token"
      ).body.token

      // published with a personal access token, the node's metadata without name or description
      expectStatus(yield* publish(service, "nameless", "quiet-published", "1.0.0", { pat, node: { license: "LICENSE" } }), 201, "publish")
      // created through POST /publishers/{publisherId}/nodes with its id alone
      const created = yield* send<any>(service, "POST", "/publishers/nameless/nodes", { token: owner, body: { id: "quiet-created" } })
      expect(indexed(expectStatus(created, 201, "create").body)).toEqual({
        id: "quiet-created",
        name: "quiet-created",
        description: "",
        publisher: { id: "nameless", name: "nameless" }
      })

      expectIndexed((yield* getPage(service, "/nodes", { node_id: nodeIds, latest: "true" })).nodes, "GET /nodes")
      expectIndexed((yield* getPage(service, "/nodes", { node_id: nodeIds })).nodes, "GET /nodes (cached)")
      expectIndexed((yield* getPage(service, "/nodes/search", { limit: 500 })).nodes, "search without criteria")
      expectIndexed((yield* getPage(service, "/nodes/search", { search: "quiet" })).nodes, "search")
      expectIndexed((yield* getPage(service, "/nodes/search", { search: "quiet", include_banned: "true" }, admin)).nodes, "search, include_banned")
      expectIndexed((yield* getPage(service, "/publishers/nameless/nodes/v2", {}, owner)).nodes, "publisher listing v2")
      const all = expectStatus(yield* get(service, "/publishers/nameless/nodes", { token: owner }), 200, "publisher listing")
      expectIndexed(decodeNodes(all.body), "publisher listing")
      for (const nodeId of nodeIds) {
        expectIndexed(decodeNodes([expectStatus(yield* get(service, `/nodes/${nodeId}`), 200, nodeId).body]), `GET /nodes/${nodeId}`, [nodeId])
      }
      const read = expectStatus(yield* get(service, "/publishers/nameless"), 200, "publisher").body as { name?: string }
      expect(read.name).toBe("nameless")
    }))
})
