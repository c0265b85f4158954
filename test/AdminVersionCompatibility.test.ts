/**
 * A site admin's change of a version (`PUT /admin/nodes/{nodeId}/versions/{version}`): its
 * compatibility, as the admin front-end's compatibility editor sends it (registry-web
 * components/admin/NodeVersionCompatibilityEditModal.tsx), with or without a status move, and
 * the catalogue's host_version filter following the stored range. Real HTTP against a real
 * PostgreSQL; stored rows read back with SQL. Status moves alone: Admin.test.ts and
 * Publishing/Lifecycle.prop.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as fc from "fast-check"
import semver from "semver"
import { HostRangeFromString } from "../src/Domain/Semver.ts"
import { decodeNodeList, decodeVersion } from "./support/Catalogue.ts"
import { bearerClient } from "./support/Client.ts"
import { queryOne } from "./support/Db.ts"
import { type Answer, expectBadRequest, expectError, expectStatus, get, send } from "./support/Http.ts"
import { forAll } from "./support/Property.ts"
import { type Running, Service } from "./support/Service.ts"
import { zipOf } from "./support/Zip.ts"
import { makePublisher, type Publisher, published, upload } from "./Publishing/Flow.ts"

// --- helpers -----------------------------------------------------------------------------------

interface StoredVersion {
  readonly status: string
  readonly status_reason: string | null
  readonly supported_os: Array<string>
  readonly supported_accelerators: Array<string>
  readonly supported_host_version: string | null
  readonly supported_host_frontend_version: string | null
  readonly admits_any_host: boolean
  readonly intervals: number
}

/** The version's stored row, with the number of key intervals the host_version filter reads. */
const stored = (service: Running, nodeId: string, version: string) =>
  queryOne<StoredVersion>(
    service,
    `SELECT status, status_reason, supported_os, supported_accelerators, supported_host_version,
            supported_host_frontend_version, admits_any_host,
            (SELECT count(*)::int FROM node_version_host_ranges r WHERE r.version_id = v.id) AS intervals
     FROM node_versions v WHERE node_id = $1 AND version = $2`,
    [nodeId, version]
  )

const updatedAt = (service: Running, nodeId: string) =>
  Effect.map(queryOne<{ at: string }>(service, "SELECT updated_at::text AS at FROM nodes WHERE id = $1", [nodeId]), (r) => r!.at)

/** The ids `GET /nodes?<query>` lists among `nodeId`'s (through the page cache). */
const listed = (service: Running, nodeId: string, q: string) =>
  Effect.map(get(service, `/nodes?node_id=${nodeId}&${q}`), (answer) =>
    decodeNodeList(expectStatus(answer, 200, `GET /nodes?${q}`).body).nodes.map((n) => n.id))

const admin = (service: Running) => Effect.promise(() => service.token({ sub: "root", admin: true }))

const edit = (service: Running, token: string, nodeId: string, version: string, body: unknown): Effect.Effect<Answer> =>
  send(service, "PUT", `/admin/nodes/${nodeId}/versions/${version}`, { token, body })

/** What registry-web's compatibility editor sends (onSubmit): the four fields, lists trimmed, sorted and unique, no status. */
const editorBody = (fields: { frontend: string; host: string; os: ReadonlyArray<string>; accelerators: ReadonlyArray<string> }) => ({
  supported_comfyui_frontend_version: fields.frontend,
  supported_comfyui_version: fields.host,
  supported_os: [...new Set(fields.os)].sort(),
  supported_accelerators: [...new Set(fields.accelerators)].sort()
})

const hostRange = Schema.decodeSync(HostRangeFromString(200))

layer(Service.layer(), { excludeTestServices: true })("a version's compatibility, set by a site admin", (it) => {
  let acme: Publisher
  let root: string
  let goodZip: Uint8Array

  /** A published version with its archive: Active, installable, listed. */
  const activeVersion = (nodeId: string, version: string, range?: string) =>
    Effect.gen(function*() {
      const service = yield* Service
      const versionFields = range === undefined ? {} : { supported_host_version: range }
      const { signedUrl } = yield* published(service, acme, nodeId, version, { versionFields })
      expectStatus(yield* upload(service, signedUrl, goodZip), 200, `upload ${nodeId}@${version}`)
    })

  it.effect("seeds a publisher and an admin", () =>
    Effect.gen(function*() {
      const service = yield* Service
      acme = yield* makePublisher(service, "acme")
      root = yield* admin(service)
      goodZip = yield* Effect.promise(() => zipOf({ "pkg/__init__.py": "NODES = {}\n" }))
    }))

  it.effect("registry-web NodeVersionCompatibilityEditModal.tsx: its exact body sets the compatibility; host_version and comfyui_version filters follow", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* activeVersion("compat-tool", "1.0.0", ">=0.3.0 <1.0.0")
      expect(yield* listed(service, "compat-tool", "host_version=0.3.5")).toEqual(["compat-tool"])
      expect(yield* listed(service, "compat-tool", "host_version=2.1.0")).toEqual([])
      const before = yield* updatedAt(service, "compat-tool")

      const answer = yield* edit(service, root, "compat-tool", "1.0.0", editorBody({
        frontend: ">=1.20.0",
        host: ">=2.0.0,<3",
        os: ["windows", "linux", "linux"],
        accelerators: ["CUDA"]
      }))
      const version = decodeVersion(expectStatus(answer, 200, "the editor's request").body)
      expect(version).toMatchObject({
        status: "NodeVersionStatusActive",
        supported_host_version: ">=2.0.0 <3.0.0",
        supported_host_frontend_version: ">=1.20.0",
        supported_os: ["linux", "windows"],
        supported_accelerators: ["CUDA"]
      })
      expect(answer.text).not.toContain("comfy")
      expect(yield* stored(service, "compat-tool", "1.0.0")).toMatchObject({ admits_any_host: false, intervals: 1 })
      expect(yield* updatedAt(service, "compat-tool")).not.toBe(before)

      // the cached pages asked for above are stale now: both names of the filter follow
      expect(yield* listed(service, "compat-tool", "host_version=0.3.5")).toEqual([])
      expect(yield* listed(service, "compat-tool", "host_version=2.1.0")).toEqual(["compat-tool"])
      expect(yield* listed(service, "compat-tool", "comfyui_version=v2.1.0-1-g05b2453")).toEqual(["compat-tool"])
      expect(yield* listed(service, "compat-tool", "comfyui_version=0.3.5")).toEqual([])
      const node = decodeNodeList(expectStatus(yield* get(service, "/nodes?node_id=compat-tool"), 200, "list").body).nodes[0]!
      expect(node.latest_version?.supported_host_version).toBe(">=2.0.0 <3.0.0")
    }))

  it.effect("registry-web NodeVersionCompatibilityEditModal.tsx: the fields emptied clear the version's compatibility; every host admitted", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const answer = yield* edit(service, root, "compat-tool", "1.0.0", editorBody({ frontend: "", host: "", os: [], accelerators: [] }))
      expect(decodeVersion(expectStatus(answer, 200, "cleared").body)).toMatchObject({ supported_os: [], supported_accelerators: [] })
      expect(yield* stored(service, "compat-tool", "1.0.0")).toMatchObject({
        supported_host_version: "",
        supported_host_frontend_version: "",
        admits_any_host: true,
        intervals: 0
      })
      expect(yield* listed(service, "compat-tool", "host_version=0.1.0")).toEqual(["compat-tool"])
    }))

  it.effect("typed client: a status move and the compatibility are one change; a refused move changes neither", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* activeVersion("both-tool", "1.0.0")
      const client = yield* bearerClient(service, root)
      const path = { nodeId: "both-tool", version: "1.0.0" }
      const flagged = yield* client.api.admin.moderateVersion({
        params: path,
        payload: { status: "NodeVersionStatusFlagged", status_reason: "checked by hand", supported_host_version: hostRange("^1.4"), supported_os: ["linux"] }
      })
      expect(flagged).toMatchObject({ status: "NodeVersionStatusFlagged", status_reason: "checked by hand", supported_host_version: "^1.4" })
      const before = yield* stored(service, "both-tool", "1.0.0")
      // Pending is reached from nowhere: the whole request is refused
      expectError(yield* edit(service, root, "both-tool", "1.0.0", { status: "NodeVersionStatusPending", supported_os: ["mac"], supported_comfyui_version: ">=9" }), 409, "conflict")
      expect(yield* stored(service, "both-tool", "1.0.0")).toEqual(before)
      // Active needs an archive; this one has one
      const active = yield* client.api.admin.moderateVersion({ params: path, payload: { status: "NodeVersionStatusActive", supported_accelerators: ["ROCm"] } })
      expect(active).toMatchObject({ status: "NodeVersionStatusActive", supported_accelerators: ["ROCm"], supported_os: ["linux"] })
      expect(active.status_reason).toBeUndefined()
    }))

  it.effect("an empty body changes nothing and answers the version; a reason alone explains the current status", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const before = yield* stored(service, "both-tool", "1.0.0")
      const at = yield* updatedAt(service, "both-tool")
      const answer = decodeVersion(expectStatus(yield* edit(service, root, "both-tool", "1.0.0", {}), 200, "empty body").body)
      expect(answer).toMatchObject({ version: "1.0.0", status: before!.status, supported_accelerators: ["ROCm"] })
      expect(yield* stored(service, "both-tool", "1.0.0")).toEqual(before)
      expect(yield* updatedAt(service, "both-tool")).toBe(at)
      const explained = yield* edit(service, root, "both-tool", "1.0.0", { status_reason: "reviewed by hand" })
      expect(decodeVersion(expectStatus(explained, 200, "reason alone").body)).toMatchObject({
        status: "NodeVersionStatusActive",
        status_reason: "reviewed by hand"
      })
    }))

  it.effect("a deleted version's compatibility is 404 (as the publisher's edit of it); its status-only requests answer as before", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* activeVersion("gone-tool", "1.0.0", ">=0.3.0")
      expectStatus(yield* send(service, "DELETE", "/publishers/acme/nodes/gone-tool/versions/1.0.0", { token: acme.ownerJwt }), 204, "delete")
      const before = yield* stored(service, "gone-tool", "1.0.0")
      expectError(yield* edit(service, root, "gone-tool", "1.0.0", editorBody({ frontend: "", host: ">=2", os: [], accelerators: [] })), 404, "not_found")
      expectError(yield* edit(service, root, "gone-tool", "1.0.0", { status: "NodeVersionStatusDeleted", supported_os: ["linux"] }), 404, "not_found")
      expectError(yield* edit(service, root, "gone-tool", "1.0.0", { status: "NodeVersionStatusActive" }), 409, "conflict")
      expectStatus(yield* edit(service, root, "gone-tool", "1.0.0", { status: "NodeVersionStatusDeleted" }), 200, "deleted stays deleted")
      expect(yield* stored(service, "gone-tool", "1.0.0")).toMatchObject({ ...before, status_reason: null })
      expectError(yield* edit(service, root, "gone-tool", "9.9.9", { supported_os: ["linux"] }), 404, "not_found")
      expectError(yield* edit(service, root, "no-such-node", "1.0.0", {}), 404, "not_found")
    }))

  it.effect("site admins only; a bad range is a 400 naming the field as it was sent", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const before = yield* stored(service, "compat-tool", "1.0.0")
      expectError(yield* edit(service, acme.ownerJwt, "compat-tool", "1.0.0", { supported_os: ["linux"] }), 403, "forbidden")
      expectBadRequest(yield* edit(service, root, "compat-tool", "1.0.0", { supported_comfyui_version: ">=0.3.0,," }), "'supported_comfyui_version'")
      expectBadRequest(yield* edit(service, root, "compat-tool", "1.0.0", { supported_host_frontend_version: "latest" }), "supported_host_frontend_version")
      expect(yield* stored(service, "compat-tool", "1.0.0")).toEqual(before)
    }))

  // --- the body's validation, by property -----------------------------------------------------------

  /** A field's value: valid ones with what is stored for them, invalid ones with none. */
  type Choice<A> = { readonly send: unknown; readonly valid: true; readonly stores: A } | { readonly send: unknown; readonly valid: false }
  const valid = <A>(send: unknown, stores: A): Choice<A> => ({ send, valid: true, stores })
  const invalid = (send: unknown): Choice<never> => ({ send, valid: false })
  // invalid values one time in five, so that about a third of the bodies are valid throughout
  const mostlyValid = <A>(good: fc.Arbitrary<Choice<A>>, bad: fc.Arbitrary<Choice<never>>) =>
    fc.oneof({ arbitrary: good, weight: 4 }, { arbitrary: bad, weight: 1 })

  const ranges: ReadonlyArray<readonly [string, string]> = [
    [">=0.3.0,<2.0.0", ">=0.3.0 <2.0.0"],
    ["^1.4", "^1.4"],
    ["~=0.3", ">=0.3.0 <1.0.0-0"],
    ["!=0.3.1", "<0.3.1 || >0.3.1"],
    ["", ""],
    [">=2.0.0 <3", ">=2.0.0 <3"]
  ]
  const range = mostlyValid(
    fc.constantFrom(...ranges).map(([raw, text]) => valid(raw, text)),
    fc.constantFrom("not a range", ">=0.3.0,,", 42, null, ["^1"], "1".repeat(201)).map(invalid)
  )
  const textList = mostlyValid(
    fc.uniqueArray(fc.constantFrom("linux", "windows", "macos", "CUDA", "ROCm", "DirectML"), { maxLength: 4 }).map((l) => valid(l, l)),
    fc.constantFrom("linux", [1], [null], Array(21).fill("x"), ["x".repeat(101)], { os: "linux" }).map(invalid)
  )
  const body = fc.record({
    status: fc.option(mostlyValid(
      fc.constant(valid("NodeVersionStatusActive", "NodeVersionStatusActive")),
      fc.constantFrom("NodeVersionStatusGone", 3, null).map(invalid)
    ), { nil: undefined }),
    status_reason: fc.option(mostlyValid(
      fc.string({ maxLength: 40 }).filter((s) => !s.includes("\u0000")).map((s) => valid(s, s)),
      fc.constantFrom(5, "x".repeat(2001), "nul\u0000").map(invalid)
    ), { nil: undefined }),
    supported_os: fc.option(textList, { nil: undefined }),
    supported_accelerators: fc.option(textList, { nil: undefined }),
    supported_host_version: fc.option(range, { nil: undefined }),
    supported_host_frontend_version: fc.option(range, { nil: undefined }),
    // registry-web's names, or the interface's
    aliases: fc.boolean(),
    probe: fc.constantFrom("0.1.0", "0.3.1", "0.3.5", "1.4.2", "2.0.0", "2.5.0", "3.0.0")
  })

  let run = 0

  it.effect(
    "any field invalid: 400 naming one of them, nothing changes; otherwise the fields sent replace the stored ones and the host_version filter agrees with the range",
    () =>
      forAll(
        { b: body },
        ({ b }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const nodeId = `prop-compat-${run++}`
            yield* activeVersion(nodeId, "1.0.0", ">=0.3.0 <1.0.0")
            const fields = {
              status: b.status,
              status_reason: b.status_reason,
              supported_os: b.supported_os,
              supported_accelerators: b.supported_accelerators,
              supported_host_version: b.supported_host_version,
              supported_host_frontend_version: b.supported_host_frontend_version
            }
            const wireName = (name: string) => b.aliases ? name.replace("_host_", "_comfyui_") : name
            const sent = Object.fromEntries(
              Object.entries(fields).flatMap(([name, choice]) => choice === undefined ? [] : [[wireName(name), choice.send]])
            )
            const before = yield* stored(service, nodeId, "1.0.0")
            const answer = yield* edit(service, root, nodeId, "1.0.0", sent)
            const what = JSON.stringify(sent)
            const refused = Object.entries(fields).filter(([, choice]) => choice !== undefined && !choice.valid).map(([name]) => name)
            if (refused.length > 0) {
              const e = expectError(answer, 400, "bad_request")
              // a field is named as it was sent (docs/compatibility.md)
              expect(refused.some((name) => e.message.includes(wireName(name))), `${what}: ${e.message}`).toBe(true)
              expect(yield* stored(service, nodeId, "1.0.0"), what).toEqual(before)
              return
            }
            expectStatus(answer, 200, what)
            const stores = <A>(choice: Choice<A> | undefined, otherwise: A) => choice !== undefined && choice.valid ? choice.stores : otherwise
            const host = stores(fields.supported_host_version as Choice<string> | undefined, before!.supported_host_version)
            const moved = fields.status !== undefined || fields.status_reason !== undefined
            expect(yield* stored(service, nodeId, "1.0.0"), what).toMatchObject({
              status: "NodeVersionStatusActive",
              status_reason: moved ? stores(fields.status_reason as Choice<string> | undefined, null) : before!.status_reason,
              supported_os: stores(fields.supported_os as Choice<Array<string>> | undefined, before!.supported_os),
              supported_accelerators: stores(fields.supported_accelerators as Choice<Array<string>> | undefined, before!.supported_accelerators),
              supported_host_version: host,
              supported_host_frontend_version: stores(
                fields.supported_host_frontend_version as Choice<string> | undefined,
                before!.supported_host_frontend_version
              ),
              admits_any_host: host === ""
            })
            const admitted = host === "" || semver.satisfies(b.probe, host!, { includePrerelease: true })
            expect(yield* listed(service, nodeId, `host_version=${b.probe}`), `${what} probing ${b.probe}`).toEqual(admitted ? [nodeId] : [])
          }),
        { numRuns: 30 }
      ),
    300_000
  )
})
