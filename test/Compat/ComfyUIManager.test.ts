/**
 * The package manager as it runs (issue 26, item 8), its requests replayed exactly from
 * ComfyUI-Manager `glob/cnr_utils.py`:
 * - the full sync, `_get_cnr_data` / `fetch_all`: `GET /nodes?page={page}&limit=30&comfyui_version={tag}&form_factor={ff}`
 *   from page 1 while `page < totalPages`, the tag as `git describe --tags` prints it
 *   (`manager_core.get_comfyui_tag`), reading `nodes[].id`, `nodes[].latest_version` (a node
 *   without one is taken as `nightly`, installed from its repository) and `totalPages`;
 * - `install_node`: `GET /nodes/{id}/install` and `?version=`, read by `map_node_version`
 *   (`changelog`, `dependencies`, `deprecated`, `id`, `version`, `downloadUrl`);
 * - `all_versions_of_node`: `GET /nodes/{id}/versions?statuses=NodeVersionStatusActive&statuses=NodeVersionStatusPending`;
 * - then the archive from `downloadUrl`.
 * With the host version always sent, a node that makes no claim (no installable version) must
 * stay in the sync (item 7), and one whose installable versions all exclude the host is left out.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { onInstance } from "../support/Client.ts"
import { query } from "../support/Db.ts"
import { expectStatus, get } from "../support/Http.ts"
import { Service } from "../support/Service.ts"
import { zipOf } from "../support/Zip.ts"
import { makePublisher, published, upload } from "../Publishing/Flow.ts"

/** A `git describe --tags` of a host at 0.3.60 plus one commit, as the manager sends it. */
const hostTag = "v0.3.60-1-g05b2453"

interface SyncPage {
  readonly nodes: ReadonlyArray<{ readonly id: string; readonly latest_version?: { readonly version: string; readonly downloadUrl?: string } }>
  readonly totalPages: number
}

/** `fetch_all`, step for step: every page while `page < totalPages`, nodes keyed by id. */
const fullSync = (service: Parameters<typeof get>[0], tag: string, formFactor = "git-linux") =>
  Effect.gen(function*() {
    const nodes = new Map<string, SyncPage["nodes"][number]>()
    let page = 1
    let remained = true
    while (remained) {
      const answer = yield* get(service, `/nodes?page=${page}&limit=30&comfyui_version=${tag}&form_factor=${formFactor}`)
      const body = expectStatus(answer, 200, `sync page ${page}`).body as SyncPage
      remained = page < body.totalPages
      for (const node of body.nodes) nodes.set(node.id, node)
      page++
    }
    // "if 'latest_version' not in v: v['latest_version'] = dict(version='nightly')"
    return new Map([...nodes].map(([id, node]) => [id, node.latest_version?.version ?? "nightly"]))
  })

layer(Service.layer(), { excludeTestServices: true })("ComfyUI-Manager cnr_utils.py, replayed", (it) => {
  it.effect("the full sync with the host's version, install, the versions list and the download", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const acme = yield* makePublisher(service, "acme")
      // 70 nodes that fit the host: three pages of 30 for the sync to walk
      const archive = yield* Effect.promise(() => zipOf({ "pack/__init__.py": "NODE_CLASS_MAPPINGS = {}\n" }))
      const publishActive = (id: string, version: string, range: string) =>
        Effect.gen(function*() {
          const { signedUrl } = yield* published(service, acme, id, version, { versionFields: { supported_host_version: range } })
          expectStatus(yield* upload(service, signedUrl, archive), 200, `upload ${id}@${version}`)
        })
      // the one the manager installs below goes the CLI's way; the rest are written directly, as
      // the sync reads only their ids and latest versions
      yield* publishActive("fits-00", "1.0.0", ">=0.3.0")
      const others = Array.from({ length: 69 }, (_, i) => `fits-${String(i + 1).padStart(2, "0")}`)
      for (const id of others) yield* service.writes.insertNodes([{ id, publisher_id: "acme" }])
      yield* service.writes.insertVersions(
        others.map((node_id) => ({ node_id, version: "1.0.0", status: "NodeVersionStatusActive", supported_host_version: ">=0.3.0" }))
      )
      // a node whose only installable version excludes this host
      yield* publishActive("too-new", "2.0.0", ">=0.4.0")
      // a node with no installable version: published, never uploaded (pending)
      yield* published(service, acme, "no-claim", "0.1.0")
      const stored = yield* query<{ status: string }>(service, "SELECT status FROM node_versions WHERE node_id = 'no-claim'")
      expect(stored.map((row) => row.status)).toEqual(["NodeVersionStatusPending"])

      const synced = yield* fullSync(service, hostTag)
      expect(synced.size).toBe(71)
      expect(synced.get("fits-00")).toBe("1.0.0")
      expect(synced.get("fits-69")).toBe("1.0.0")
      expect(synced.get("no-claim")).toBe("nightly")
      expect(synced.has("too-new")).toBe(false)
      // a host of 0.4 sees every node with a claim that admits it, and the one without
      const newer = yield* fullSync(service, "v0.4.2", "desktop-win")
      expect(newer.get("too-new")).toBe("2.0.0")
      expect(newer.get("no-claim")).toBe("nightly")

      // install_node(node_id) and install_node(node_id, version)
      for (const path of ["/nodes/fits-00/install", "/nodes/fits-00/install?version=1.0.0"]) {
        const version = expectStatus(yield* get(service, path), 200, path).body as Record<string, unknown>
        expect(version).toMatchObject({ id: expect.any(String), version: "1.0.0", deprecated: false, dependencies: expect.any(Array) })
        expect(version.downloadUrl, path).toEqual(expect.stringMatching(/^http/))
        const download = yield* Effect.promise(() => fetch(onInstance(service, version.downloadUrl as string)))
        expect(download.status).toBe(200)
        expect(Buffer.from(yield* Effect.promise(() => download.arrayBuffer())).equals(archive)).toBe(true)
      }

      // all_versions_of_node: statuses repeated
      const versions = yield* get(
        service,
        "/nodes/no-claim/versions?statuses=NodeVersionStatusActive&statuses=NodeVersionStatusPending"
      )
      const listed = expectStatus(versions, 200, "versions").body as ReadonlyArray<{ version: string; status: string }>
      expect(listed.map((v) => [v.version, v.status])).toEqual([["0.1.0", "NodeVersionStatusPending"]])
    }), 120_000)
})
