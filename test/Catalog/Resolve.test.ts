/**
 * Resolution over real HTTP and PostgreSQL: `GET /nodes/{nodeId}/install` with `version_range`
 * (node-semver and PEP 440 forms) and `host_version` answers the newest installable version that
 * is not yanked and satisfies both, or 404/409 saying which constraint excluded what; the pinned
 * `version` keeps its behaviour; the bulk `POST /nodes/resolve` answers each item alike, counts
 * no download, and refuses too many items with 413 before reading any.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { query } from "../support/Db.ts"
import { expectBadRequest, expectError, expectStatus, get, send } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"
import { zipOf } from "../support/Zip.ts"
import { install, makePublisher, type Publisher, published, upload } from "../Publishing/Flow.ts"

/** Publishes and uploads a valid archive: the version is Active. */
const release = (service: Running, publisher: Publisher, nodeId: string, version: string, host?: string) =>
  Effect.gen(function*() {
    const { signedUrl } = yield* published(service, publisher, nodeId, version, {
      versionFields: host === undefined ? {} : { supported_host_version: host }
    })
    const zip = yield* Effect.promise(() => zipOf({ "pkg/__init__.py": `VERSION = "${version}"\n` }))
    expectStatus(yield* upload(service, signedUrl, zip), 200, `upload ${nodeId}@${version}`)
  })

const ranged = (service: Running, nodeId: string, q: Record<string, string>) =>
  send(service, "GET", `/nodes/${nodeId}/install?${new URLSearchParams(q).toString()}`)

const chosen = (service: Running, nodeId: string, q: Record<string, string>) =>
  Effect.map(ranged(service, nodeId, q), (answer) => {
    expectStatus(answer, 200, `install ${nodeId} ${JSON.stringify(q)}`)
    return (answer.body as { version: string }).version
  })

const downloads = (service: Running, nodeId: string) =>
  Effect.map(get(service, `/nodes/${nodeId}`), (answer) => (answer.body as { downloads: number }).downloads)

const resolve = (service: Running, body: unknown) => send(service, "POST", "/nodes/resolve", { body })

layer(Service.layer(), { excludeTestServices: true })("resolution", (it) => {
  let acme: Publisher

  it.effect("setup: lamp 1.2.0 (any host), 1.3.0 (>=0.3.15), 1.4.0 (>=0.3.20), 1.5.0 yanked, 2.0.0-beta.1 and 2.0.0 (>=0.4); 3.0.0 pending", () =>
    Effect.gen(function*() {
      const service = yield* Service
      acme = yield* makePublisher(service, "acme")
      yield* release(service, acme, "lamp", "1.2.0")
      yield* release(service, acme, "lamp", "1.3.0", ">=0.3.15")
      yield* release(service, acme, "lamp", "1.4.0", ">=0.3.20")
      yield* release(service, acme, "lamp", "1.5.0")
      yield* release(service, acme, "lamp", "2.0.0-beta.1", ">=0.4")
      yield* release(service, acme, "lamp", "2.0.0", ">=0.4")
      yield* published(service, acme, "lamp", "3.0.0")
      expectStatus(
        yield* send(service, "POST", "/publishers/acme/nodes/lamp/versions/1.5.0/yank", { token: acme.ownerJwt, body: { reason: "broken" } }),
        200,
        "yank 1.5.0"
      )
      yield* published(service, acme, "bare", "1.0.0")
    }))

  it.effect("ranges in node-semver and PEP 440 forms choose the newest version that is not yanked", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const cases: ReadonlyArray<readonly [string, string]> = [
        ["^1.2", "1.4.0"],
        ["~1.3.0", "1.3.0"],
        [">=1 <2", "1.4.0"],
        ["1.x", "1.4.0"],
        [">=1.2,<2", "1.4.0"],
        ["~=1.2", "1.4.0"],
        ["==1.2.*", "1.2.0"],
        ["!=1.4.0,<2", "1.3.0"],
        ["*", "2.0.0"],
        ["", "2.0.0"],
        // npm's rule: a pre-release only for a range naming one of the same release
        [">=2.0.0-beta <2.0.0", "2.0.0-beta.1"],
        ["<2", "1.4.0"]
      ]
      for (const [range, version] of cases) {
        expect(yield* chosen(service, "lamp", { version_range: range }), range).toBe(version)
      }
    }))

  it.effect("the host version filters as GET /nodes's does; a git describe tag, unknown, and the clients' alias", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expect(yield* chosen(service, "lamp", { host_version: "0.3.10" })).toBe("1.2.0")
      expect(yield* chosen(service, "lamp", { host_version: "v0.3.16-2-g05b2453" })).toBe("1.3.0")
      expect(yield* chosen(service, "lamp", { host_version: "0.3.25", version_range: "^1" })).toBe("1.4.0")
      expect(yield* chosen(service, "lamp", { host_version: "unknown" })).toBe("2.0.0")
      expect(yield* chosen(service, "lamp", { comfyui_version: "0.3.16", version_range: "~=1.2" })).toBe("1.3.0")
      // the list's latest_version under the same host agrees
      const listed = (yield* get(service, "/nodes?node_id=lamp&host_version=0.3.16")).body as { nodes: Array<{ latest_version?: { version: string } }> }
      expect(listed.nodes[0]?.latest_version?.version).toBe("1.3.0")
    }))

  it.effect("refusals say which constraint excluded what", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const host = expectError(yield* ranged(service, "lamp", { version_range: "^1.3", host_version: "0.3.10" }), 409, "host_version_unsupported")
      expect(host.message).toBe(
        "Node 'lamp': 3 versions satisfy ^1.3 (1 yanked) but none supports host 0.3.10; newest excluded: 1.4.0 requires host >=0.3.20"
      )
      const none = expectError(yield* ranged(service, "lamp", { version_range: "~1.2.3" }), 404, "no_installable_version")
      expect(none.message).toBe("Node 'lamp': none of 6 installable versions satisfies ~1.2.3; newest: 2.0.0")
      const yanked = expectError(yield* ranged(service, "lamp", { version_range: "^1.5" }), 404, "no_installable_version")
      expect(yanked.message).toBe("Node 'lamp': 1 version satisfies ^1.5 but it is yanked; newest: 1.5.0")
      const onlyHost = expectError(yield* ranged(service, "lamp", { version_range: ">=1.3", host_version: "0.2.0" }), 409, "host_version_unsupported")
      expect(onlyHost.message).toBe("Node 'lamp': 4 versions satisfy >=1.3 (1 yanked) but none supports host 0.2.0; newest excluded: 2.0.0 requires host >=0.4")
      expectError(yield* ranged(service, "bare", { version_range: "^1" }), 404, "no_installable_version")
      expectError(yield* ranged(service, "nope", { version_range: "^1" }), 404, "not_found")
    }))

  it.effect("the pinned version keeps its behaviour: a yanked one installs; with a host it must admit it", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expect((expectStatus(yield* install(service, "lamp", "1.5.0"), 200, "pinned yanked").body as { version: string }).version).toBe("1.5.0")
      expect((expectStatus(yield* install(service, "lamp"), 200, "unpinned").body as { version: string }).version).toBe("2.0.0")
      expect(yield* chosen(service, "lamp", { version: "1.5.0", host_version: "0.3.10" })).toBe("1.5.0")
      const e = expectError(yield* ranged(service, "lamp", { version: "1.4.0", host_version: "0.3.10" }), 409, "host_version_unsupported")
      expect(e.message).toContain("1.4.0 requires host >=0.3.20")
      expectError(yield* ranged(service, "lamp", { version: "3.0.0", host_version: "0.3.10" }), 404, "no_installable_version")
    }))

  it.effect("bad input is a 400 naming the parameter", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const range of ["^^1", ">=1,,<2", "~=1", "banana", "x".repeat(201), "==1.*.2"]) {
        expectBadRequest(yield* ranged(service, "lamp", { version_range: range }), "version_range")
      }
      expectBadRequest(yield* ranged(service, "lamp", { host_version: "abc" }), "host_version")
      expectBadRequest(yield* ranged(service, "lamp", { version: "1.2.0", version_range: "^1" }), "version_range")
    }))

  it.effect("a ranged install counts one download, once per client, version and hour like any install", () =>
    Effect.gen(function*() {
      const service = yield* Service
      // this client's installs of the hour so far are forgotten: the next one counts
      yield* query(service, "DELETE FROM install_counts")
      const before = yield* downloads(service, "lamp")
      expect(yield* chosen(service, "lamp", { version_range: "==1.2.*" })).toBe("1.2.0")
      expect(yield* downloads(service, "lamp")).toBe(before + 1)
      // the same client and version within the hour is not counted again
      expect(yield* chosen(service, "lamp", { version_range: "==1.2.*" })).toBe("1.2.0")
      expect(yield* downloads(service, "lamp")).toBe(before + 1)
    }))

  it.effect("bulk: each item's choice or reason, in order, with no download counted", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* published(service, acme, "shady", "1.0.0")
      yield* query(service, "UPDATE nodes SET status = 'NodeStatusBanned' WHERE id = 'shady'")
      const before = yield* downloads(service, "lamp")
      const answer = expectStatus(
        yield* resolve(service, {
          host_version: "0.3.16",
          nodes: [
            { id: "lamp", range: "^1.2" },
            { id: "lamp" },
            { id: "lamp", range: "^1.4" },
            { id: "lamp", range: "~1.2.3" },
            { id: "nope" },
            { id: "shady" },
            { id: "bare" },
            { id: "lamp", range: ">=1.2,<1.3" }
          ]
        }),
        200,
        "resolve"
      )
      const items = (answer.body as { nodes: Array<Record<string, unknown>> }).nodes
      expect(items.map((i) => i.version ?? i.error)).toEqual([
        "1.3.0",
        "1.3.0",
        "host_version_unsupported",
        "no_installable_version",
        "not_found",
        "node_banned",
        "no_installable_version",
        "1.2.0"
      ])
      expect(items[0]).toEqual({ id: "lamp", range: "^1.2", version: "1.3.0", downloadUrl: expect.stringMatching(/^https?:\/\/.*\/lamp\/1\.3\.0$/) })
      expect(items[2]).toEqual({
        id: "lamp",
        range: "^1.4",
        error: "host_version_unsupported",
        reason: "2 versions satisfy ^1.4 (1 yanked) but none supports host 0.3.16; newest excluded: 1.4.0 requires host >=0.3.20"
      })
      expect(yield* downloads(service, "lamp")).toBe(before)
      // the clients' alias, and no host
      const aliased = expectStatus(yield* resolve(service, { comfyui_version: "0.3.10", nodes: [{ id: "lamp" }] }), 200, "alias")
      expect((aliased.body as { nodes: Array<{ version: string }> }).nodes[0]?.version).toBe("1.2.0")
      const anyHost = expectStatus(yield* resolve(service, { nodes: [{ id: "lamp" }] }), 200, "no host")
      expect((anyHost.body as { nodes: Array<{ version: string }> }).nodes[0]?.version).toBe("2.0.0")
      expect(expectStatus(yield* resolve(service, { nodes: [] }), 200, "empty").body).toEqual({ nodes: [] })
    }))

  it.effect("bulk bad input: 400 naming the item's range or the field, 413 naming nodes past 500 items, even with a bad range past them", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectBadRequest(yield* resolve(service, { nodes: [{ id: "lamp" }, { id: "lamp", range: "^^1" }] }), "nodes.1.range")
      expectBadRequest(yield* resolve(service, { nodes: [{ id: "lamp", extra: 1 }] }), "nodes.0.extra")
      expectBadRequest(yield* resolve(service, { host_version: "abc", nodes: [] }), "host_version")
      expectBadRequest(yield* resolve(service, {}), "nodes")
      expectStatus(yield* resolve(service, { nodes: Array.from({ length: 500 }, () => ({ id: "lamp", range: "^1" })) }), 200, "500 items")
      const over = expectError(yield* resolve(service, { nodes: Array.from({ length: 501 }, () => ({ id: "lamp" })) }), 413, "payload_too_large")
      expect(over.message).toContain("'nodes'")
      // a malformed range past the limit does not turn the 413 into a 400
      const many = Array.from({ length: 10_000 }, (_, i) => ({ id: `node-${i}`, range: i === 9_999 ? "^^1" : "^1.2" }))
      const huge = expectError(yield* resolve(service, { nodes: many }), 413, "payload_too_large")
      expect(huge.message).toContain("'nodes' has 10000 items")
    }))
})
