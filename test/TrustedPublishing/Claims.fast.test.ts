/**
 * How an identity token's claims are read and matched (src/TrustedPublishing/Claims.ts), against
 * independent oracles: ref patterns against a regular expression built here, the claims of
 * GitHub Actions' and GitLab's tokens of any repository read back as that repository and
 * workflow, and matching against a direct statement of what a trusted publisher allows, with the
 * refusal naming the claim at which the closest trusted publisher stopped.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { firstMismatch, matching, refMatches, type Rule, runOf, type WorkflowRun } from "../../src/TrustedPublishing/Claims.ts"
import { githubClaims, gitlabClaims } from "../support/OidcIssuer.ts"
import { forAllSync } from "../support/Property.ts"

const segment = fc.stringMatching(/^[A-Za-z0-9_.-]{1,12}$/).filter((s) => s !== "." && s !== "..")
const refText = fc.stringMatching(/^[a-z0-9/*.-]{0,16}$/)

/** The oracle: the pattern as an anchored regular expression, `*` as `.*`. */
const oracle = (pattern: string, ref: string) =>
  new RegExp(`^${pattern.split("*").map((part) => part.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&")).join(".*")}$`, "s").test(ref)

describe("ref patterns", () => {
  it("match exactly as the anchored regular expression with * as any characters", () =>
    forAllSync({ pattern: refText, ref: refText.map((r) => r.replace(/\*/g, "")) }, ({ pattern, ref }) => {
      expect(refMatches(pattern, ref)).toBe(oracle(pattern, ref))
    }, { numRuns: 2000 }))

  it("the documented example", () => {
    expect(refMatches("refs/tags/v*", "refs/tags/v1.2.0")).toBe(true)
    expect(refMatches("refs/tags/v*", "refs/heads/v1")).toBe(false)
    expect(refMatches("refs/tags/v*", "refs/tags/v")).toBe(true)
    expect(refMatches("refs/heads/main", "refs/heads/main-2")).toBe(false)
  })
})

describe("reading the run", () => {
  it("a GitHub Actions token names its repository, workflow file, ref, commit and run", () =>
    forAllSync({ owner: segment, name: segment, workflow: segment, run: fc.nat() }, ({ owner, name, workflow, run }) => {
      const read = runOf(githubClaims("aud", { repository: `${owner}/${name}`, workflow: `${workflow}.yml`, runId: String(run) }))
      if (!("run" in read)) return expect.fail(read.refusal.reason)
      expect(read.run).toMatchObject({
        repositoryOwner: owner,
        repositoryName: name,
        workflow: `.github/workflows/${workflow}.yml`,
        ref: "refs/tags/v1.0.0",
        runId: String(run)
      })
    }))

  it("a GitLab token of a project in nested groups names the project's path and its CI file", () =>
    forAllSync({ groups: fc.array(segment, { minLength: 1, maxLength: 3 }), name: segment, file: segment }, ({ groups, file, name }) => {
      const project = [...groups, name].join("/")
      const read = runOf(gitlabClaims("aud", "gitlab.example", { project, ciFile: `ci/${file}.yml` }))
      if (!("run" in read)) return expect.fail(read.refusal.reason)
      expect(read.run).toMatchObject({ repositoryOwner: groups.join("/"), repositoryName: name, workflow: `ci/${file}.yml`, ref: "refs/heads/main" })
    }))

  it("claims of neither shape, or a workflow of another repository, are refused with the claim", () => {
    expect(runOf({ sub: "someone" })).toMatchObject({ refusal: { claim: "repository" } })
    expect(runOf({ repository: "no-slash", workflow_ref: "x" })).toMatchObject({ refusal: { claim: "repository" } })
    expect(runOf({ repository: "a/b", workflow_ref: "c/d/.github/workflows/x.yml@refs/heads/main" })).toMatchObject({
      refusal: { claim: "workflow_ref" }
    })
    expect(runOf({ project_path: "g/p", ci_config_ref_uri: "gitlab.example/g/other//.gitlab-ci.yml@refs/heads/main" })).toMatchObject({
      refusal: { claim: "ci_config_ref_uri" }
    })
  })
})

const run = (overrides: Partial<WorkflowRun>): WorkflowRun => ({
  repositoryOwner: "acme",
  repositoryName: "lamp",
  workflow: ".github/workflows/publish.yml",
  ref: "refs/tags/v1",
  sha: undefined,
  runId: undefined,
  environment: undefined,
  claims: { repository: "repository", workflow: "workflow_ref", ref: "ref" },
  ...overrides
})

const rule: fc.Arbitrary<Rule> = fc.record({
  repository_owner: fc.constantFrom("acme", "ACME", "other"),
  repository_name: fc.constantFrom("lamp", "Lamp", "desk"),
  workflow: fc.constantFrom("publish.yml", "nightly.yml", ".github/workflows/publish.yml", "workflows/publish.yml"),
  environment: fc.constantFrom(undefined, "release", "RELEASE", "staging"),
  ref_pattern: fc.constantFrom(undefined, "refs/tags/*", "refs/heads/main", "refs/tags/v1")
})

const runs = fc.record({
  environment: fc.constantFrom(undefined, "release", "staging"),
  ref: fc.constantFrom(undefined, "refs/tags/v1", "refs/heads/main"),
  workflow: fc.constantFrom(".github/workflows/publish.yml", ".github/workflows/nightly.yml")
}).map((parts) => run(parts))

/** What a trusted publisher allows, said directly. */
const allows = (r: Rule, w: WorkflowRun) =>
  r.repository_owner.toLowerCase() === w.repositoryOwner.toLowerCase() &&
  r.repository_name.toLowerCase() === w.repositoryName.toLowerCase() &&
  (w.workflow === r.workflow || w.workflow.endsWith(`/${r.workflow}`)) &&
  (r.environment === undefined || r.environment.toLowerCase() === w.environment?.toLowerCase()) &&
  (r.ref_pattern === undefined || (w.ref !== undefined && refMatches(r.ref_pattern, w.ref)))

describe("matching trusted publishers", () => {
  it("matches exactly the trusted publishers that allow the run; otherwise names where the closest one stopped", () =>
    forAllSync({ rules: fc.array(rule, { maxLength: 6 }), w: runs }, ({ rules, w }) => {
      const result = matching(rules, w)
      const expected = rules.filter((r) => allows(r, w))
      if (expected.length > 0) return expect(result).toEqual({ matched: expected })
      if (!("refusal" in result)) return expect.fail("no rule allows the run, yet it matched")
      const order = ["repository", "workflow", "environment", "ref"]
      const furthest = Math.max(0, ...rules.map((r) => order.indexOf(firstMismatch(r, w)!)))
      const claims = ["repository", "workflow_ref", "environment", "ref"]
      expect(result.refusal.claim).toBe(claims[furthest])
      expect(result.refusal.reason).toContain("acme/lamp")
    }, { numRuns: 1000 }))
})
