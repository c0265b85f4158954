/**
 * The clients in the field, over real HTTP, with the names and versions they send: the
 * publishing CLI's publish body (comfy-cli comfy_cli/registry/api.py `publish_node_version`,
 * ranges from config_parser.py), the extension manager's catalogue sync (ComfyUI-Manager
 * glob/cnr_utils.py `_get_cnr_data`, its version from manager_core.py `get_comfyui_tag`) and the
 * admin front-end's node update (registry-web pages/admin/node-version-compatibility.tsx) and
 * version update (registry-web components/admin/NodeVersionCompatibilityEditModal.tsx), and the
 * host web front-end's host-node search (ComfyUI_frontend src/services/providers/registrySearchProvider.ts).
 * Answers keep the interface's names; with the alias settings empty, the aliases are unknown names.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectBadRequest, expectError, expectStatus, get, send } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"
import { decodePublished, makePublisher, type Publisher, upload } from "../Publishing/Flow.ts"
import { zipOf } from "../support/Zip.ts"

/** comfy-cli api.py `publish_node_version`: the body it posts, field for field. */
const cliPublishBody = (pat: string, id: string, version: string, range: string) => ({
  personal_access_token: pat,
  node: {
    id,
    description: `The ${id} node`,
    icon: "",
    name: id,
    license: JSON.stringify({ file: "LICENSE" }),
    repository: `https://github.com/acme/${id}`,
    banner_url: "",
    supported_os: [],
    supported_accelerators: [],
    supported_comfyui_version: range,
    supported_comfyui_frontend_version: ">=1.2.0"
  },
  node_version: {
    version,
    dependencies: ["numpy"],
    supported_os: [],
    supported_accelerators: [],
    supported_comfyui_version: range,
    supported_comfyui_frontend_version: ">=1.2.0"
  }
})

/** Publishes as comfy-cli does and uploads the archive: the version is then Active. */
const cliPublish = (service: Running, publisher: Publisher, id: string, range: string) =>
  Effect.gen(function*() {
    const answer = expectStatus(
      yield* send(service, "POST", `/publishers/${publisher.id}/nodes/${id}/versions`, { body: cliPublishBody(publisher.pat, id, "1.0.0", range) }),
      201,
      `publish ${id}`
    )
    const published = decodePublished(answer.body)
    const archive = yield* Effect.promise(() => zipOf({ [`${id}/__init__.py`]: "NODES = {}\n" }))
    expectStatus(yield* upload(service, published.signedUrl, archive), 200, `upload ${id}`)
    return { answer, published }
  })

/** ComfyUI-Manager cnr_utils.py: `/nodes?page=&limit=30&comfyui_version=&form_factor=`, unencoded. */
const managerPage = (service: Running, comfyuiVersion: string) =>
  get(service, `/nodes?page=1&limit=30&comfyui_version=${comfyuiVersion}&form_factor=git-linux`)

/** registry-web NodeVersionCompatibilityEditModal.tsx `onSubmit`: the version's four compatibility fields, no status. */
const editorBody = (range: string) => ({
  supported_comfyui_frontend_version: ">=1.20.0",
  supported_comfyui_version: range,
  supported_os: ["linux"],
  supported_accelerators: []
})

const idsOf = (body: unknown) => (body as { nodes: ReadonlyArray<{ id: string }> }).nodes.map((n) => n.id).sort()

layer(Service.layer(), { excludeTestServices: true })("the clients' aliases, on by default", (it) => {
  let acme: Publisher

  it.effect("comfy-cli api.py: supported_comfyui_version on node and node_version, comma form, stored normalised under the interface's name", () =>
    Effect.gen(function*() {
      const service = yield* Service
      acme = yield* makePublisher(service, "acme")
      const { answer, published } = yield* cliPublish(service, acme, "old-tool", ">=0.3.0,<2.0.0")
      expect(published.node_version.supported_host_version).toBe(">=0.3.0 <2.0.0")
      expect(published.node_version.supported_host_frontend_version).toBe(">=1.2.0")
      expect(answer.text).not.toContain("comfyui")
      yield* cliPublish(service, acme, "new-tool", ">=2.0.0,<3")
      const node = expectStatus(yield* get(service, "/nodes/old-tool"), 200, "the node").body as Record<string, unknown>
      expect(node.supported_host_version).toBe(">=0.3.0 <2.0.0")
      expect(node.supported_host_frontend_version).toBe(">=1.2.0")
      expect(Object.keys(node).filter((k) => k.includes("comfy"))).toEqual([])
    }))

  it.effect("ComfyUI-Manager cnr_utils.py: comfyui_version as git describe filters by its base version", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const page = expectStatus(yield* managerPage(service, "v0.3.60-1-g05b2453"), 200, "the manager's page")
      expect(idsOf(page.body)).toEqual(["old-tool"])
      expect(page.text).not.toContain("comfyui")
      expect(idsOf((yield* managerPage(service, "v2.1.0")).body)).toEqual(["new-tool"])
      expect(idsOf((yield* managerPage(service, "0.3.60")).body)).toEqual(["old-tool"])
    }))

  it.effect("ComfyUI-Manager cnr_utils.py: comfyui_version=unknown (or empty) filters nothing", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expect(idsOf((yield* managerPage(service, "unknown")).body)).toEqual(["new-tool", "old-tool"])
      expect(idsOf((yield* managerPage(service, "")).body)).toEqual(["new-tool", "old-tool"])
      expect(idsOf((yield* get(service, "/nodes?host_version=unknown")).body)).toEqual(["new-tool", "old-tool"])
      expectBadRequest(yield* managerPage(service, "latest"), "host_version")
    }))

  it.effect("ComfyUI_frontend registrySearchProvider.ts: comfy_node_search alone finds the node providing it; GET /host-nodes?comfy_node_name= filters", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const root = yield* Effect.promise(() => service.token({ sub: "root", admin: true }))
      expectStatus(
        yield* send(service, "POST", "/nodes/old-tool/versions/1.0.0/host-nodes", {
          token: root,
          body: [{ host_node_name: "ZoomUpscaler" }, { host_node_name: "ZoomLoader" }]
        }),
        201,
        "record host-nodes"
      )
      // what the front-end sends as the user types: the text alone, with limit and page
      const found = expectStatus(yield* get(service, "/nodes/search?comfy_node_search=zoomup&limit=64&page=1"), 200, "search")
      expect(idsOf(found.body)).toEqual(["old-tool"])
      // the anchor's host-node listing filter (registry-web generated.ts ListAllComfyNodesParams)
      const listed = expectStatus(yield* get(service, "/host-nodes?comfy_node_name=ZoomLoader"), 200, "host-nodes")
      const records = (listed.body as { host_nodes: ReadonlyArray<Record<string, unknown>> }).host_nodes
      expect(records.map((r) => r.host_node_name)).toEqual(["ZoomLoader"])
      expect(JSON.stringify([found.body, listed.body])).not.toContain("comfy")
    }))

  it.effect("an alias and its name both sent: the alias wins", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expect(idsOf((yield* get(service, "/nodes?comfyui_version=0.3.60&host_version=2.1.0")).body)).toEqual(["old-tool"])
      const body = cliPublishBody(acme.pat, "old-tool", "1.1.0", ">=0.3.5")
      const both = { ...body, node_version: { ...body.node_version, supported_host_version: ">=0.4.0" } }
      const answer = expectStatus(yield* send(service, "POST", "/publishers/acme/nodes/old-tool/versions", { body: both }), 201, "publish")
      expect(decodePublished(answer.body).node_version.supported_host_version).toBe(">=0.3.5")
    }))

  it.effect("a range that cannot be read is a 400 naming the field as sent; malformed JSON is the same 400 as ever", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectBadRequest(
        yield* send(service, "POST", "/publishers/acme/nodes/old-tool/versions", { body: cliPublishBody(acme.pat, "old-tool", "1.2.0", ">=0.3.0,,") }),
        // comfy-cli sends supported_comfyui_version: the message names it so
        "node.supported_comfyui_version"
      )
      const raw = expectError(yield* send(service, "POST", "/publishers/acme/nodes/old-tool/versions", { raw: "{not json" }), 400, "bad_request")
      expect(raw.message).toContain("could not be read as JSON")
      expectError(yield* get(service, "/nodes/old-tool/versions/1.2.0"), 404, "not_found")
    }))

  it.effect("node creation and update take supported_comfyui_version and supported_comfyui_frontend_version", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const created = expectStatus(
        yield* send(service, "POST", "/publishers/acme/nodes", {
          token: acme.ownerJwt,
          body: { id: "made-tool", supported_comfyui_version: "~=0.3", supported_comfyui_frontend_version: "==1.2.*" }
        }),
        201,
        "create"
      ).body as Record<string, unknown>
      expect(created.supported_host_version).toBe(">=0.3.0 <1.0.0-0")
      expect(created.supported_host_frontend_version).toBe(">=1.2.0-0 <1.3.0-0")
      const updated = expectStatus(
        yield* send(service, "PUT", "/publishers/acme/nodes/made-tool", { token: acme.ownerJwt, body: { supported_comfyui_version: "!=0.3.1" } }),
        200,
        "update"
      ).body as Record<string, unknown>
      expect(updated.supported_host_version).toBe("<0.3.1 || >0.3.1")
    }))

  it.effect("registry-web node-version-compatibility.tsx: the admin node update copies a version's compatibility, with preempted_comfy_node_names", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const admin = yield* Effect.promise(() => service.token({ sub: "root", admin: true }))
      const node = (yield* get(service, "/nodes/old-tool")).body as Record<string, unknown>
      const answer = expectStatus(
        yield* send(service, "PUT", "/admin/nodes/old-tool", {
          token: admin,
          body: {
            ...node,
            supported_accelerators: [],
            supported_comfyui_frontend_version: ">=1.3.0",
            supported_comfyui_version: ">=0.3.10,<2",
            supported_os: [],
            latest_version: undefined,
            preempted_comfy_node_names: ["OldNode"]
          }
        }),
        200,
        "admin update"
      )
      const updated = answer.body as Record<string, unknown>
      expect(updated.supported_host_version).toBe(">=0.3.10 <2.0.0")
      expect(updated.supported_host_frontend_version).toBe(">=1.3.0")
      expect(updated.preempted_host_node_names).toEqual(["OldNode"])
      expect(answer.text).not.toContain("comfy")
    }))

  it.effect("registry-web src/api/generated.ts updateComfyNode / createComfyNodes: a policy in its word (ComfyNodePolicy…) is the interface's", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const admin = yield* Effect.promise(() => service.token({ sub: "root", admin: true }))
      const path = "/nodes/old-tool/versions/1.0.0/host-nodes"
      const created = yield* send(service, "POST", path, { token: admin, body: [{ host_node_name: "Edited", policy: "ComfyNodePolicyLocalOnly" }] })
      expect(expectStatus(created, 201, "create").body).toEqual([{ host_node_name: "Edited", policy: "HostNodePolicyLocalOnly" }])
      // ComfyNodeUpdateRequest: the record's fields, policy in the front-end's enum
      const updated = yield* send(service, "PUT", `${path}/Edited`, {
        token: admin,
        body: { category: "loaders", deprecated: false, experimental: false, policy: "ComfyNodePolicyBanned" }
      })
      expect(expectStatus(updated, 200, "update").body).toMatchObject({ host_node_name: "Edited", policy: "HostNodePolicyBanned" })
      // any other spelling is still refused, naming the field
      expectBadRequest(yield* send(service, "PUT", `${path}/Edited`, { token: admin, body: { policy: "OtherPolicyBanned" } }), "policy")
    }))

  it.effect("registry-web NodeVersionCompatibilityEditModal.tsx: the admin version update takes supported_comfyui_version; the manager's filter follows", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const admin = yield* Effect.promise(() => service.token({ sub: "root", admin: true }))
      const answer = expectStatus(
        yield* send(service, "PUT", "/admin/nodes/new-tool/versions/1.0.0", { token: admin, body: editorBody(">=0.3.0,<4") }),
        200,
        "admin version update"
      )
      expect(answer.body).toMatchObject({ supported_host_version: ">=0.3.0 <4.0.0", supported_host_frontend_version: ">=1.20.0" })
      expect(answer.text).not.toContain("comfy")
      // made-tool, created above without a version, claims nothing about hosts: it stays listed
      expect(idsOf((yield* managerPage(service, "v0.3.60-1-g05b2453")).body)).toEqual(["made-tool", "new-tool", "old-tool"])
    }))
})

layer(Service.layer((c) => ({ ...c, aliases: { ...c.aliases, hostName: "", hostNode: "", repohost: "" } })), { excludeTestServices: true })(
  "the clients' aliases, turned off by empty settings",
  (it) => {
    it.effect("comfy-cli's names are unknown fields and ComfyUI-Manager's comfyui_version an unknown parameter", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const acme = yield* makePublisher(service, "acme")
        const { published } = yield* cliPublish(service, acme, "old-tool", ">=0.3.0,<2.0.0")
        expect(published.node_version.supported_host_version).toBeUndefined()
        yield* cliPublish(service, acme, "new-tool", ">=2.0.0,<3")
        expect(idsOf((yield* managerPage(service, "v0.3.60-1-g05b2453")).body)).toEqual(["new-tool", "old-tool"])
        expect(idsOf((yield* get(service, "/nodes?host_version=v0.3.60-1-g05b2453")).body)).toEqual(["new-tool", "old-tool"])
        // the front-end's comfy_node_search is then an unknown parameter: a search without criteria lists every node
        expect(idsOf((yield* get(service, "/nodes/search?comfy_node_search=nothing-matches")).body)).toEqual(["new-tool", "old-tool"])
      }))

    it.effect("registry-web NodeVersionCompatibilityEditModal.tsx: its range names are unknown fields, so the version keeps its range", () =>
      Effect.gen(function*() {
        const service = yield* Service
        const admin = yield* Effect.promise(() => service.token({ sub: "root", admin: true }))
        const answer = expectStatus(
          yield* send(service, "PUT", "/admin/nodes/new-tool/versions/1.0.0", { token: admin, body: editorBody(">=9") }),
          200,
          "admin version update"
        )
        expect(answer.body).toMatchObject({ supported_os: ["linux"], supported_accelerators: [] })
        expect((answer.body as Record<string, unknown>).supported_host_version).toBeUndefined()
      }))
  }
)
