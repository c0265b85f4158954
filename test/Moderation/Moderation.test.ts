/**
 * Scanning on upload over real HTTP: the public rule set, a clean pack going Active, a pack with a
 * medium finding going Active with the finding shown to its publisher's members, a malicious one
 * held (Flagged) and never installed, and who may read a version's review.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { ScanRules, VersionReview } from "../../src/Domain/Moderation.ts"
import { rules } from "../../src/Moderation/Rules.ts"
import { decodeExact, decodeVersion } from "../support/Catalogue.ts"
import { addMember } from "../support/Db.ts"
import { expectError, expectStatus, get, send } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"
import { makePublisher, type Publisher, published, releasePack } from "../Publishing/Flow.ts"

const decodeReview = decodeExact(VersionReview)

const release = releasePack

const reviewOf = (service: Running, token: string | undefined, nodeId: string, version: string) =>
  send(service, "GET", `/publishers/acme/nodes/${nodeId}/versions/${version}/review`, { token })

layer(Service.layer(), { excludeTestServices: true })("scanning on upload", (it) => {
  let acme: Publisher
  let memberJwt = ""

  it.effect("setup: a publisher and a member", () =>
    Effect.gen(function*() {
      const service = yield* Service
      acme = yield* makePublisher(service, "acme")
      yield* addMember(service, "acme", "mia", "member")
      memberJwt = yield* Effect.promise(() => service.token({ sub: "mia" }))
    }))

  it.effect("the rule set is public", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const listed = decodeExact(ScanRules)(expectStatus(yield* get(service, "/moderation/rules"), 200, "rules").body)
      expect(listed.rule_set_version).toMatch(/^\d{4}\.\d{2}\.\d{2}$/)
      expect(listed.rules.map((r) => r.id)).toEqual(expect.arrayContaining(rules.map((r) => r.id)))
      expect(listed.rules.find((r) => r.id === "exec-decoded-data")?.severity).toBe("high")
    }))

  it.effect("a clean pack goes Active; its review shows a passed scan and every stage", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const answer = yield* release(service, acme, "clean", "1.0.0", { "__init__.py": "NODE_CLASS_MAPPINGS = {}\n", "requirements.txt": "numpy\n" })
      expect(decodeVersion(expectStatus(answer, 200, "upload").body).status).toBe("NodeVersionStatusActive")
      const review = decodeReview(expectStatus(yield* reviewOf(service, acme.ownerJwt, "clean", "1.0.0"), 200, "review").body)
      expect(review.scan).toMatchObject({ outcome: "passed", findings: [], files_scanned: 2, findings_not_kept: 0 })
      expect(review.pipeline.map((s) => `${s.stage}:${s.outcome}`)).toEqual(["uploaded:stored", "checked:passed", "scanned:passed", "listed:active"])
    }))

  it.effect("a medium finding lets the version go Active, and its publisher's members read it", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const answer = yield* release(service, acme, "installer", "1.0.0", {
        "__init__.py": "import subprocess, sys\nsubprocess.check_call([sys.executable, '-m', 'pip', 'install', 'extra'])\n"
      })
      expect(decodeVersion(expectStatus(answer, 200, "upload").body).status).toBe("NodeVersionStatusActive")
      const review = decodeReview(expectStatus(yield* reviewOf(service, memberJwt, "installer", "1.0.0"), 200, "review").body)
      expect(review.scan?.findings).toEqual([{
        rule: "install-at-import",
        severity: "medium",
        file: "__init__.py",
        line: 2,
        excerpt: "subprocess.check_call([sys.executable, '-m', 'pip', 'install', 'extra'])"
      }])
      // the public sees the status alone
      const shown = expectStatus(yield* get(service, "/nodes/installer/versions/1.0.0"), 200, "version")
      expect(shown.text).not.toContain("install-at-import")
    }))

  it.effect("a high finding holds the version: Flagged with the reason, never installed, the scan held", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* release(service, acme, "sly", "1.0.0", { "__init__.py": "VERSION = 1\n" })
      const answer = yield* release(service, acme, "sly", "1.1.0", { "__init__.py": "import base64\nexec(base64.b64decode(BLOB))\n" })
      const held = decodeVersion(expectStatus(answer, 200, "upload").body)
      expect(held.status).toBe("NodeVersionStatusFlagged")
      expect(held.status_reason).toMatch(/^Held for review: the archive scan found 1 high-severity finding \(exec-decoded-data\)/)
      expect(decodeVersion(expectStatus(yield* get(service, "/nodes/sly/install"), 200, "install").body).version).toBe("1.0.0")
      expectError(yield* get(service, "/nodes/sly/install?version=1.1.0"), 404)
      const review = decodeReview(expectStatus(yield* reviewOf(service, acme.ownerJwt, "sly", "1.1.0"), 200, "review").body)
      expect(review).toMatchObject({ status: "NodeVersionStatusFlagged", scan: { outcome: "held" } })
      expect(review.scan?.findings[0]).toMatchObject({ rule: "exec-decoded-data", severity: "high", file: "__init__.py", line: 2 })
      expect(review.pipeline.map((s) => s.stage)).toEqual(["uploaded", "checked", "scanned"])
      expect(review.pipeline[2]).toMatchObject({ outcome: "held", detail: expect.stringMatching(/1 high, 0 medium, 0 low$/) })
    }))

  it.effect("binary data named as source is a finding, not a failure", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const answer = yield* release(service, acme, "odd", "1.0.0", { "__init__.py": "X = 1\n", "nodes.py": new Uint8Array([0, 1, 2, 255]) })
      expect(decodeVersion(expectStatus(answer, 200, "upload").body).status).toBe("NodeVersionStatusActive")
      const review = decodeReview(expectStatus(yield* reviewOf(service, acme.ownerJwt, "odd", "1.0.0"), 200, "review").body)
      expect(review.scan?.findings.map((f) => [f.rule, f.file])).toEqual([["binary-source", "nodes.py"]])
    }))

  it.effect("who reads a review: members and site admins; strangers 403, anonymous 401; unknown versions 404", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const stranger = yield* Effect.promise(() => service.token({ sub: "stan" }))
      const siteAdmin = yield* Effect.promise(() => service.token({ sub: "root", admin: true }))
      expectStatus(yield* reviewOf(service, siteAdmin, "clean", "1.0.0"), 200, "site admin")
      expectError(yield* reviewOf(service, stranger, "clean", "1.0.0"), 403, "forbidden")
      expectError(yield* reviewOf(service, undefined, "clean", "1.0.0"), 401, "unauthorized")
      expectError(yield* reviewOf(service, acme.ownerJwt, "clean", "9.9.9"), 404, "not_found")
      expectError(yield* reviewOf(service, acme.ownerJwt, "no-such-node", "1.0.0"), 404, "not_found")
      // a version published before it had an archive: no scan yet, and the review says so by leaving it out
      yield* published(service, acme, "clean", "2.0.0")
      const pending = decodeReview(expectStatus(yield* reviewOf(service, acme.ownerJwt, "clean", "2.0.0"), 200, "pending").body)
      expect(pending.scan).toBeUndefined()
      expect(pending.pipeline).toEqual([])
    }))
})
