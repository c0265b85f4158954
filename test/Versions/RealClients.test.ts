/**
 * The versions queue, bulk resolution and host-node lookups called exactly as the clients in the
 * field call them, over raw HTTP, on the paths and with the names they send (`comfy-nodes`,
 * `comfy_node_name`: the default HOST_NODE_ALIAS, docs/compatibility.md):
 *
 * - registry-web `pages/admin/nodeversions.tsx` and `pages/admin/node-version-compatibility.tsx`
 *   (`useListAllNodeVersions`, query strings by `src/api/mutator/axios-instance.ts`: qs with
 *   `arrayFormat: "repeat"`), and `src/api/generated.ts` (`getComfyNode`, `listAllComfyNodes`,
 *   `getNodeByComfyNodeName`, used by `components/cache-control.tsx`);
 * - ComfyUI_frontend `src/services/comfyRegistryService.ts` (`getBulkNodeVersions`,
 *   `inferPackFromNodeName`; axios with `paramsSerializer: { indexes: null }`, JSON content type).
 *
 * ComfyUI-Manager (`glob/cnr_utils.py`) calls none of these endpoints.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { query } from "../support/Db.ts"
import { expectStatus, fetchText, parseJson } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"

/** What the clients read of an answer, as they read it: a JSON body, status 200. */
const call = (service: Running, method: string, path: string, init: { token?: string; body?: unknown } = {}) =>
  Effect.promise(async () => {
    const reply = expectStatus(
      await fetchText(service, method, path, {
        token: init.token,
        ...(init.body === undefined ? {} : { raw: JSON.stringify(init.body) }),
        headers: { accept: "application/json, text/plain, */*", "content-type": "application/json" }
      }),
      200,
      `${method} ${path}`
    )
    return parseJson(reply.text, path) as any
  })

let admin = ""

layer(Service.layer(), { excludeTestServices: true })("what the clients in the field send", (it) => {
  it.effect("seeds a node with versions in three statuses and host-node records", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.upsertPublishers([{ id: "impact" }])
      yield* service.writes.insertNodes([{ id: "impact-pack", publisher_id: "impact", name: "Impact Pack" }])
      yield* service.writes.insertVersions([
        { node_id: "impact-pack", version: "8.1.0", status: "NodeVersionStatusActive" },
        {
          node_id: "impact-pack",
          version: "8.2.0",
          status: "NodeVersionStatusFlagged",
          status_reason: "{\"message\":\"eval found\",\"by\":\"checks\"}"
        },
        { node_id: "impact-pack", version: "8.3.0", status: "NodeVersionStatusPending" }
      ])
      yield* query(
        service,
        `INSERT INTO host_nodes (version_id, host_node_name)
         SELECT id, name FROM node_versions, unnest(ARRAY['SAMLoader', 'Detailer (SEGS)']) AS name
         WHERE node_id = 'impact-pack' AND version = '8.1.0'`
      )
      admin = yield* Effect.promise(() => service.token({ sub: "moderator", admin: true }))
    }))

  it.effect("registry-web pages/admin/nodeversions.tsx: the moderators' queue with status reasons", () =>
    Effect.gen(function*() {
      const service = yield* Service
      // useListAllNodeVersions({ page, pageSize: 8, statuses, include_status_reason: true, status_reason, nodeId })
      const page = yield* call(
        service,
        "GET",
        "/versions?page=1&pageSize=8&statuses=NodeVersionStatusFlagged&statuses=NodeVersionStatusPending&include_status_reason=true&status_reason=eval&nodeId=impact-pack",
        { token: admin }
      )
      expect(page.versions.map((nv: any) => [nv.node_id, nv.version, nv.status])).toEqual([
        ["impact-pack", "8.2.0", "NodeVersionStatusFlagged"]
      ])
      // the page parses status_reason as JSON: it comes back as it was stored
      expect(JSON.parse(page.versions[0].status_reason)).toEqual({ message: "eval found", by: "checks" })
      expect({ page: page.page, pageSize: page.pageSize, total: page.total, totalPages: page.totalPages })
        .toEqual({ page: 1, pageSize: 8, total: 1, totalPages: 1 })
    }))

  it.effect("registry-web pages/admin/node-version-compatibility.tsx: pages of 100 of every status", () =>
    Effect.gen(function*() {
      const service = yield* Service
      // useListAllNodeVersions({ page, pageSize: 100, statuses, nodeId })
      const statuses = ["NodeVersionStatusActive", "NodeVersionStatusPending", "NodeVersionStatusFlagged"]
      const page = yield* call(
        service,
        "GET",
        `/versions?page=1&pageSize=100&${statuses.map((s) => `statuses=${s}`).join("&")}&nodeId=impact-pack`,
        { token: admin }
      )
      expect(page.versions.map((v: any) => `${v.node_id}@${v.version}`).sort())
        .toEqual(["impact-pack@8.1.0", "impact-pack@8.2.0", "impact-pack@8.3.0"])
      // the same query without the admin's token: the active version only
      const anonymous = yield* call(service, "GET", "/versions?page=1&pageSize=100&statuses=NodeVersionStatusPending&nodeId=impact-pack")
      expect(anonymous.versions).toEqual([])
    }))

  it.effect("ComfyUI_frontend comfyRegistryService.ts getBulkNodeVersions: a lock file's pairs", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const body = {
        node_versions: [
          { node_id: "impact-pack", version: "8.1.0" },
          { node_id: "ComfyUI-Manager", version: "1.0.0" }
        ]
      }
      const answer = yield* call(service, "POST", "/bulk/nodes/versions", { body })
      // result.status === 'success' && result.node_version; result.identifier.node_id / .version
      const found = answer.node_versions.filter((r: any) => r.status === "success" && r.node_version)
      expect(found.map((r: any) => `${r.identifier.node_id}@${r.identifier.version}`)).toEqual(["impact-pack@8.1.0"])
      expect(found[0].node_version.version).toBe("8.1.0")
      expect(answer.node_versions[1]).toEqual({ identifier: body.node_versions[1], status: "not_found" })
    }))

  it.effect("ComfyUI_frontend inferPackFromNodeName and registry-web getNodeByComfyNodeName: the pack of a node name", () =>
    Effect.gen(function*() {
      const service = yield* Service
      // `/comfy-nodes/${nodeName}/node`: the name as it is, a space percent-encoded by the URL
      const pack = yield* call(service, "GET", "/comfy-nodes/Detailer%20(SEGS)/node")
      expect({ id: pack.id, name: pack.name, latest: pack.latest_version.version }).toEqual({
        id: "impact-pack",
        name: "Impact Pack",
        latest: "8.1.0"
      })
      expect((yield* call(service, "GET", "/comfy-nodes/SAMLoader/node")).id).toBe("impact-pack")
    }))

  it.effect("registry-web generated.ts getComfyNode and listAllComfyNodes: one record, and the records of a version", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const one = yield* call(service, "GET", "/nodes/impact-pack/versions/8.1.0/comfy-nodes/SAMLoader")
      expect(one).toEqual({ host_node_name: "SAMLoader", policy: "HostNodePolicyActive" })
      // listAllComfyNodes({ pageSize, page, node_id, node_version, comfy_node_name })
      const list = yield* call(
        service,
        "GET",
        "/comfy-nodes?pageSize=100&page=1&node_id=impact-pack&node_version=8.1.0&comfy_node_name=SAMLoader"
      )
      expect(list.host_nodes).toEqual([{ host_node_name: "SAMLoader", policy: "HostNodePolicyActive", node_id: "impact-pack", node_version: "8.1.0" }])
      expect(list.total).toBe(1)
    }))
})
