/**
 * Trusted publishing over real HTTP against a loopback OIDC issuer: registering, listing and
 * deleting trusted publishers; exchanging identity tokens of GitHub Actions' and GitLab's shapes;
 * publishing with the publish token and the provenance it leaves; and each refusal (forged
 * signature, wrong audience, repository, workflow, environment or ref, replay, expired and
 * not-yet-valid tokens, a deleted trusted publisher, a banned publisher, rotated keys).
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { NodeVersion } from "../../src/Domain/Node.ts"
import { PublishToken, TrustedPublisher, TrustedPublishingAudience } from "../../src/Domain/TrustedPublisher.ts"
import { decodeExact } from "../support/Catalogue.ts"
import { addMember, query } from "../support/Db.ts"
import { type Answer, expectError, expectStatus, send } from "../support/Http.ts"
import { githubClaims, gitlabClaims, OidcIssuer, type OidcIssuerShape } from "../support/OidcIssuer.ts"
import { type ConfigOverrides, type Running, Service } from "../support/Service.ts"
import { makePublisher, publish, type Publisher, published } from "../Publishing/Flow.ts"

const audience = "test-registry"
const decodeTrusted = decodeExact(TrustedPublisher)
const decodeToken = decodeExact(PublishToken)
const decodeVersion = decodeExact(NodeVersion)

/**
 * The service trusting the loopback issuer, its keys fetched again for any unknown key id (the
 * refresh cooldown is test/TrustedPublishing/Oidc.fast.test.ts's, over TestClock).
 */
const trusting = (issuer: OidcIssuerShape): ConfigOverrides => (c) => ({
  ...c,
  // every refusal here counts against the one test address: more than the default limit of them
  auth: { ...c.auth, failureLimit: 1000 },
  trustedPublishing: { ...c.trustedPublishing, issuers: [issuer.url], audience, keysRefreshCooldownMillis: 0 }
})

const ServiceTrusting = Layer.unwrap(Effect.map(OidcIssuer, (issuer) => Service.layer(trusting(issuer)))).pipe(
  Layer.provideMerge(OidcIssuer.layer)
)

const register = (service: Running, publisher: Publisher, nodeId: string, body: Record<string, unknown>, jwt = publisher.ownerJwt) =>
  send(service, "POST", `/publishers/${publisher.id}/nodes/${nodeId}/trusted-publishers`, { token: jwt, body })

const registered = (service: Running, publisher: Publisher, nodeId: string, body: Record<string, unknown>) =>
  Effect.map(register(service, publisher, nodeId, body), (answer) => decodeTrusted(expectStatus(answer, 201, "register").body))

/** Trusts `owner/<nodeId>`'s workflow publish.yml, at the loopback issuer, to publish the node. */
const trustRepository = (service: Running, issuer: OidcIssuerShape, publisher: Publisher, owner: string, nodeId: string) =>
  registered(service, publisher, nodeId, { issuer: issuer.url, repository_owner: owner, repository_name: nodeId, workflow: "publish.yml" })

const exchange = (service: Running, token: string) => send(service, "POST", "/trusted-publishing/exchange", { body: { token } })

const exchanged = (service: Running, token: string) =>
  Effect.map(exchange(service, token), (answer) => decodeToken(expectStatus(answer, 200, "exchange").body))

/** A 401 identity_token_refused, exactly ErrorResponse, naming `claim`; it never holds the token nor its signature. */
const expectRefused = (answer: Answer, claim: string, token: string) => {
  if (answer.status !== 401) expect.fail(`expected 401, got ${answer.status}: ${answer.text}`)
  expect(answer.body).toEqual({ error: "identity_token_refused", message: expect.stringMatching(new RegExp(`\\(claim: ${claim}\\)$`)) })
  expect(answer.text).not.toContain(token.split(".")[2])
  expect(answer.text).not.toContain(token.split(".")[1])
  return (answer.body as { message: string }).message
}

layer(ServiceTrusting, { excludeTestServices: true })("trusted publishing", (it) => {
  let acme: Publisher
  let other: Publisher
  let issuer: OidcIssuerShape
  let memberJwt = ""
  const github = (claims: Parameters<typeof githubClaims>[1], options?: Parameters<OidcIssuerShape["sign"]>[1]) =>
    Effect.promise(() => issuer.sign(githubClaims(audience, claims), options))

  it.effect("setup: two publishers, a member of acme", () =>
    Effect.gen(function*() {
      const service = yield* Service
      issuer = yield* OidcIssuer
      acme = yield* makePublisher(service, "acme")
      other = yield* makePublisher(service, "other")
      yield* addMember(service, "acme", "mia", "member")
      memberJwt = yield* Effect.promise(() => service.token({ sub: "mia" }))
    }))

  it.effect("the audience and issuers are public", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const answer = expectStatus(yield* send(service, "GET", "/trusted-publishing/audience"), 200, "audience")
      expect(decodeExact(TrustedPublishingAudience)(answer.body)).toEqual({ audience, issuers: [issuer.url] })
    }))

  it.effect("owners register, list and delete trusted publishers; members and strangers may not", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const rule = { issuer: issuer.url, repository_owner: "acme-org", repository_name: "lamp", workflow: "publish.yml" }
      const made = yield* registered(service, acme, "lamp", { ...rule, ref_pattern: "refs/tags/v*" })
      expect(made).toMatchObject({ ...rule, publisher_id: "acme", node_id: "lamp", ref_pattern: "refs/tags/v*" })
      expect(made.environment).toBeUndefined()
      const listed = expectStatus(
        yield* send(service, "GET", "/publishers/acme/nodes/lamp/trusted-publishers", { token: acme.ownerJwt }),
        200,
        "list"
      )
      expect((listed.body as Array<unknown>).map((t) => decodeTrusted(t).id)).toEqual([made.id])
      expectError(yield* register(service, acme, "lamp", rule, memberJwt), 403, "forbidden")
      expectError(yield* register(service, acme, "lamp", rule, other.ownerJwt), 403, "forbidden")
      expectError(yield* send(service, "GET", "/publishers/acme/nodes/lamp/trusted-publishers", { token: memberJwt }), 403, "forbidden")
      expectError(yield* send(service, "GET", "/publishers/acme/nodes/lamp/trusted-publishers"), 401, "unauthorized")
      // an issuer the operator did not list, a node of another publisher, fields it does not know
      const untrusted = expectError(yield* register(service, acme, "lamp", { ...rule, issuer: "https://issuer.invalid" }), 400, "bad_request")
      expect(untrusted.message).toContain(issuer.url)
      yield* published(service, other, "others-node", "1.0.0")
      expectError(yield* register(service, acme, "others-node", rule), 404, "not_found")
      expectError(yield* register(service, acme, "lamp", { ...rule, repository: "acme-org/lamp" }), 400, "bad_request")
      expectError(yield* register(service, acme, "lamp", { ...rule, workflow: "publish.yml@main" }), 400, "bad_request")
      const path = `/publishers/acme/nodes/lamp/trusted-publishers/${made.id}`
      expectError(yield* send(service, "DELETE", path, { token: memberJwt }), 403, "forbidden")
      expectStatus(yield* send(service, "DELETE", path, { token: acme.ownerJwt }), 204, "delete")
      expectError(yield* send(service, "DELETE", path, { token: acme.ownerJwt }), 404, "not_found")
      expectError(yield* send(service, "DELETE", "/publishers/acme/nodes/lamp/trusted-publishers/not-a-uuid", { token: acme.ownerJwt }), 404, "not_found")
      const after = yield* send(service, "GET", "/publishers/acme/nodes/lamp/trusted-publishers", { token: acme.ownerJwt })
      expect(after.body).toEqual([])
    }))

  it.effect("a GitHub Actions run publishes a node that did not exist, and the version shows its provenance", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const trusted = yield* registered(service, acme, "gh-node", {
        issuer: issuer.url,
        repository_owner: "Acme-Org",
        repository_name: "GH-Node",
        workflow: "publish.yml",
        environment: "release",
        ref_pattern: "refs/tags/v*"
      })
      const identity = yield* github({ repository: "acme-org/gh-node", ref: "refs/tags/v1.0.0", runId: "90210", environment: "Release" })
      const token = yield* exchanged(service, identity)
      expect(token.token).toMatch(/^rgtp_[A-Za-z0-9_-]{43}$/)
      expect(token.nodes).toEqual([{ publisher_id: "acme", node_id: "gh-node", trusted_publisher_id: trusted.id }])
      const lifetime = Date.parse(token.expires_at) - Date.now()
      expect(lifetime).toBeGreaterThan(14 * 60_000)
      expect(lifetime).toBeLessThanOrEqual(15 * 60_000)

      const answer = expectStatus(yield* publish(service, "acme", "gh-node", "1.0.0", { pat: token.token }), 201, "publish")
      const version = decodeVersion((answer.body as { node_version: unknown }).node_version)
      expect(version.provenance).toEqual({
        method: "trusted_publishing",
        trusted_publisher_id: trusted.id,
        issuer: issuer.url,
        repository: "acme-org/gh-node",
        workflow: ".github/workflows/publish.yml",
        ref: "refs/tags/v1.0.0",
        sha: "0123456789abcdef0123456789abcdef01234567",
        run_id: "90210",
        environment: "Release"
      })
      const shown = expectStatus(yield* send(service, "GET", "/nodes/gh-node/versions/1.0.0"), 200, "get version")
      expect(decodeVersion(shown.body).provenance).toEqual(version.provenance)
      // a fresh upload URL with the same token
      const fresh = yield* send(service, "POST", `/publishers/acme/nodes/gh-node/versions/1.0.0/upload-url`, {
        body: { personal_access_token: token.token }
      })
      expectStatus(fresh, 200, "upload-url")

      // only for its nodes: another node of acme, and another publisher's path, refuse it
      const elsewhere = expectError(yield* publish(service, "acme", "lamp", "1.0.0", { pat: token.token }), 401, "invalid_token")
      expect(elsewhere.message).toContain("publish token")
      expectError(yield* publish(service, "other", "gh-node", "1.0.1", { pat: token.token }), 401, "invalid_token")
      // accepted once
      expectRefused(yield* exchange(service, identity), "jti", identity)
    }))

  it.effect("personal access tokens and members' bearer tokens leave their own provenance", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const byPat = yield* published(service, acme, "pat-node", "1.0.0")
      const [row] = yield* query<{ id: string }>(service, "SELECT id::text FROM personal_access_tokens WHERE publisher_id = 'acme'")
      expect(byPat.node_version.provenance).toEqual({ method: "personal_access_token", token_id: row!.id })
      const byOwner = expectStatus(yield* publish(service, "acme", "pat-node", "1.0.1", { jwt: acme.ownerJwt }), 201, "publish")
      expect(decodeVersion((byOwner.body as { node_version: unknown }).node_version).provenance).toEqual({
        method: "user",
        user_id: "owner-of-acme"
      })
    }))

  it.effect("a GitLab pipeline of a nested group publishes", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* registered(service, acme, "gl-node", {
        issuer: issuer.url,
        repository_owner: "acme/tools",
        repository_name: "gl-node",
        workflow: ".gitlab-ci.yml"
      })
      const identity = yield* Effect.promise(() =>
        issuer.sign(gitlabClaims(audience, "gitlab.example", { project: "acme/tools/gl-node", pipelineId: "5150" }))
      )
      const token = yield* exchanged(service, identity)
      const answer = expectStatus(yield* publish(service, "acme", "gl-node", "0.1.0", { pat: token.token }), 201, "publish")
      expect(decodeVersion((answer.body as { node_version: unknown }).node_version).provenance).toMatchObject({
        repository: "acme/tools/gl-node",
        workflow: ".gitlab-ci.yml",
        ref: "refs/heads/main",
        run_id: "5150"
      })
    }))

  it.effect("each refusal names the claim that did not hold, and never the token", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* registered(service, acme, "strict", {
        issuer: issuer.url,
        repository_owner: "acme-org",
        repository_name: "strict",
        workflow: "publish.yml",
        environment: "release",
        ref_pattern: "refs/tags/v*"
      })
      const good = { repository: "acme-org/strict", environment: "release" }
      const cases: ReadonlyArray<readonly [string, string]> = [
        [yield* github(good, { forge: true }), "signature"],
        [yield* Effect.promise(() => issuer.sign({ ...githubClaims("another-registry", good) })), "aud"],
        [yield* github({ ...good, repository: "acme-org/elsewhere" }), "repository"],
        [yield* github({ ...good, workflow: "nightly.yml" }), "workflow_ref"],
        [yield* github({ ...good, environment: "staging" }), "environment"],
        [yield* github({ repository: "acme-org/strict" }), "environment"],
        [yield* github({ ...good, ref: "refs/heads/main" }), "ref"],
        [yield* github(good, { expiresIn: -120 }), "exp"],
        [yield* github(good, { notBefore: 600, expiresIn: 900 }), "nbf"],
        [yield* github(good, { kid: "made-up-key" }), "kid"],
        ["not-a-jwt", "token"]
      ]
      for (const [token, claim] of cases) {
        const answer = yield* exchange(service, token)
        expect(answer.status, `a token wrong at ${claim}`).toBe(401)
        const message = expectRefused(answer, claim, token)
        expect(message.length).toBeGreaterThan(10)
      }
      // another issuer's token: its own key, so it is refused before any key is fetched
      const stranger = yield* Effect.promise(() => issuer.sign({ ...githubClaims(audience, good), iss: "https://issuer.invalid" }))
      expectRefused(yield* exchange(service, stranger), "iss", stranger)
      // after all that, the good token still works: refusals spent nothing
      const token = yield* exchanged(service, yield* github({ ...good, ref: "refs/tags/v2.0.0" }))
      expect(token.nodes.map((n) => n.node_id)).toEqual(["strict"])
    }))

  it.effect("a deleted trusted publisher matches no token, and tokens it allowed stop working", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const trusted = yield* trustRepository(service, issuer, acme, "acme-org", "gone")
      const token = yield* exchanged(service, yield* github({ repository: "acme-org/gone" }))
      expectStatus(
        yield* send(service, "DELETE", `/publishers/acme/nodes/gone/trusted-publishers/${trusted.id}`, { token: acme.ownerJwt }),
        204,
        "delete"
      )
      expectError(yield* publish(service, "acme", "gone", "1.0.0", { pat: token.token }), 401, "invalid_token")
      const identity = yield* github({ repository: "acme-org/gone" })
      expectRefused(yield* exchange(service, identity), "repository", identity)
    }))

  it.effect("a banned publisher's trusted publishers mint nothing, and its tokens publish nothing", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const banned = yield* makePublisher(service, "banned-pub")
      yield* trustRepository(service, issuer, banned, "banned-org", "banned-node")
      const before = yield* exchanged(service, yield* github({ repository: "banned-org/banned-node" }))
      yield* query(service, "UPDATE publishers SET status = 'PublisherStatusBanned' WHERE id = 'banned-pub'")
      expectError(yield* exchange(service, yield* github({ repository: "banned-org/banned-node" })), 403, "publisher_banned")
      expectError(yield* publish(service, "banned-pub", "banned-node", "1.0.0", { pat: before.token }), 403, "publisher_banned")
      const again = yield* register(service, banned, "banned-node", {
        issuer: issuer.url,
        repository_owner: "banned-org",
        repository_name: "banned-node",
        workflow: "other.yml"
      })
      expectError(again, 403, "publisher_banned")
    }))

  it.effect("an expired publish token publishes nothing", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* trustRepository(service, issuer, acme, "acme-org", "brief")
      const token = yield* exchanged(service, yield* github({ repository: "acme-org/brief" }))
      yield* query(service, "UPDATE publish_tokens SET expires_at = now() - interval '1 second'")
      expectError(yield* publish(service, "acme", "brief", "1.0.0", { pat: token.token }), 401, "invalid_token")
    }))

  it.effect("rotated keys are fetched again for a key id the cache lacks; the retired key stops verifying", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* trustRepository(service, issuer, acme, "acme-org", "rotating")
      const retired = yield* github({ repository: "acme-org/rotating" })
      yield* exchanged(service, yield* github({ repository: "acme-org/rotating" }))
      const fetches = issuer.keyFetches()
      yield* Effect.promise(() => issuer.rotate())
      yield* exchanged(service, yield* github({ repository: "acme-org/rotating" }))
      expect(issuer.keyFetches()).toBe(fetches + 1)
      expectRefused(yield* exchange(service, retired), "kid", retired)
    }))
})
