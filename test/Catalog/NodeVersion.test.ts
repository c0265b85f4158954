/**
 * GET /nodes/{nodeId}/versions/{versionId}: by version string or by the version's id; a banned
 * node (or a node of a banned publisher) is 403 node_banned; deleted or unknown things are 404.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { VersionInput } from "../../scripts/lib/Seeder.ts"
import { decodeVersion, isoMillis, uuidPattern, versionId } from "../support/Catalogue.ts"
import { clientFor } from "../support/Client.ts"
import { expectError, expectStatus, get } from "../support/Http.ts"
import { Service } from "../support/Service.ts"

const full: VersionInput = {
  node_id: "tool",
  version: "1.2.0",
  status: "NodeVersionStatusActive",
  status_reason: "passed checks",
  changelog: "Adds a slider",
  dependencies: ["torch>=2", "numpy"],
  deprecated: false,
  supported_os: ["Linux", "Windows"],
  supported_accelerators: ["CUDA"],
  supported_host_version: ">=1.0.0 <2.0.0",
  supported_host_frontend_version: "^1.5.0",
  tags: ["image"],
  created_at: new Date("2024-06-07T08:09:10.011Z")
}

const fetchVersion = (nodeId: string, version: string) =>
  Effect.gen(function*() {
    const service = yield* Service
    return yield* get(service, `/nodes/${encodeURIComponent(nodeId)}/versions/${encodeURIComponent(version)}`)
  })

const okVersion = (nodeId: string, version: string) =>
  Effect.gen(function*() {
    const answer = expectStatus(yield* fetchVersion(nodeId, version), 200, `${nodeId}@${version}`)
    expect(answer.headers.get("content-type")).toMatch(/^application\/json/)
    return decodeVersion(answer.body)
  })

/** The version through the typed client. */
const clientVersion = (nodeId: string, versionId: string) =>
  Effect.gen(function*() {
    const client = yield* clientFor(yield* Service)
    return yield* client.api.catalog.getNodeVersion({ params: { nodeId, versionId } })
  })

layer(Service.layer(), { excludeTestServices: true })("GET /nodes/{nodeId}/versions/{versionId}", (it) => {
  it.effect("seeds", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.upsertPublishers([{ id: "acme" }, { id: "evil", status: "PublisherStatusBanned" }])
      for (
        const node of [
          { id: "tool", publisher_id: "acme" },
          { id: "other", publisher_id: "acme" },
          { id: "banned", publisher_id: "acme", status: "NodeStatusBanned" as const },
          { id: "gone", publisher_id: "acme", status: "NodeStatusDeleted" as const },
          { id: "of-evil", publisher_id: "evil" }
        ]
      ) yield* service.writes.insertNodes([node])
      yield* service.writes.insertVersions([
        full,
        { node_id: "tool", version: "1.1.0", status: "NodeVersionStatusDeleted" },
        { node_id: "tool", version: "2.0.0-rc.1", status: "NodeVersionStatusPending" },
        { node_id: "tool", version: "1.0.0+build.5", status: "NodeVersionStatusActive" },
        { node_id: "other", version: "1.2.0", status: "NodeVersionStatusActive" },
        { node_id: "other", version: "9.9.9", status: "NodeVersionStatusActive" },
        { node_id: "banned", version: "1.0.0", status: "NodeVersionStatusActive" },
        { node_id: "gone", version: "1.0.0", status: "NodeVersionStatusActive" },
        { node_id: "of-evil", version: "1.0.0", status: "NodeVersionStatusActive" }
      ])
    }))

  it.effect("answers the version by its version string, every field as the interface names it", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const v = yield* okVersion("tool", "1.2.0")
      const id = yield* versionId(service, "tool", "1.2.0")
      expect(v).toEqual({
        changelog: "Adds a slider",
        createdAt: "2024-06-07T08:09:10.011Z",
        dependencies: ["torch>=2", "numpy"],
        dependency_requirements: [
          { requirement: "torch>=2", name: "torch", package: "torch", extras: [], specifier: ">=2" },
          { requirement: "numpy", name: "numpy", package: "numpy", extras: [], specifier: "" }
        ],
        deprecated: false,
        id,
        node_id: "tool",
        status: "NodeVersionStatusActive",
        status_reason: "passed checks",
        supported_accelerators: ["CUDA"],
        supported_host_frontend_version: "^1.5.0",
        supported_host_version: ">=1.0.0 <2.0.0",
        supported_os: ["Linux", "Windows"],
        tags: ["image"],
        tags_admin: [],
        version: "1.2.0",
        yanked: false
      })
      expect(v.id).toMatch(uuidPattern)
    }))

  it.effect("answers the same version by its id, in either case", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const id = yield* versionId(service, "tool", "1.2.0")
      const byString = yield* clientVersion("tool", "1.2.0")
      expect(byString).toMatchObject({ id, node_id: "tool", version: "1.2.0" })
      expect(yield* clientVersion("tool", id)).toEqual(byString)
      expect(yield* clientVersion("tool", id.toUpperCase())).toEqual(byString)
    }))

  it.effect("absent fields are omitted; other versions are answered whatever their (non-deleted) status", () =>
    Effect.gen(function*() {
      const pending = yield* okVersion("tool", "2.0.0-rc.1")
      expect(pending.status).toBe("NodeVersionStatusPending")
      expect(pending.version).toBe("2.0.0-rc.1")
      for (const absent of ["changelog", "status_reason", "supported_host_version", "host_node_extract_status", "downloadUrl"]) {
        expect(pending).not.toHaveProperty(absent)
      }
      expect(pending.createdAt).toMatch(isoMillis)
      // build metadata is part of the version string
      expect((yield* okVersion("tool", "1.0.0+build.5")).version).toBe("1.0.0+build.5")
      // the same version string on another node is that node's version
      const service = yield* Service
      const theirs = yield* okVersion("other", "1.2.0")
      expect(theirs.node_id).toBe("other")
      expect(theirs.id).toBe(yield* versionId(service, "other", "1.2.0"))
      expect(theirs.id).not.toBe(yield* versionId(service, "tool", "1.2.0"))
    }))

  it.effect("a deleted version is 404, by string and by id", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const id = yield* versionId(service, "tool", "1.1.0")
      expectError(yield* fetchVersion("tool", "1.1.0"), 404, "not_found")
      expectError(yield* fetchVersion("tool", id), 404, "not_found")
    }))

  it.effect("a version deleted later becomes 404; restored, it is back", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* okVersion("other", "9.9.9")
      yield* service.writes.setVersionStatus("other", "9.9.9", "NodeVersionStatusDeleted")
      expectError(yield* fetchVersion("other", "9.9.9"), 404, "not_found")
      yield* service.writes.setVersionStatus("other", "9.9.9", "NodeVersionStatusActive")
      expect((yield* okVersion("other", "9.9.9")).status).toBe("NodeVersionStatusActive")
    }))

  it.effect("unknown nodes and versions are 404", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const otherNodesVersion = yield* versionId(service, "other", "1.2.0")
      for (
        const [nodeId, version] of [
          ["nobody", "1.0.0"],
          ["tool", "3.0.0"],
          ["tool", "1.2"],
          ["tool", "v1.2.0"],
          ["tool", "1.0.0"], // only 1.0.0+build.5 exists
          ["tool", "00000000-0000-0000-0000-000000000000"],
          ["tool", "not-a-uuid-at-all"],
          ["tool", otherNodesVersion], // an id, but of another node's version
          ["nobody", otherNodesVersion]
        ]
      ) {
        expectError(yield* fetchVersion(nodeId!, version!), 404, "not_found")
      }
    }))

  it.effect("a deleted node's versions are 404", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectError(yield* fetchVersion("gone", "1.0.0"), 404, "not_found")
      expectError(yield* fetchVersion("gone", yield* versionId(service, "gone", "1.0.0")), 404, "not_found")
    }))

  it.effect("a banned node is 403 node_banned, by string and by id", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectError(yield* fetchVersion("banned", "1.0.0"), 403, "node_banned")
      expectError(yield* fetchVersion("banned", yield* versionId(service, "banned", "1.0.0")), 403, "node_banned")
    }))

  it.effect("a node of a banned publisher is 403", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const e = expectError(yield* fetchVersion("of-evil", "1.0.0"), 403)
      expect(["node_banned", "forbidden"]).toContain(e.error)
      // unbanned, the publisher's versions are served again
      yield* service.writes.setPublisherStatus("evil", "PublisherStatusActive")
      expect((yield* okVersion("of-evil", "1.0.0")).node_id).toBe("of-evil")
      yield* service.writes.setPublisherStatus("evil", "PublisherStatusBanned")
      expectError(yield* fetchVersion("of-evil", "1.0.0"), 403)
    }))

  it.effect("banning and unbanning a node moves it between 403 and 200", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.updateNode("other", { status: "NodeStatusBanned" })
      expectError(yield* fetchVersion("other", "1.2.0"), 403, "node_banned")
      yield* service.writes.updateNode("other", { status: "NodeStatusActive" })
      expect((yield* okVersion("other", "1.2.0")).version).toBe("1.2.0")
    }))

  it.effect("every error body is exactly {error, message}", () =>
    Effect.gen(function*() {
      for (const [nodeId, version, status] of [["nobody", "1.0.0", 404], ["tool", "1.1.0", 404], ["banned", "1.0.0", 403]] as const) {
        const answer = yield* fetchVersion(nodeId, version)
        expect(answer.status).toBe(status)
        expect(answer.headers.get("content-type")).toMatch(/^application\/json/)
        expect(Object.keys(answer.body as object).sort()).toEqual(["error", "message"])
        const e = expectError(answer, status)
        expect(e.message).not.toMatch(/SELECT|node_versions|stack|at .*\.ts/)
      }
    }))
})
