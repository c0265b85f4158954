/**
 * The review of held versions against a model: random sequences of uploads (clean, or with a high
 * finding), messages, review requests and decisions on a node's versions. After each step the
 * answer is the model's: a clean upload goes Active, a held one Flagged; messages go on held and
 * rejected versions only; a review is asked for once per upload of a held version; a decision
 * needs a held version, approval lists it and rejection bans it. And the node's held_version is
 * the model's newest held version above its newest active one, the site admins' list holds
 * exactly the model's held versions, and the audit log one entry per decision.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import semver from "semver"
import { HeldVersions } from "../../src/Domain/Moderation.ts"
import { Node } from "../../src/Domain/Node.ts"
import { decodeExact, decodeVersion } from "../support/Catalogue.ts"
import { expectError, expectStatus, get, send } from "../support/Http.ts"
import { forAll } from "../support/Property.ts"
import { Service } from "../support/Service.ts"
import { zipOf } from "../support/Zip.ts"
import { makePublisher, type Publisher, published, upload } from "../Publishing/Flow.ts"

type Step =
  | { readonly kind: "upload"; readonly malicious: boolean }
  | { readonly kind: "message"; readonly pick: number }
  | { readonly kind: "request"; readonly pick: number }
  | { readonly kind: "decide"; readonly pick: number; readonly approve: boolean }

const pick = fc.nat({ max: 1000 })
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("upload" as const), malicious: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("message" as const), pick }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("request" as const), pick }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("decide" as const), pick, approve: fc.boolean() }) }
)

type State = "active" | "held" | "rejected"
interface ModelVersion {
  readonly version: string
  state: State
  requested: boolean
}

layer(Service.layer(), { excludeTestServices: true })("reviews against a model", (it) => {
  let acme: Publisher
  let admin = ""
  let run = 0
  let decisions = 0

  it.effect("setup", () =>
    Effect.gen(function*() {
      const service = yield* Service
      acme = yield* makePublisher(service, "acme")
      admin = yield* Effect.promise(() => service.token({ sub: "root", admin: true }))
    }))

  it.effect("uploads, messages, requests and decisions answer as the model says", () =>
    forAll(
      { steps: fc.array(step, { minLength: 1, maxLength: 10 }) },
      ({ steps }) =>
        Effect.gen(function*() {
          const service = yield* Service
          const nodeId = `review-${run++}`
          const versions: Array<ModelVersion> = []
          const path = (v: ModelVersion) => `/publishers/acme/nodes/${nodeId}/versions/${v.version}/review`
          for (const s of steps) {
            const what = `${JSON.stringify(s)} with ${JSON.stringify(versions)}`
            const target = versions.length === 0 || s.kind === "upload" ? undefined : versions[s.pick % versions.length]!
            switch (s.kind) {
              case "upload": {
                const version = `1.0.${versions.length}`
                const { signedUrl } = yield* published(service, acme, nodeId, version)
                const files = s.malicious ? { "__init__.py": "import zlib\nexec(zlib.decompress(B))\n" } : { "__init__.py": "X = 1\n" }
                const answer = yield* upload(service, signedUrl, yield* Effect.promise(() => zipOf(files)))
                const state: State = s.malicious ? "held" : "active"
                expect(decodeVersion(expectStatus(answer, 200, what).body).status, what).toBe(
                  s.malicious ? "NodeVersionStatusFlagged" : "NodeVersionStatusActive"
                )
                versions.push({ version, state, requested: false })
                break
              }
              case "message": {
                if (target === undefined) break
                const answer = yield* send(service, "POST", `${path(target)}/messages`, { token: acme.ownerJwt, body: { body: "about this" } })
                if (target.state === "active") expectError(answer, 409, "conflict")
                else expectStatus(answer, 201, what)
                break
              }
              case "request": {
                if (target === undefined) break
                const answer = yield* send(service, "POST", `${path(target)}/request`, { token: acme.ownerJwt })
                if (target.state !== "held" || target.requested) {
                  expectError(answer, 409, "conflict")
                } else {
                  expectStatus(answer, 200, what)
                  target.requested = true
                }
                break
              }
              case "decide": {
                if (target === undefined) break
                const answer = yield* send(service, "POST", `/admin/nodes/${nodeId}/versions/${target.version}/review/decision`, {
                  token: admin,
                  body: { decision: s.approve ? "approve" : "reject", reason: "decided" }
                })
                if (target.state !== "held") {
                  expectError(answer, 409, "conflict")
                } else {
                  const decided = decodeVersion(expectStatus(answer, 200, what).body)
                  expect(decided.status, what).toBe(s.approve ? "NodeVersionStatusActive" : "NodeVersionStatusBanned")
                  target.state = s.approve ? "active" : "rejected"
                  decisions += 1
                }
                break
              }
            }

            if (versions.length === 0) continue
            // the node's held version: the newest held one above the newest active one
            const newestActive = versions.filter((v) => v.state === "active").map((v) => v.version).sort(semver.rcompare)[0]
            const held = versions.filter((v) => v.state === "held" && (newestActive === undefined || semver.gt(v.version, newestActive)))
              .sort((a, b) => semver.rcompare(a.version, b.version))[0]
            const node = decodeExact(Node)(expectStatus(yield* get(service, `/nodes/${nodeId}`), 200, what).body)
            expect(node.held_version && { version: node.held_version.version, stage: node.held_version.stage }, what).toEqual(
              held && { version: held.version, stage: held.requested ? "review_requested" : "awaiting_review" }
            )
            expect(node.latest_version?.version, what).toBe(newestActive)
          }
          const listed = decodeExact(HeldVersions)(
            expectStatus(yield* get(service, `/admin/held-versions?publisher_id=acme&limit=200`, { token: admin }), 200, "held").body
          )
          expect(listed.versions.filter((v) => v.node_id === nodeId).map((v) => v.version).sort(), "held list").toEqual(
            versions.filter((v) => v.state === "held").map((v) => v.version).sort()
          )
          const log = yield* get(service, "/admin/audit-log?limit=1", { token: admin })
          expect((expectStatus(log, 200, "log").body as { total: number }).total, "audit entries").toBe(decisions)
        }),
      { numRuns: 15 }
    ))
})
