/**
 * The lifecycle against a model: random sequences of publish (with a passing, a failing or no
 * upload), owner delete, admin moderation, yank and unyank, a retry through a fresh upload URL,
 * and install. A failing upload is refused (422) and leaves the version Pending; a yanked version
 * keeps its status, is installable only by its exact number, and shows `yanked` and its reason.
 * After every step `latest_version` (of the node and in the listing) is the model's highest
 * active semver that is not yanked, `downloads` the number of
 * versions installed (one client: each counts once an hour); a number once published is refused
 * forever to another manifest, while the same publish or upload repeated is a replay unless the
 * version is deleted. And 50 concurrent installs of one node from one address add exactly one download.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import semver from "semver"
import { Node, type NodeVersionStatus } from "../../src/Domain/Node.ts"
import { nodeVersionStatusMoves } from "../../src/Domain/Transitions.ts"
import { move } from "../support/Moves.ts"
import { decodeExact, decodeNodeList, decodeVersion } from "../support/Catalogue.ts"
import { type Answer, expectError, expectStatus, get, send } from "../support/Http.ts"
import { clearOfHourEnd } from "../support/Hours.ts"
import { Service } from "../support/Service.ts"
import { rawZip, zipOf } from "../support/Zip.ts"
import { decodePublished, expectRejected, install, makePublisher, type Publisher, publish, upload } from "./Flow.ts"
import { forAll } from "../support/Property.ts"

const decodeNode = decodeExact(Node)

const versions = ["0.1.0", "0.9.0", "1.0.0-alpha.1", "1.0.0-beta", "1.0.0", "1.0.1", "1.2.0", "1.10.0", "2.0.0-rc.1", "10.0.0"]
const statuses: ReadonlyArray<NodeVersionStatus> = [
  "NodeVersionStatusActive",
  "NodeVersionStatusFlagged",
  "NodeVersionStatusBanned",
  "NodeVersionStatusDeleted",
  "NodeVersionStatusPending"
]

type Step =
  | { readonly kind: "publish"; readonly version: string; readonly upload: "good" | "bad" | "none" }
  | { readonly kind: "delete"; readonly version: string }
  | { readonly kind: "moderate"; readonly version: string; readonly status: NodeVersionStatus }
  | { readonly kind: "install"; readonly version: string | undefined }
  | { readonly kind: "yank"; readonly version: string; readonly reason: string }
  | { readonly kind: "unyank"; readonly version: string }
  | { readonly kind: "retry"; readonly version: string }

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("publish" as const), version: fc.constantFrom(...versions), upload: fc.constantFrom("good" as const, "bad" as const, "none" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("delete" as const), version: fc.constantFrom(...versions) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("moderate" as const), version: fc.constantFrom(...versions), status: fc.constantFrom(...statuses) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("install" as const), version: fc.option(fc.constantFrom(...versions), { nil: undefined }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("yank" as const), version: fc.constantFrom(...versions), reason: fc.constantFrom("broken", "use 1.2.0", "security") }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("unyank" as const), version: fc.constantFrom(...versions) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("retry" as const), version: fc.constantFrom(...versions) }) }
)

interface ModelVersion {
  status: NodeVersionStatus
  hasArchive: boolean
  /** Which archive it holds, once uploaded (a failing one is never stored). */
  archive?: "good" | "bad"
  /** The reason, while yanked. */
  yanked?: string | undefined
}

/** What a version's answer shows of its yank, by the model. */
const yankFields = (v: ModelVersion) => ({ yanked: v.yanked !== undefined, yanked_reason: v.yanked })

const installable = (v: ModelVersion | undefined) => v !== undefined && v.status === "NodeVersionStatusActive" && v.hasArchive

layer(Service.layer(), { excludeTestServices: true })("publishing lifecycle against a model", (it) => {
  let acme: Publisher
  let admin = ""
  let run = 0
  let goodZip: Uint8Array = new Uint8Array()
  const badZip = rawZip([{ name: "../evil.py", content: "x" }])

  it.effect("setup: a publisher, an admin, an archive", () =>
    Effect.gen(function*() {
      const service = yield* Service
      acme = yield* makePublisher(service, "acme")
      admin = yield* Effect.promise(() => service.token({ sub: "root", admin: true }))
      goodZip = yield* Effect.promise(() => zipOf({ "pkg/__init__.py": "NODES = {}\n" }))
    }))

  it.effect(
    "latest_version is the highest active semver, downloads count installs once a version, numbers are never reused",
    () =>
      forAll(
        { steps: fc.array(step, { minLength: 1, maxLength: 14 }) },
        ({ steps }) =>
          Effect.gen(function*() {
            const service = yield* Service
            yield* clearOfHourEnd(60)
            const nodeId = `prop-${run++}`
            const model = new Map<string, ModelVersion>()
            // one client: each version it installs counts once (this hour)
            const installed = new Set<string>()
            // a yanked version is never the latest nor an unpinned install's choice
            const highestActive = () =>
              [...model.entries()].filter(([, v]) => v.status === "NodeVersionStatusActive" && v.yanked === undefined).map(([k]) => k)
                .sort(semver.rcompare)[0]
            const highestInstallable = () =>
              [...model.entries()].filter(([, v]) => installable(v) && v.yanked === undefined).map(([k]) => k)
                .sort(semver.rcompare)[0]
            /** The answer of a version endpoint: the version, its status and yank as the model has them. */
            const expectVersion = (answer: Answer, v: ModelVersion, what: string) => {
              const shown = decodeVersion(expectStatus(answer, 200, what).body)
              expect(shown.status, what).toBe(v.status)
              expect({ yanked: shown.yanked, yanked_reason: shown.yanked_reason }, what).toEqual(yankFields(v))
              return shown
            }
            const versionPath = (version: string) => `/publishers/acme/nodes/${nodeId}/versions/${version}`

            for (const s of steps) {
              const what = `${JSON.stringify(s)} on ${JSON.stringify([...model])}`
              switch (s.kind) {
                case "publish": {
                  const answer = yield* publish(service, acme.id, nodeId, s.version, { pat: acme.pat })
                  const existing = model.get(s.version)
                  if (existing?.status === "NodeVersionStatusDeleted") {
                    expectError(answer, 409, "version_exists")
                    break
                  }
                  // every publish here has the same manifest: one of an existing version is a replay
                  expect(answer.headers.get("idempotent-replayed"), what).toBe(existing === undefined ? null : "true")
                  const { signedUrl, node_version } = decodePublished(expectStatus(answer, 201, what).body)
                  const current = existing ?? { status: "NodeVersionStatusPending", hasArchive: false }
                  model.set(s.version, current)
                  expect(node_version.status, what).toBe(current.status)
                  expect(node_version.yanked, what).toBe(current.yanked !== undefined)
                  if (s.upload === "none") break
                  const uploaded = yield* upload(service, signedUrl, s.upload === "good" ? goodZip : badZip)
                  if (current.status === "NodeVersionStatusPending" && s.upload === "bad") {
                    // refused: nothing stored, the version stays Pending for a corrected upload
                    expectRejected(uploaded)
                  } else if (current.status === "NodeVersionStatusPending") {
                    const status = "NodeVersionStatusActive"
                    expect(decodeVersion(expectStatus(uploaded, 200, what).body).status, what).toBe(status)
                    expect(uploaded.headers.get("idempotent-replayed"), what).toBeNull()
                    model.set(s.version, { status, hasArchive: true, archive: s.upload })
                  } else if (current.archive === s.upload) {
                    expect(decodeVersion(expectStatus(uploaded, 200, what).body).status, what).toBe(current.status)
                    expect(uploaded.headers.get("idempotent-replayed"), what).toBe("true")
                  } else {
                    expectError(uploaded as Answer, 409, "version_immutable")
                  }
                  break
                }
                case "delete": {
                  const answer = yield* send(service, "DELETE", `/publishers/acme/nodes/${nodeId}/versions/${s.version}`, { token: acme.ownerJwt })
                  const current = model.get(s.version)
                  if (current === undefined) {
                    // the node itself may not exist yet
                    expectError(answer, 404)
                  } else if (current.status === "NodeVersionStatusDeleted") {
                    expectError(answer, 404)
                  } else if (move(nodeVersionStatusMoves, current.status, "NodeVersionStatusDeleted") === "refused") {
                    expectError(answer, 409, "conflict")
                  } else {
                    expectStatus(answer, 204, what)
                    current.status = "NodeVersionStatusDeleted"
                  }
                  break
                }
                case "moderate": {
                  const answer = yield* send(service, "PUT", `/admin/nodes/${nodeId}/versions/${s.version}`, {
                    token: admin,
                    body: { status: s.status, status_reason: "moderated" }
                  })
                  const current = model.get(s.version)
                  if (current === undefined) {
                    expectError(answer, 404)
                  } else if (move(nodeVersionStatusMoves, current.status, s.status) === "refused") {
                    expectError(answer, 409, "conflict")
                  } else if (s.status === "NodeVersionStatusActive" && !current.hasArchive) {
                    expectError(answer, 409, "archive_missing")
                  } else {
                    // a moderation leaves the yank as it is
                    expectVersion(answer, { ...current, status: s.status }, what)
                    current.status = s.status
                  }
                  break
                }
                case "yank":
                case "unyank": {
                  const answer = yield* send(service, "POST", `${versionPath(s.version)}/${s.kind}`, {
                    token: acme.ownerJwt,
                    ...(s.kind === "yank" ? { body: { reason: s.reason } } : {})
                  })
                  const current = model.get(s.version)
                  if (current === undefined || current.status === "NodeVersionStatusDeleted") {
                    expectError(answer, 404, "not_found")
                    break
                  }
                  // either way idempotent: a yank again replaces the reason, an unyank of a version not yanked changes nothing
                  current.yanked = s.kind === "yank" ? s.reason : undefined
                  expectVersion(answer, current, what)
                  break
                }
                case "retry": {
                  const answer = yield* send(service, "POST", `${versionPath(s.version)}/upload-url`, { body: { personal_access_token: acme.pat } })
                  const current = model.get(s.version)
                  if (current === undefined || current.status === "NodeVersionStatusDeleted") {
                    expectError(answer, 404, "not_found")
                  } else if (current.status !== "NodeVersionStatusPending") {
                    expectError(answer, 409, "version_immutable")
                  } else {
                    const { signedUrl, node_version } = expectStatus(answer, 200, what).body as { signedUrl: string; node_version: unknown }
                    expect(decodeVersion(node_version).status, what).toBe("NodeVersionStatusPending")
                    // the corrected archive, to the fresh URL
                    const uploaded = expectVersion(yield* upload(service, signedUrl, goodZip), { ...current, status: "NodeVersionStatusActive" }, what)
                    expect(uploaded.downloadUrl, what).toBeDefined()
                    Object.assign(current, { status: "NodeVersionStatusActive", hasArchive: true, archive: "good" })
                  }
                  break
                }
                case "install": {
                  const answer: Answer = yield* install(service, nodeId, s.version)
                  const expected = s.version === undefined ? highestInstallable() : installable(model.get(s.version)) ? s.version : undefined
                  if (expected === undefined) {
                    expectError(answer, 404)
                  } else {
                    const v = expectVersion(answer, model.get(expected)!, what)
                    expect(v.version, what).toBe(expected)
                    expect(v.downloadUrl, what).toMatch(new RegExp(`/archives/${nodeId}/${expected.replace(/\./g, "\\.")}$`))
                    installed.add(expected)
                  }
                  break
                }
              }
              if (model.size === 0) continue
              const node = decodeNode(expectStatus(yield* get(service, `/nodes/${nodeId}`), 200, what).body)
              expect(node.latest_version?.version, what).toBe(highestActive())
              expect(node.downloads, what).toBe(installed.size)
              const listed = decodeNodeList(expectStatus(yield* get(service, `/nodes?node_id=${nodeId}`), 200, what).body)
              expect(listed.nodes[0]?.latest_version?.version, what).toBe(highestActive())
            }
            // every number published stays taken to another manifest, whatever became of it
            for (const version of model.keys()) {
              const other = { pat: acme.pat, versionFields: { changelog: "another release" } }
              expectError(yield* publish(service, acme.id, nodeId, version, other), 409, "version_exists")
            }
          }),
        { numRuns: 15 }
      ),
    { timeout: 300_000 }
  )

  it.effect("50 concurrent installs of one node from one address add exactly one download", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* clearOfHourEnd(60)
      const published = decodePublished(expectStatus(yield* publish(service, acme.id, "popular", "1.0.0", { pat: acme.pat }), 201, "publish").body)
      expectStatus(yield* upload(service, published.signedUrl, goodZip), 200, "upload")
      const before = decodeNode((yield* get(service, "/nodes/popular")).body).downloads ?? 0
      const answers = yield* Effect.all(Array.from({ length: 50 }, () => install(service, "popular")), { concurrency: "unbounded" })
      expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200))
      const after = decodeNode((yield* get(service, "/nodes/popular")).body).downloads
      expect(after).toBe(before + 1)
    }), { timeout: 120_000 })
})
