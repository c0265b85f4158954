/**
 * A scan that does not finish, over real HTTP: the upload holds the version (Flagged) and says
 * why, the node shows it held with the stage `scan_failed`, its publisher reads the failed scan,
 * and the durable retry job scans it again: once a scan finishes and passes, the version is
 * listed. The scan thread is the test's own program (threads/Misbehaving.ts), which hangs on
 * chosen files, with a short time limit.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { VersionReview } from "../../src/Domain/Moderation.ts"
import { decodeExact, decodeVersion } from "../support/Catalogue.ts"
import { query } from "../support/Db.ts"
import { eventually } from "../support/Eventually.ts"
import { expectStatus, get, send } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"
import { makePublisher, type Publisher, releasePack } from "../Publishing/Flow.ts"

const decodeReview = decodeExact(VersionReview)

const release = releasePack

const reviewOf = (service: Running, publisher: Publisher, nodeId: string, version: string) =>
  Effect.map(
    send(service, "GET", `/publishers/acme/nodes/${nodeId}/versions/${version}/review`, { token: publisher.ownerJwt }),
    (answer) => decodeReview(expectStatus(answer, 200, "review").body)
  )

const misbehaving = new URL("./threads/Misbehaving.ts", import.meta.url)

layer(
  Service.layer((c) => ({ ...c, scanning: { fileTimeoutMillis: 300, threadProgram: Option.some(misbehaving) } })),
  { excludeTestServices: true }
)("scans that do not finish", (it) => {
  let acme: Publisher

  it.effect("setup: a publisher", () =>
    Effect.gen(function*() {
      acme = yield* makePublisher(yield* Service, "acme")
    }))

  it.effect("the upload holds the version and says why; the node shows it held; a retry that passes lists it", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* release(service, acme, "slow", "1.0.0", { "__init__.py": "NODE_CLASS_MAPPINGS = {}\n" })
      // the scan hangs for the next 2 s: the upload's scan fails, a retry after the runner's backoff passes
      const until = Date.now() + 2_000
      const answer = yield* release(service, acme, "slow", "1.1.0", { "__init__.py": `# hang until ${until}\nNODE_CLASS_MAPPINGS = {}\n` })
      const held = decodeVersion(expectStatus(answer, 200, "upload").body)
      expect(held.status).toBe("NodeVersionStatusFlagged")
      expect(held.status_reason).toMatch(/^Held: the archive scan did not finish \(the scan of __init__\.py took longer than 0\.3 s\); it is retried/)

      const node = expectStatus(yield* get(service, "/nodes/slow"), 200, "node").body as Record<string, unknown>
      expect(node.held_version).toMatchObject({ version: "1.1.0", stage: "scan_failed" })
      expect((node.latest_version as Record<string, unknown>).version).toBe("1.0.0")

      const failed = yield* reviewOf(service, acme, "slow", "1.1.0")
      expect(failed.scan).toMatchObject({ outcome: "failed", failure: "the scan of __init__.py took longer than 0.3 s", findings: [] })
      expect(failed.pipeline.map((s) => `${s.stage}:${s.outcome}`)).toEqual(["uploaded:stored", "checked:passed", "scanned:failed"])

      const { value: listed } = yield* eventually(reviewOf(service, acme, "slow", "1.1.0"), (r) => r.status === "NodeVersionStatusActive", 30_000, 200)
      expect(listed.status).toBe("NodeVersionStatusActive")
      expect(listed.scan).toMatchObject({ outcome: "passed" })
      expect(listed.pipeline.map((s) => `${s.stage}:${s.outcome}`).slice(-2)).toEqual(["scanned:passed", "listed:active"])
      const after = expectStatus(yield* get(service, "/nodes/slow"), 200, "node").body as Record<string, unknown>
      expect(after.held_version).toBeUndefined()
      expect((after.latest_version as Record<string, unknown>).version).toBe("1.1.0")
    }), { timeout: 60_000 })

  it.effect("a scan that never finishes is retried a bounded number of times, then left held for a site admin", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const answer = yield* release(service, acme, "stuck", "1.0.0", { "hang.py": "x = 1\n" })
      expect(decodeVersion(expectStatus(answer, 200, "upload").body).status).toBe("NodeVersionStatusFlagged")
      const [version] = yield* query<{ id: string }>(service, "SELECT id::text FROM node_versions WHERE node_id = 'stuck'")
      // the runner's backoff grows to minutes: the job's later attempts are brought forward
      const gaveUp = (review: { readonly pipeline: ReadonlyArray<{ readonly detail?: string }> }) => /^gave up after 5 scans/.test(review.pipeline.at(-1)?.detail ?? "")
      const { value: review } = yield* eventually(
        Effect.andThen(
          query(service, `UPDATE graphile_worker._private_jobs SET run_at = now() WHERE task_id =
            (SELECT id FROM graphile_worker._private_tasks WHERE identifier = 'moderation-scan-retry') AND locked_at IS NULL`),
          reviewOf(service, acme, "stuck", "1.0.0")
        ),
        gaveUp,
        45_000,
        200
      )
      expect(review.pipeline.at(-1)?.detail).toMatch(/^gave up after 5 scans that did not finish; held for a site admin's review$/)
      expect(review.status).toBe("NodeVersionStatusFlagged")
      expect(review.pipeline.filter((s) => s.stage === "scanned" && s.outcome === "failed")).toHaveLength(6)
      const admin = yield* Effect.promise(() => service.token({ sub: "root", admin: true }))
      const held = expectStatus(yield* get(service, "/admin/held-versions", { token: admin }), 200, "held").body
      expect(JSON.stringify(held)).toContain(version!.id)
    }), { timeout: 90_000 })
})
