/**
 * A version's `host_node_extract_status`: `pending` once published, `success` once its host-node
 * records are posted, `failed` when the extraction job reports failure
 * (`PUT /nodes/{id}/versions/{v}/host-node-extract-status`). A property test runs random
 * sequences of publishes, record posts and failure reports (by site admins and by others)
 * against a model; every answer kind that carries a version shows the status, read before and
 * after each change so that no cached page or version answer keeps an old one. Real HTTP, real
 * PostgreSQL. The host application reads the field to decide whether a pack's nodes are known
 * (ComfyUI_frontend src/services/comfyRegistryService.ts `packNodesAvailable`).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import type { HostNodeExtractStatus } from "../src/Domain/HostNode.ts"
import { hostNodeExtractMoves } from "../src/Domain/Transitions.ts"
import { seedActors, tokensFor } from "./support/Actors.ts"
import { query } from "./support/Db.ts"
import { type Answer, expectBadRequest, expectError, expectStatus, get, send } from "./support/Http.ts"
import { move } from "./support/Moves.ts"
import { forAll } from "./support/Property.ts"
import { type Running, Service } from "./support/Service.ts"
import { makePublisher, type Publisher, published, upload } from "./Publishing/Flow.ts"
import { zipOf } from "./support/Zip.ts"

const tokens = tokensFor("stranger", "siteAdmin")
type Caller = "stranger" | "siteAdmin"

const statusPath = (nodeId: string, version: string) => `/nodes/${nodeId}/versions/${version}/host-node-extract-status`
const recordsPath = (nodeId: string, version: string) => `/nodes/${nodeId}/versions/${version}/host-nodes`

/** The status `GET /nodes/{id}/versions/{v}` answers: undefined when absent; 404 when there is no version. */
const versionStatus = (service: Running, nodeId: string, version: string) =>
  Effect.map(get(service, `/nodes/${nodeId}/versions/${version}`), (answer) => {
    if (answer.status === 404) return 404 as const
    return (expectStatus(answer, 200, `${nodeId}@${version}`).body as { host_node_extract_status?: string }).host_node_extract_status
  })

const reportFailure = (service: Running, nodeId: string, version: string, caller: Caller, reason?: string) =>
  send(service, "PUT", statusPath(nodeId, version), {
    token: tokens[caller],
    body: { status: "failed", ...(reason === undefined ? {} : { reason }) }
  })

const postRecords = (service: Running, nodeId: string, version: string, caller: Caller, names: ReadonlyArray<string>) =>
  send(service, "POST", recordsPath(nodeId, version), { token: tokens[caller], body: names.map((host_node_name) => ({ host_node_name })) })

/** The stored status, read with SQL: what the answers must agree with. */
const storedStatus = (service: Running, nodeId: string, version: string) =>
  Effect.map(
    query<{ s: string | null }>(service, "SELECT host_node_extract_status AS s FROM node_versions WHERE node_id = $1 AND version = $2", [nodeId, version]),
    (rows) => rows[0]?.s
  )

// --- the property's steps --------------------------------------------------------------------------

type Step =
  | { readonly kind: "publish"; readonly v: number }
  | { readonly kind: "records"; readonly v: number; readonly by: Caller; readonly repeated: boolean }
  | { readonly kind: "failure"; readonly v: number; readonly by: Caller }

const caller = fc.constantFrom<Caller>("siteAdmin", "siteAdmin", "stranger")
const v = fc.integer({ min: 0, max: 2 })
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant("publish" as const), v }),
  fc.record({ kind: fc.constant("records" as const), v, by: caller, repeated: fc.boolean() }),
  fc.record({ kind: fc.constant("failure" as const), v, by: caller })
)

/**
 * The model's answer to a step, and the status after it. Nothing but a listed move of
 * hostNodeExtractMoves (or its own state) changes the status; refusals change nothing.
 */
const modelStep = (status: HostNodeExtractStatus | undefined, s: Step): { readonly answer: number; readonly next: HostNodeExtractStatus | undefined } => {
  switch (s.kind) {
    case "publish":
      // publishing the same manifest again is a replay: 201, nothing written
      return { answer: 201, next: status ?? "pending" }
    case "records":
      if (s.by !== "siteAdmin") return { answer: 403, next: status }
      if (status === undefined) return { answer: 404, next: status }
      if (s.repeated) return { answer: 409, next: status }
      expect(move(hostNodeExtractMoves, status, "success")).not.toBe("refused")
      return { answer: 201, next: "success" }
    case "failure": {
      if (s.by !== "siteAdmin") return { answer: 403, next: status }
      if (status === undefined) return { answer: 404, next: status }
      return move(hostNodeExtractMoves, status, "failed") === "refused"
        ? { answer: 409, next: status }
        : { answer: 204, next: "failed" }
    }
  }
}

let runs = 0
let names = 0

layer(Service.layer(), { excludeTestServices: true })("host_node_extract_status", (it) => {
  let publisher: Publisher

  it.effect("seeds a publisher and the callers", () =>
    Effect.gen(function*() {
      const service = yield* Service
      publisher = yield* makePublisher(service, "extractor-pub")
      // the cast's memberships need their publisher
      yield* service.writes.upsertPublishers([{ id: "acme" }])
      yield* seedActors(service, tokens)
    }))

  it.effect("follows the model over random publishes, record posts and failure reports", () =>
    forAll({ steps: fc.array(step, { minLength: 1, maxLength: 10 }) }, ({ steps }) =>
      Effect.gen(function*() {
        const service = yield* Service
        const nodeId = `extracted-${++runs}`
        const model = new Map<number, HostNodeExtractStatus>()
        for (const s of steps) {
          const version = `1.0.${s.v}`
          const { answer, next } = modelStep(model.get(s.v), s)
          const what = `${JSON.stringify(s)} from ${model.get(s.v)}`
          let got: Answer
          if (s.kind === "publish") {
            yield* published(service, publisher, nodeId, version)
            got = { status: 201 } as Answer
          } else if (s.kind === "records") {
            const name = `Node${++names}`
            got = yield* postRecords(service, nodeId, version, s.by, s.repeated ? [name, name] : [name])
          } else {
            got = yield* reportFailure(service, nodeId, version, s.by, "no NODE_CLASS_MAPPINGS")
          }
          expect(got.status, what).toBe(answer)
          if (answer >= 400) expectError(got, answer)
          if (next !== undefined) model.set(s.v, next)
          // every version as the answers and the table have it, after every step
          for (const i of [0, 1, 2]) {
            const expected = model.get(i)
            expect(yield* versionStatus(service, nodeId, `1.0.${i}`), `${what}: 1.0.${i}`).toBe(expected ?? 404)
            expect(yield* storedStatus(service, nodeId, `1.0.${i}`)).toBe(expected)
          }
        }
      }), { numRuns: 15 }), { timeout: 120_000 })

  it.effect("every answer carrying the version shows it: list, search, node, versions, version, bulk", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const archive = yield* Effect.promise(() => zipOf({ "pack/__init__.py": "NODE_CLASS_MAPPINGS = {}\n" }))
      for (const nodeId of ["shown-ok", "shown-failed"]) {
        const done = yield* published(service, publisher, nodeId, "1.0.0")
        expectStatus(yield* upload(service, done.signedUrl, archive), 200, `upload ${nodeId}`)
      }

      /** The status each answer kind carries for `nodeId`'s 1.0.0 (the version is Active: it is the latest). */
      const everywhere = (nodeId: string) =>
        Effect.gen(function*() {
          type V = { host_node_extract_status?: string; version?: string }
          const list = expectStatus(yield* get(service, `/nodes?node_id=${nodeId}`), 200, "list").body as { nodes: ReadonlyArray<{ latest_version?: V }> }
          const node = expectStatus(yield* get(service, `/nodes/${nodeId}`), 200, "node").body as { latest_version?: V }
          const versions = expectStatus(yield* get(service, `/nodes/${nodeId}/versions`), 200, "versions").body as ReadonlyArray<V>
          const version = expectStatus(yield* get(service, `/nodes/${nodeId}/versions/1.0.0`), 200, "version").body as V
          const bulk = expectStatus(
            yield* send(service, "POST", "/bulk/nodes/versions", { body: { node_versions: [{ node_id: nodeId, version: "1.0.0" }] } }),
            200,
            "bulk"
          ).body as { node_versions: ReadonlyArray<{ node_version?: V }> }
          const found = expectStatus(yield* get(service, `/nodes/search?search=${nodeId}`), 200, "search").body as {
            nodes: ReadonlyArray<{ id: string; latest_version?: V }>
          }
          return {
            list: list.nodes[0]?.latest_version?.host_node_extract_status,
            search: found.nodes.find((n) => n.id === nodeId)?.latest_version?.host_node_extract_status,
            node: node.latest_version?.host_node_extract_status,
            versions: versions.find((x) => x.version === "1.0.0")?.host_node_extract_status,
            version: version.host_node_extract_status,
            bulk: bulk.node_versions[0]?.node_version?.host_node_extract_status
          }
        })
      const all = (status: string) => ({ list: status, search: status, node: status, versions: status, version: status, bulk: status })

      // read once each, so that the pages and version answers are cached when the status changes
      expect(yield* everywhere("shown-ok")).toEqual(all("pending"))
      expect(yield* everywhere("shown-failed")).toEqual(all("pending"))

      expectStatus(yield* postRecords(service, "shown-ok", "1.0.0", "siteAdmin", ["Sampler"]), 201, "records")
      expect(yield* everywhere("shown-ok")).toEqual(all("success"))

      expectStatus(yield* reportFailure(service, "shown-failed", "1.0.0", "siteAdmin", "import error"), 204, "failure")
      expect(yield* everywhere("shown-failed")).toEqual(all("failed"))
      // reporting it again changes nothing; the records, when they come, make it a success
      expectStatus(yield* reportFailure(service, "shown-failed", "1.0.0", "siteAdmin"), 204, "failure again")
      expectStatus(yield* postRecords(service, "shown-failed", "1.0.0", "siteAdmin", []), 201, "no records at all")
      expect(yield* everywhere("shown-failed")).toEqual(all("success"))
      // a failure after the records are in is refused, and the status stays
      expectError(yield* reportFailure(service, "shown-ok", "1.0.0", "siteAdmin"), 409, "conflict")
      expect(yield* everywhere("shown-ok")).toEqual(all("success"))
    }), { timeout: 60_000 })

  it.effect("bad reports are 400 naming the field; a deleted or missing version is 404", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* published(service, publisher, "reported", "1.0.0")
      const put = (body: unknown) => send(service, "PUT", statusPath("reported", "1.0.0"), { token: tokens.siteAdmin, body })
      expectBadRequest(yield* put({ status: "success" }), "status")
      expectBadRequest(yield* put({}), "status")
      expectBadRequest(yield* put({ status: "failed", reason: "x".repeat(2001) }), "reason")
      expectBadRequest(yield* put({ status: "failed", success: false }), "success")
      expect(yield* versionStatus(service, "reported", "1.0.0")).toBe("pending")
      expectError(yield* reportFailure(service, "reported", "9.9.9", "siteAdmin"), 404, "not_found")
      expectError(yield* reportFailure(service, "nobody", "1.0.0", "siteAdmin"), 404, "not_found")
    }))
})
