/**
 * The publishing CLI as it runs (issue 26, item 8), replayed from comfy-cli:
 * - `comfy_cli/registry/api.py` `publish_node_version`: `POST /publishers/{publisher}/nodes/{name}/versions`
 *   with `Content-Type: application/json` and the body it builds (the token in
 *   `personal_access_token`, pyproject's ranges under `supported_comfyui_version`, the license
 *   as JSON text), reading `node_version` through `map_node_version` and `signedUrl`; a failure
 *   is read as its status and text;
 * - `comfy_cli/file_utils.py` `upload_file_to_signed_url`: `PUT` of the zip to `signedUrl` with
 *   `Content-Type: application/zip`, status 200;
 * - `list_all_nodes` (`GET /nodes`, `map_node_to_node_class`), `get_node` (`GET /nodes/{id}`) and
 *   `install_node` (`GET /nodes/{id}/install[?version=]`), with the fields those map.
 * Under both answer vocabularies: the CLI reads no aliased field, and must not trip on them.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectStatus, fetchText, parseJson } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"
import { zipOf } from "../support/Zip.ts"
import { makePublisher, pathOf } from "../Publishing/Flow.ts"

/** `publish_node_version`'s body, field for field, for a pyproject of `name` at `version`. */
const publishBody = (token: string, name: string, version: string) => ({
  personal_access_token: token,
  node: {
    id: name,
    description: `The ${name} pack`,
    icon: "https://example.com/icon.png",
    name: `${name} display`,
    license: JSON.stringify({ file: "LICENSE" }),
    repository: `https://github.com/acme/${name}`,
    banner_url: "",
    supported_os: ["OS Independent"],
    supported_accelerators: [],
    supported_comfyui_version: ">=0.3.0,<1.0.0",
    supported_comfyui_frontend_version: ">=1.2.0"
  },
  node_version: {
    version,
    dependencies: ["numpy>=1.24"],
    supported_os: ["OS Independent"],
    supported_accelerators: [],
    supported_comfyui_version: ">=0.3.0,<1.0.0",
    supported_comfyui_frontend_version: ">=1.2.0",
    changelog: "First release"
  }
})

/** `requests` with `data=json.dumps(body)` and the CLI's one header. */
const cliRequest = (service: Running, method: string, path: string, body?: unknown) =>
  Effect.promise(() =>
    fetchText(service, method, path, {
      ...(body === undefined ? {} : { raw: JSON.stringify(body) }),
      headers: { "content-type": "application/json", accept: "*/*" }
    })
  )

/** `map_node_version`: the fields it reads, `id` and `version` mandatory. */
const mapNodeVersion = (v: Record<string, unknown>) => {
  expect(typeof v.id).toBe("string")
  expect(typeof v.version).toBe("string")
  return { changelog: v.changelog ?? "", dependencies: v.dependencies ?? [], deprecated: v.deprecated ?? false, version: v.version, downloadUrl: v.downloadUrl ?? "" }
}

for (const inAnswers of [false, true]) {
  layer(Service.layer((c) => ({ ...c, aliases: { ...c.aliases, inAnswers } })), { excludeTestServices: true })(
    `comfy-cli registry/api.py and file_utils.py, replayed (ANSWER_ALIASES=${inAnswers})`,
    (it) => {
      it.effect("publish, upload the zip, then list, get and install as the CLI maps them", () =>
        Effect.gen(function*() {
          const service = yield* Service
          const acme = yield* makePublisher(service, "acme")
          const published = yield* cliRequest(service, "POST", "/publishers/acme/nodes/pack/versions", publishBody(acme.pat, "pack", "1.0.0"))
          expect(published.status, published.text).toBe(201)
          const data = parseJson(published.text, "publish") as { node_version: Record<string, unknown>; signedUrl: string }
          expect(mapNodeVersion(data.node_version)).toMatchObject({ version: "1.0.0", dependencies: ["numpy>=1.24"], changelog: "First release" })
          expect(data.signedUrl).toMatch(/^https?:\/\//)

          // upload_file_to_signed_url: the zip, Content-Type application/zip, 200
          const zip = yield* Effect.promise(() => zipOf({ "pack/__init__.py": "NODE_CLASS_MAPPINGS = {}\n" }))
          const uploaded = yield* Effect.promise(() =>
            service.fetch(pathOf(data.signedUrl), { method: "PUT", body: zip, headers: { "content-type": "application/zip" } })
          )
          expect(uploaded.status).toBe(200)

          // list_all_nodes -> map_node_to_node_class: id, name, description mandatory
          const listed = expectStatus(yield* cliRequest(service, "GET", "/nodes"), 200, "list_all_nodes")
          const node = (parseJson(listed.text, "list") as { nodes: Array<Record<string, unknown>> }).nodes.find((n) => n.id === "pack")!
          expect({ id: node.id, name: node.name, description: node.description, repository: node.repository }).toEqual({
            id: "pack",
            name: "pack display",
            description: "The pack pack",
            repository: "https://github.com/acme/pack"
          })
          expect(mapNodeVersion(node.latest_version as Record<string, unknown>).downloadUrl).toMatch(/^https?:\/\//)

          // get_node, then install_node with and without a version
          const got = parseJson(expectStatus(yield* cliRequest(service, "GET", "/nodes/pack"), 200, "get_node").text, "get") as Record<string, unknown>
          expect((got.latest_version as Record<string, unknown>).version).toBe("1.0.0")
          for (const path of ["/nodes/pack/install", "/nodes/pack/install?version=1.0.0"]) {
            const version = parseJson(expectStatus(yield* cliRequest(service, "GET", path), 200, path).text, path) as Record<string, unknown>
            const download = yield* Effect.promise(() => fetch(service.baseUrl + pathOf(mapNodeVersion(version).downloadUrl as string)))
            expect(Buffer.from(yield* Effect.promise(() => download.arrayBuffer())).equals(zip), path).toBe(true)
          }

          // the same publish again is a retry, answered as before; the version with other content is refused,
          // read as its status and text, never with the token in it
          const retry = yield* cliRequest(service, "POST", "/publishers/acme/nodes/pack/versions", publishBody(acme.pat, "pack", "1.0.0"))
          expect(retry.status).toBe(201)
          const other = publishBody(acme.pat, "pack", "1.0.0")
          const again = yield* cliRequest(service, "POST", "/publishers/acme/nodes/pack/versions", {
            ...other,
            node_version: { ...other.node_version, changelog: "Another first release" }
          })
          expect(again.status).toBe(409)
          expect(again.text).not.toContain(acme.pat)
        }))
    }
  )
}
