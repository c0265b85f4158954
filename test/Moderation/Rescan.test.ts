/**
 * RescanAllVersions over real HTTP, its durable job run by the service's job runner: versions whose
 * latest scan is of an older rule set are scanned again. An Active version the current rules hold
 * goes Flagged; one held by its scan and not reviewed that they pass goes Active; a decided one
 * keeps its status; an archive missing from the store is a failed scan in the pipeline. The older
 * rule set's verdicts are written here directly, as an older release of the service left them.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { RescanQueued, VersionReview } from "../../src/Domain/Moderation.ts"
import { ruleSetVersion } from "../../src/Moderation/Rules.ts"
import { decodeExact, decodeVersion } from "../support/Catalogue.ts"
import { query } from "../support/Db.ts"
import { eventually } from "../support/Eventually.ts"
import { expectError, expectStatus, get, send } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"
import { zipOf } from "../support/Zip.ts"
import { makePublisher, type Publisher, published, upload } from "../Publishing/Flow.ts"

const malicious = { "__init__.py": "import base64\nexec(base64.b64decode(B))\n" }
const clean = { "__init__.py": "X = 1\n" }

const release = (service: Running, publisher: Publisher, nodeId: string, files: Record<string, string>) =>
  Effect.gen(function*() {
    const { node_version, signedUrl } = yield* published(service, publisher, nodeId, "1.0.0")
    expectStatus(yield* upload(service, signedUrl, yield* Effect.promise(() => zipOf(files))), 200, `upload ${nodeId}`)
    return node_version.id
  })

/** What an older rule set decided: its scan row, and the status it gave. */
const olderVerdict = (service: Running, versionId: string, outcome: "passed" | "held", status: string) =>
  Effect.gen(function*() {
    yield* query(service, "UPDATE version_scans SET rule_set_version = '2000.01.01', outcome = $2 WHERE version_id = $1", [versionId, outcome])
    yield* query(service, "UPDATE node_versions SET status = $2, status_reason = NULL WHERE id = $1", [versionId, status])
    yield* query(service, "SELECT pg_notify('catalogue_changed', 'test')")
  })

const statusOf = (service: Running, nodeId: string) =>
  Effect.map(get(service, `/nodes/${nodeId}/versions/1.0.0`), (answer) => decodeVersion(expectStatus(answer, 200, nodeId).body).status)

layer(Service.layer(), { excludeTestServices: true })("rescans after a rule change", (it) => {
  it.effect("the current rules decide again what an older rule set let through or held; decisions stand", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const acme = yield* makePublisher(service, "acme")
      const admin = yield* Effect.promise(() => service.token({ sub: "root", admin: true }))
      const sneaky = yield* release(service, acme, "sneaky", malicious)
      const innocent = yield* release(service, acme, "innocent", clean)
      const judged = yield* release(service, acme, "judged", malicious)
      const current = yield* release(service, acme, "current", clean)
      const lost = yield* release(service, acme, "lost", clean)
      expectStatus(
        yield* send(service, "POST", "/admin/nodes/judged/versions/1.0.0/review/decision", { token: admin, body: { decision: "reject", reason: "payload" } }),
        200,
        "reject"
      )
      yield* olderVerdict(service, sneaky, "passed", "NodeVersionStatusActive")
      yield* olderVerdict(service, innocent, "held", "NodeVersionStatusFlagged")
      yield* query(service, "UPDATE version_scans SET rule_set_version = '2000.01.01' WHERE version_id = $1", [judged])
      yield* query(service, "UPDATE version_scans SET rule_set_version = '2000.01.01' WHERE version_id = $1", [lost])
      yield* Effect.promise(() => fs.rm(path.join(service.config.storage.dir, `${lost}.zip`)))

      expectError(yield* send(service, "POST", "/admin/rescan", { token: acme.ownerJwt }), 403, "forbidden")
      const queued = decodeExact(RescanQueued)(expectStatus(yield* send(service, "POST", "/admin/rescan", { token: admin }), 202, "rescan").body)
      expect(queued.rule_set_version).toBe(ruleSetVersion)

      const scansOf = (versionId: string) =>
        Effect.map(query<{ n: number }>(service, "SELECT count(*)::int AS n FROM version_scans WHERE version_id = $1 AND rule_set_version = $2", [versionId, ruleSetVersion]), (rows) => rows[0]!.n)
      yield* eventually(Effect.all([scansOf(sneaky), scansOf(innocent), scansOf(judged)]), (counts) => counts.every((n) => n === 1), 20_000, 50)

      expect(yield* statusOf(service, "sneaky")).toBe("NodeVersionStatusFlagged")
      expect(yield* statusOf(service, "innocent")).toBe("NodeVersionStatusActive")
      expect(yield* statusOf(service, "judged")).toBe("NodeVersionStatusBanned")
      // a version already scanned with the current rules is not scanned again
      expect(yield* scansOf(current)).toBe(1)
      const [total] = yield* query<{ n: number }>(service, "SELECT count(*)::int AS n FROM version_scans WHERE version_id = $1", [current])
      expect(total!.n).toBe(1)

      const review = (nodeId: string) =>
        Effect.map(send(service, "GET", `/publishers/acme/nodes/${nodeId}/versions/1.0.0/review`, { token: acme.ownerJwt }), (answer) =>
          decodeExact(VersionReview)(expectStatus(answer, 200, nodeId).body))
      const sneakyReview = yield* review("sneaky")
      expect(sneakyReview.status_reason).toMatch(/^Held for review/)
      expect(sneakyReview.pipeline.at(-1)).toMatchObject({ stage: "scanned", outcome: "held", detail: expect.stringMatching(/^rescan, rule set /) })
      expect((yield* review("innocent")).pipeline.slice(-2).map((s) => `${s.stage}:${s.outcome}`)).toEqual(["scanned:passed", "listed:active"])
      yield* eventually(review("lost"), (r) => r.pipeline.some((s) => s.stage === "scanned" && s.outcome === "failed"), 20_000, 50)
    }))
})
