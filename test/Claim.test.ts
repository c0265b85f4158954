/**
 * POST /publishers/{publisherId}/nodes/{nodeId}/claim-my-node over real HTTP, with a loopback fake
 * of the repository host: every outcome of CONTRACT.md, the forms of repository URLs, two
 * concurrent claims through two instances, and a property test of the claim state machine.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fc from "fast-check"
import { vi } from "vitest"
import type { NodeInput } from "../scripts/lib/Seeder.ts"
import { ClaimResult } from "../src/Claims/Api.ts"
import { seedActors, tokensFor } from "./support/Actors.ts"
import { decodeExact } from "./support/Catalogue.ts"
import { bearerClient } from "./support/Client.ts"
import { addMember, queryOne } from "./support/Db.ts"
import { type Answer, expectError, expectStatus, send } from "./support/Http.ts"
import { type Fake, FakeRepohost } from "./support/FakeRepohost.ts"
import { forAll } from "./support/Property.ts"
import { type ConfigOverrides, freshDatabase, type Running, Service, startService } from "./support/Service.ts"

const timeoutMillis = 300

/** The fake answers for the repositories of `repohost.example`, the host the test nodes name. */
const webHost = "repohost.example"
const atFake = (fake: Fake): ConfigOverrides => (c) => ({ ...c, repohost: { apiUrl: fake.url, timeoutMillis, webHost } })

const TestLayer = Layer.unwrap(Effect.map(FakeRepohost, (fake) => Service.layer(atFake(fake)))).pipe(
  Layer.provideMerge(FakeRepohost.layer)
)

/** VCS tokens and what the fake answers to each. */
const vcs = {
  admin: "vcs-admin-of-ann",
  reader: "vcs-reader",
  invalid: "vcs-revoked",
  quotaSpent: "vcs-quota-spent",
  tooMany: "vcs-too-many",
  error500: "vcs-host-500",
  error502: "vcs-host-502",
  hang: "vcs-host-hangs"
} as const

const behave = (fake: Fake) => {
  fake.behave(vcs.admin, { kind: "user", login: "ann-on-host", admin: ["ann/*"] })
  fake.behave(vcs.reader, { kind: "user", login: "rita-on-host", read: ["ann/*"] })
  fake.behave(vcs.invalid, { kind: "invalid" })
  fake.behave(vcs.quotaSpent, { kind: "quotaSpent", resetInSeconds: 42 })
  fake.behave(vcs.tooMany, { kind: "tooManyRequests", retryAfter: 17 })
  fake.behave(vcs.error500, { kind: "error", status: 500 })
  fake.behave(vcs.error502, { kind: "error", status: 502 })
  fake.behave(vcs.hang, { kind: "hang" })
}

type Actor = "none" | "stranger" | "member" | "admin" | "owner" | "siteAdmin" | "otherOwner"
const jwts: Record<Actor, string | undefined> = {
  none: undefined,
  ...tokensFor("stranger", "member", "admin", "owner", "siteAdmin", "otherOwner")
}

const claim = (
  service: Running,
  publisherId: string,
  nodeId: string,
  body: unknown,
  options: { readonly actor?: Actor; readonly jwt?: string; readonly rawBody?: string } = {}
) =>
  send(service, "POST", `/publishers/${publisherId}/nodes/${nodeId}/claim-my-node`, {
    token: options.jwt ?? jwts[options.actor ?? "owner"],
    body,
    raw: options.rawBody
  })

const ownerOf = (service: Running, nodeId: string) =>
  Effect.map(queryOne<{ publisher_id: string }>(service, "SELECT publisher_id FROM nodes WHERE id = $1", [nodeId]), (row) => row?.publisher_id)

/** Ids of a publisher's listed nodes. */
const listedIds = (service: Running, publisherId: string, token: string) =>
  Effect.flatMap(bearerClient(service, token), (client) =>
    Effect.map(
      client.api.publisherNodes.listNodesForPublisher({ params: { publisherId }, query: {} }),
      (nodes) => nodes.map((n) => n.id)
    ))

const unclaimedNode = (id: string, repository?: string, extra: Partial<NodeInput> = {}): NodeInput => ({
  id,
  publisher_id: "unclaimed",
  name: `Node ${id}`,
  ...(repository === undefined ? {} : { repository }),
  ...extra
})

const annRepo = (repo: string) => `https://repohost.example/ann/${repo}`

const decodeClaimResult = decodeExact(ClaimResult)

/** A claim's result, as the wire or the typed client gives it, names the node and its new publisher. */
const expectClaimOf = <R extends { readonly message: string; readonly node: { readonly id: string; readonly publisher?: { readonly id: string } | undefined } }>(
  result: R,
  nodeId: string,
  publisherId: string
): R => {
  expect(result.message).toBe(`Node ${nodeId} claimed by ${publisherId}`)
  expect(result.node.id).toBe(nodeId)
  expect(result.node.publisher?.id).toBe(publisherId)
  return result
}

/** A claim through the typed client, as `actor`, that must succeed: its result, checked. */
const claimed = (service: Running, publisherId: string, nodeId: string, vcsToken: string, actor: Actor = "owner") =>
  Effect.gen(function*() {
    const client = yield* bearerClient(service, jwts[actor]!)
    return expectClaimOf(
      yield* client.api.claims.claimMyNode({ params: { publisherId, nodeId }, payload: { VCS_TOKEN: vcsToken } }),
      nodeId,
      publisherId
    )
  })

const expectClaimed = (answer: Answer, nodeId: string, publisherId: string) => {
  expectStatus(answer, 200, `claim of ${nodeId}`)
  expect(answer.headers.get("content-type")).toMatch(/^application\/json/)
  return expectClaimOf(decodeClaimResult(answer.body), nodeId, publisherId)
}

layer(TestLayer, { excludeTestServices: true })("claiming a node", (it) => {
  it.effect("seeds publishers, members, unclaimed nodes and the fake's tokens", () =>
    Effect.gen(function*() {
      const service = yield* Service
      behave(yield* FakeRepohost)
      yield* service.writes.upsertPublishers([{ id: "acme", name: "Acme" }, { id: "other" }])
      yield* seedActors(service, jwts)
    }))

  it.effect("a manager with a token of the repository's administrator claims the node", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeRepohost
      yield* service.writes.insertNodes([unclaimedNode("widgets", annRepo("widgets"), { description: "Widgets" })])
      yield* service.writes.insertVersions([{ node_id: "widgets", version: "1.0.0", status: "NodeVersionStatusActive" }])
      fake.clearRequests()

      const result = expectClaimed(yield* claim(service, "acme", "widgets", { VCS_TOKEN: vcs.admin }), "widgets", "acme")
      expect(result.node).toMatchObject({
        name: "Node widgets",
        description: "Widgets",
        repository: annRepo("widgets"),
        publisher: { id: "acme", name: "Acme" },
        latest_version: { version: "1.0.0" }
      })
      expect(yield* ownerOf(service, "widgets")).toBe("acme")
      // the host was asked who the token's user is, then about the repository, with the token
      expect(fake.requests().map((r) => [r.method, r.path, r.authorization])).toEqual([
        ["GET", "/user", `Bearer ${vcs.admin}`],
        ["GET", "/repos/ann/widgets", `Bearer ${vcs.admin}`]
      ])
      expect(fake.requests()[0]!.userAgent).toBeTruthy()
      // the publisher's listing shows it at once; unclaimed's no longer does
      expect(yield* listedIds(service, "acme", jwts.stranger!)).toContain("widgets")
      expect(yield* listedIds(service, "unclaimed", jwts.stranger!)).not.toContain("widgets")

      // once claimed, never again: not by the same publisher, not by another
      fake.clearRequests()
      expectError(yield* claim(service, "acme", "widgets", { VCS_TOKEN: vcs.admin }), 409, "node_already_claimed")
      expectError(
        yield* claim(service, "other", "widgets", { VCS_TOKEN: vcs.admin }, { actor: "otherOwner" }),
        409,
        "node_already_claimed"
      )
      expect(fake.requests()).toEqual([])
      expect(yield* ownerOf(service, "widgets")).toBe("acme")
    }))

  it.effect("an admin of the publisher may claim too", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.insertNodes([unclaimedNode("by-admin", annRepo("by-admin"))])
      yield* claimed(service, "acme", "by-admin", vcs.admin, "admin")
      expect(yield* ownerOf(service, "by-admin")).toBe("acme")
    }))

  it.effect("the claimed node carries the fields clients index: a node without name or description has its id and \"\"", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.insertNodes([{ id: "bare-claim", publisher_id: "unclaimed", repository: annRepo("bare-claim") }])
      const answer = yield* claim(service, "acme", "bare-claim", { VCS_TOKEN: vcs.admin })
      const { node } = expectClaimed(answer, "bare-claim", "acme")
      // ComfyUI-Manager glob/manager_core.py and comfy-cli comfy_cli/registry/api.py index these without a default
      expect({ id: node.id, name: node.name, description: node.description, publisher: node.publisher.id })
        .toEqual({ id: "bare-claim", name: "bare-claim", description: "", publisher: "acme" })
      expect(node.publisher.name).toEqual(expect.any(String))
    }))

  it.effect("repository URLs: .git suffixes, trailing slashes, deeper paths and scp-like forms", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeRepohost
      const forms: Array<[string, string]> = [
        ["https://repohost.example/ann/form-a.git", "form-a"],
        ["https://repohost.example/ann/form-b/", "form-b"],
        ["https://repohost.example/ann/form-c.git/", "form-c"],
        ["http://repohost.example/ann/form-d//", "form-d"],
        ["https://repohost.example/ann/form-e/tree/main/sub", "form-e"],
        ["git@repohost.example:ann/form-f.git", "form-f"],
        ["ssh://git@repohost.example/ann/form-g.git", "form-g"],
        ["repohost.example/ann/form-h", "form-h"],
        ["  https://repohost.example/ann/form.i.git  ", "form.i"]
      ]
      for (const [i, [url]] of forms.entries()) yield* service.writes.insertNodes([unclaimedNode(`form-${i}`, url)])
      for (const [i, [url, repo]] of forms.entries()) {
        fake.clearRequests()
        yield* claimed(service, "acme", `form-${i}`, vcs.admin)
        expect(fake.requests().map((r) => r.path), url).toEqual(["/user", `/repos/ann/${repo}`])
      }
    }))

  it.effect("a node whose repository names no owner/repo is 409 repository_not_recognised, the host never asked", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeRepohost
      const bad: Array<string | undefined> = [
        undefined,
        "",
        "https://repohost.example/only-owner",
        "https://repohost.example/",
        "not a url at all",
        "ftp://repohost.example/ann/x",
        "https://repohost.example/ann/..",
        "git@repohost.example:ann",
        // an owner/repo of the same name on another host is somebody else's repository
        "https://elsewhere.example/ann/widgets",
        "git@elsewhere.example:ann/widgets.git"
      ]
      for (const [i, url] of bad.entries()) yield* service.writes.insertNodes([unclaimedNode(`bad-repo-${i}`, url)])
      fake.clearRequests()
      for (const [i, url] of bad.entries()) {
        const e = expectError(yield* claim(service, "acme", `bad-repo-${i}`, { VCS_TOKEN: vcs.admin }), 409, "repository_not_recognised")
        expect(e.message, String(url)).toContain(`bad-repo-${i}`)
        expect(yield* ownerOf(service, `bad-repo-${i}`)).toBe("unclaimed")
      }
      expect(fake.requests()).toEqual([])
    }))

  it.effect("what the repository host answers decides: each refusal leaves the node unclaimed", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.insertNodes([unclaimedNode("contested", annRepo("contested"))])
      const cases: Array<[string, string, number, string]> = [
        ["invalid token (401)", vcs.invalid, 403, "invalid_vcs_token"],
        ["a token the host has never seen", "vcs-unknown", 403, "invalid_vcs_token"],
        ["valid token, not an administrator", vcs.reader, 403, "repository_not_owned"],
        ["host 500", vcs.error500, 503, "service_unavailable"],
        ["host 502", vcs.error502, 503, "service_unavailable"]
      ]
      for (const [label, token, status, code] of cases) {
        const e = expectError(yield* claim(service, "acme", "contested", { VCS_TOKEN: token }), status, code)
        if (status === 503) expect(e.message, label).toMatch(/repository host is unavailable/)
        expect(yield* ownerOf(service, "contested"), label).toBe("unclaimed")
      }
      // a valid user who cannot see the repository at all (404) does not own it either
      const fake = yield* FakeRepohost
      fake.behave("vcs-stranger-on-host", { kind: "user", login: "someone", admin: ["someone/*"] })
      expectError(yield* claim(service, "acme", "contested", { VCS_TOKEN: "vcs-stranger-on-host" }), 403, "repository_not_owned")
      expect(yield* ownerOf(service, "contested")).toBe("unclaimed")
      // after all that, the right token still claims it
      expectClaimed(yield* claim(service, "acme", "contested", { VCS_TOKEN: vcs.admin }), "contested", "acme")
    }))

  it.effect("the host's rate limits are 429 rate_limited with the host's Retry-After", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.insertNodes([unclaimedNode("limited", annRepo("limited"))])
      const tooMany = yield* claim(service, "acme", "limited", { VCS_TOKEN: vcs.tooMany })
      expectError(tooMany, 429, "rate_limited")
      expect(tooMany.headers.get("retry-after")).toBe("17")
      const quota = yield* claim(service, "acme", "limited", { VCS_TOKEN: vcs.quotaSpent })
      expectError(quota, 429, "rate_limited")
      const retryAfter = Number(quota.headers.get("retry-after"))
      expect(retryAfter).toBeGreaterThanOrEqual(40)
      expect(retryAfter).toBeLessThanOrEqual(43)
      // without retry-after, the wait is the time left until x-ratelimit-reset
      const fake = yield* FakeRepohost
      fake.behave("vcs-quota-later", { kind: "quotaSpent", resetInSeconds: 5 })
      const soon = yield* claim(service, "acme", "limited", { VCS_TOKEN: "vcs-quota-later" })
      expectError(soon, 429, "rate_limited")
      expect(Number(soon.headers.get("retry-after"))).toBeLessThanOrEqual(6)
      expect(yield* ownerOf(service, "limited")).toBe("unclaimed")
    }))

  it.effect("a host that does not answer in time is 503, after the configured timeout", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.insertNodes([unclaimedNode("slow", annRepo("slow"))])
      const started = Date.now()
      const e = expectError(yield* claim(service, "acme", "slow", { VCS_TOKEN: vcs.hang }), 503, "service_unavailable")
      const elapsed = Date.now() - started
      expect(e.message).toMatch(/repository host is unavailable/)
      expect(elapsed).toBeGreaterThanOrEqual(timeoutMillis - 20)
      expect(elapsed).toBeLessThan(timeoutMillis + 2_000)
      expect(yield* ownerOf(service, "slow")).toBe("unclaimed")
    }))

  it.effect("a host that cannot be reached is 503", () =>
    Effect.scoped(Effect.gen(function*() {
      const { url } = yield* freshDatabase
      // a port nothing listens on: the fake's server, stopped
      const closed = yield* Effect.promise(async () => {
        const net = await import("node:net")
        const server = net.createServer()
        await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
        const port = (server.address() as { port: number }).port
        await new Promise<void>((resolve) => server.close(() => resolve()))
        return `http://127.0.0.1:${port}`
      })
      const service = yield* startService(url, (c) => ({ ...c, repohost: { apiUrl: closed, timeoutMillis: 2_000, webHost } }))
      yield* service.writes.upsertPublishers([{ id: "acme" }])
      yield* addMember(service, "acme", "ann", "owner")
      yield* service.writes.insertNodes([unclaimedNode("unreachable", annRepo("unreachable"))])
      const jwt = yield* Effect.promise(() => service.token({ sub: "ann" }))
      const e = expectError(yield* claim(service, "acme", "unreachable", { VCS_TOKEN: vcs.admin }, { jwt }), 503, "service_unavailable")
      expect(e.message).toMatch(/repository host is unavailable/)
      expect(yield* ownerOf(service, "unreachable")).toBe("unclaimed")
    })))

  it.effect("who may claim: managers of the publisher only; unknown publishers and nodes are 404", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeRepohost
      yield* service.writes.insertNodes([
        unclaimedNode("guarded", annRepo("guarded")),
        unclaimedNode("gone", annRepo("gone"), { status: "NodeStatusDeleted" }),
        { id: "others-node", publisher_id: "other", repository: annRepo("others-node") }
      ])
      fake.clearRequests()
      const body = { VCS_TOKEN: vcs.admin }
      expectError(yield* claim(service, "acme", "guarded", body, { actor: "none" }), 401, "unauthorized")
      expectError(yield* claim(service, "acme", "guarded", body, { jwt: "not.a.jwt" }), 401, "unauthorized")
      for (const actor of ["stranger", "member", "siteAdmin", "otherOwner"] as const) {
        expectError(yield* claim(service, "acme", "guarded", body, { actor }), 403, "forbidden")
      }
      // a manager of one publisher cannot claim into another
      expectError(yield* claim(service, "other", "guarded", body, { actor: "owner" }), 403, "forbidden")
      expectError(yield* claim(service, "nobody", "guarded", body), 404, "not_found")
      expectError(yield* claim(service, "acme", "no-such-node", body), 404, "not_found")
      expectError(yield* claim(service, "acme", "gone", body), 404, "not_found")
      expectError(yield* claim(service, "acme", "others-node", body), 409, "node_already_claimed")
      expect(fake.requests()).toEqual([])
      expect(yield* ownerOf(service, "guarded")).toBe("unclaimed")
      expect(yield* ownerOf(service, "others-node")).toBe("other")
    }))

  it.effect("bad bodies are 400 naming VCS_TOKEN; nothing changes", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeRepohost
      yield* service.writes.insertNodes([unclaimedNode("bodies", annRepo("bodies"))])
      fake.clearRequests()
      const cases: Array<[string, unknown, string | undefined]> = [
        ["missing", {}, "VCS_TOKEN"],
        ["empty", { VCS_TOKEN: "" }, "VCS_TOKEN"],
        ["a number", { VCS_TOKEN: 42 }, "VCS_TOKEN"],
        ["null", { VCS_TOKEN: null }, "VCS_TOKEN"],
        ["too long", { VCS_TOKEN: "x".repeat(1001) }, "VCS_TOKEN"],
        ["an array", [vcs.admin], undefined]
      ]
      for (const [label, body, field] of cases) {
        const e = expectError(yield* claim(service, "acme", "bodies", body), 400, "bad_request")
        if (field !== undefined) expect(e.message, label).toContain(field)
      }
      expectError(yield* claim(service, "acme", "bodies", undefined, { rawBody: "{\"VCS_TOKEN\": " }), 400, "bad_request")
      expect(fake.requests()).toEqual([])
      expect(yield* ownerOf(service, "bodies")).toBe("unclaimed")
    }))

  it.effect("the registry web front-end's claim: its token under GH_TOKEN, the default repository host word's key", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeRepohost
      yield* service.writes.insertNodes([unclaimedNode("from-web", annRepo("from-web"))])
      fake.clearRequests()
      // registry-web pages/publishers/[publisherId]/claim-my-node.tsx: claimNode({publisherId, nodeId, data: { GH_TOKEN: githubToken }}),
      // sent by src/api/generated.ts claimMyNode as POST /publishers/{publisherId}/nodes/{nodeId}/claim-my-node
      expectClaimed(yield* claim(service, "acme", "from-web", { GH_TOKEN: vcs.admin }), "from-web", "acme")
      expect(fake.requests().map((r) => r.authorization)).toEqual([`Bearer ${vcs.admin}`, `Bearer ${vcs.admin}`])
      expect(yield* ownerOf(service, "from-web")).toBe("acme")

      // both words sent: the alias wins, as for every alias
      yield* service.writes.insertNodes([unclaimedNode("both-words", annRepo("both-words"))])
      expectClaimed(yield* claim(service, "acme", "both-words", { VCS_TOKEN: vcs.reader, GH_TOKEN: vcs.admin }), "both-words", "acme")
    }))

  it.effect("bad tokens under GH_TOKEN are 400 naming GH_TOKEN; nothing changes", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeRepohost
      yield* service.writes.insertNodes([unclaimedNode("bad-web", annRepo("bad-web"))])
      fake.clearRequests()
      for (const token of ["", 42, null, "x".repeat(1001)]) {
        const e = expectError(yield* claim(service, "acme", "bad-web", { GH_TOKEN: token }), 400, "bad_request")
        expect(e.message, JSON.stringify(token)).toContain("'GH_TOKEN'")
      }
      // an unknown field next to it is still refused, named as sent
      const e = expectError(yield* claim(service, "acme", "bad-web", { GH_TOKEN: vcs.admin, GH_TOKN: "x" }), 400, "bad_request")
      expect(e.message).toContain("GH_TOKN")
      expect(fake.requests()).toEqual([])
      expect(yield* ownerOf(service, "bad-web")).toBe("unclaimed")
    }))

  it.effect("REPOHOST_NAME_ALIAS sets the key (gitlab -> GL_TOKEN); empty turns it off, GH_TOKEN is then an unknown field", () =>
    Effect.scoped(Effect.gen(function*() {
      const fake = yield* FakeRepohost
      for (const [word, key] of [["gitlab", "GL_TOKEN"], ["", undefined]] as const) {
        const { url } = yield* freshDatabase
        const service = yield* startService(url, (c) => ({ ...atFake(fake)(c), aliases: { ...c.aliases, repohost: word } }))
        yield* service.writes.upsertPublishers([{ id: "acme" }])
        yield* addMember(service, "acme", "ann", "owner")
        yield* service.writes.insertNodes([unclaimedNode("keyed", annRepo("keyed"))])
        const jwt = yield* Effect.promise(() => service.token({ sub: "ann" }))
        const refused = expectError(yield* claim(service, "acme", "keyed", { GH_TOKEN: vcs.admin }, { jwt }), 400, "bad_request")
        expect(refused.message).toContain("GH_TOKEN")
        if (key !== undefined) expectClaimed(yield* claim(service, "acme", "keyed", { [key]: vcs.admin }, { jwt }), "keyed", "acme")
        else expect(yield* ownerOf(service, "keyed")).toBe("unclaimed")
      }
    })))

  it.effect("the VCS token is never logged, even when the host fails", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeRepohost
      const secret = "vcs-secret-0123456789abcdef"
      yield* service.writes.insertNodes([unclaimedNode("quiet", annRepo("quiet"))])
      const methods = ["log", "info", "warn", "error", "debug", "trace"] as const
      const spies = methods.map((m) => vi.spyOn(console, m).mockImplementation(() => {}))
      const written = () => spies.flatMap((s) => s.mock.calls.map((args) => args.map((a) => typeof a === "string" ? a : JSON.stringify(a) ?? String(a)).join(" ")))
      try {
        for (const behaviour of [{ kind: "error", status: 500 }, { kind: "hang" }, { kind: "quotaSpent", resetInSeconds: 9 }, { kind: "invalid" }] as const) {
          fake.behave(secret, behaviour)
          const answer = yield* claim(service, "acme", "quiet", { VCS_TOKEN: secret })
          expect(answer.status).toBeGreaterThanOrEqual(400)
          expect(answer.text).not.toContain(secret)
        }
        fake.behave(secret, { kind: "user", login: "ann-on-host", admin: ["ann/*"] })
        const claimed = yield* claim(service, "acme", "quiet", { VCS_TOKEN: secret })
        expect(claimed.status).toBe(200)
        expect(claimed.text).not.toContain(secret)
        const lines = written()
        // the failures were logged (so the spy sees the service's logger), without the token
        expect(lines.some((l) => l.includes("repository host unavailable"))).toBe(true)
        for (const line of lines) expect(line).not.toContain(secret)
      } finally {
        for (const spy of spies) spy.mockRestore()
      }
    }))

  it.effect("two concurrent claims through two instances: exactly one wins, the other is 409", () =>
    Effect.scoped(Effect.gen(function*() {
      const fake = yield* FakeRepohost
      const { url } = yield* freshDatabase
      const a = yield* startService(url, atFake(fake))
      const b = yield* startService(url, atFake(fake))
      yield* a.writes.upsertPublishers([{ id: "first" }, { id: "second" }])
      yield* addMember(a, "first", "fiona", "owner")
      yield* addMember(a, "second", "sam", "owner")
      const fiona = yield* Effect.promise(() => a.token({ sub: "fiona" }))
      const sam = yield* Effect.promise(() => b.token({ sub: "sam" }))
      fake.behave("vcs-fiona", { kind: "user", login: "fiona-on-host", admin: ["ann/*"] })
      fake.behave("vcs-sam", { kind: "user", login: "sam-on-host", admin: ["ann/*"] })
      const rounds = 6
      yield* a.writes.insertNodes(Array.from({ length: rounds }, (_, i) => unclaimedNode(`raced-${i}`, annRepo(`raced-${i}`))))
      // both claims pass the host's check before either moves the node
      fake.setRepoDelay(100)
      const wins = { first: 0, second: 0 }
      try {
        for (let i = 0; i < rounds; i++) {
          const nodeId = `raced-${i}`
          fake.clearRequests()
          const [fromA, fromB] = yield* Effect.all([
            claim(a, "first", nodeId, { VCS_TOKEN: "vcs-fiona" }, { jwt: fiona }),
            claim(b, "second", nodeId, { VCS_TOKEN: "vcs-sam" }, { jwt: sam })
          ], { concurrency: 2 })
          expect([fromA.status, fromB.status].sort(), `${fromA.text} / ${fromB.text}`).toEqual([200, 409])
          // both passed every check before the move: the loser was refused by the conditional update
          expect(fake.requests().filter((r) => r.path === `/repos/ann/${nodeId}`)).toHaveLength(2)
          const [winner, winnerAnswer, loserAnswer] = fromA.status === 200
            ? ["first", fromA, fromB] as const
            : ["second", fromB, fromA] as const
          expectClaimed(winnerAnswer, nodeId, winner)
          expectError(loserAnswer, 409, "node_already_claimed")
          expect(yield* ownerOf(a, nodeId)).toBe(winner)
          wins[winner]++
          // both instances see the winner's node in its listing
          for (const service of [a, b]) {
            expect(yield* listedIds(service, winner, fiona)).toContain(nodeId)
          }
        }
      } finally {
        fake.setRepoDelay(0)
      }
      expect(wins.first + wins.second).toBe(rounds)
    })))

  it.effect(
    "the claim state machine: unclaimed -> claimed once; every refusal leaves the owner unchanged",
    () =>
      forAll(
        {
          steps: fc.array(
            fc.record({
              actor: fc.constantFrom("ua", "ua", "ub", "ub", "uc", "us"),
              publisher: fc.constantFrom("pa", "pb", "pc"),
              token: fc.constantFrom<"admin" | "reader" | "invalid" | "quota" | "down">(
                "admin",
                "admin",
                "reader",
                "invalid",
                "quota",
                "down"
              )
            }),
            { minLength: 1, maxLength: 8 }
          )
        },
        ({ steps }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const fake = yield* FakeRepohost
            const run = ++propRuns
            if (run === 1) {
              yield* service.writes.upsertPublishers([{ id: "pa" }, { id: "pb" }, { id: "pc" }])
              yield* addMember(service, "pa", "ua", "owner")
              yield* addMember(service, "pb", "ub", "admin")
              yield* addMember(service, "pc", "uc", "member")
              for (const user of ["ua", "ub", "uc", "us"]) propJwts[user] = yield* Effect.promise(() => service.token({ sub: user }))
            }
            const nodeId = `prop-${run}`
            yield* service.writes.insertNodes([unclaimedNode(nodeId, annRepo(nodeId))])
            const tokenValue = { admin: vcs.admin, reader: vcs.reader, invalid: vcs.invalid, quota: vcs.quotaSpent, down: vcs.error500 }
            behave(fake)

            const managers: Record<string, string> = { ua: "pa", ub: "pb" }
            let owner = "unclaimed"
            for (const step of steps) {
              const expected: [number, string] = managers[step.actor] !== step.publisher
                ? [403, "forbidden"]
                : owner !== "unclaimed"
                ? [409, "node_already_claimed"]
                : ({
                  admin: [200, ""],
                  reader: [403, "repository_not_owned"],
                  invalid: [403, "invalid_vcs_token"],
                  quota: [429, "rate_limited"],
                  down: [503, "service_unavailable"]
                } as const)[step.token] as [number, string]
              const answer = yield* claim(service, step.publisher, nodeId, { VCS_TOKEN: tokenValue[step.token] }, {
                jwt: propJwts[step.actor]!
              })
              if (expected[0] === 200) {
                expectClaimed(answer, nodeId, step.publisher)
                owner = step.publisher
              } else {
                expectError(answer, expected[0], expected[1])
              }
              expect(yield* ownerOf(service, nodeId)).toBe(owner)
            }
          }),
        { numRuns: 25 }
      ),
    120_000
  )
})

let propRuns = 0
const propJwts: Record<string, string> = {}
