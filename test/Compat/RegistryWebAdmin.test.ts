/**
 * The admin side of registry-web, replayed as it sends it: `src/api/generated.ts` (orval) gives
 * each request (`getUser`: GET /users; `banPublisher`: POST /publishers/{publisherId}/ban;
 * `banPublisherNode`: POST /publishers/{publisherId}/nodes/{nodeId}/ban; `generateAdminToken`:
 * POST /admin/generate-token, none with a body), `pages/_app.tsx`'s interceptor the token each
 * carries (the minted admin token for `/ban` and `/admin/*` writes but the token route itself,
 * the login token otherwise), and the components what they read of the answers:
 * `components/common/HOC/authAdmin.tsx` (`user.isAdmin`), `Header/ProfileDropdown.tsx`
 * (`user.email`, `user.name`), `src/hooks/useAdminJwtToken.ts` (`result.token`, `result.expires_at`).
 */
import { expect, layer } from "@effect/vitest"
import { Console, Effect, Layer, Option } from "effect"
import * as fc from "fast-check"
import * as jose from "jose"
import { NodeFileSystem } from "@effect/platform-node"
import { mintToken } from "../../src/Auth/Jwt.ts"
import { loggingLayer } from "../../src/Observability/Logging.ts"
import { cast, seedActors, tokensFor } from "../support/Actors.ts"
import { expectError, expectStatus, parseJson, send, sendText } from "../support/Http.ts"
import { JwksServer } from "../support/Jwks.ts"
import { forAll } from "../support/Property.ts"
import { type Running, Service, serviceOnFreshDatabase } from "../support/Service.ts"

/** What axios sends with every request of registry-web. */
const axiosHeaders = { accept: "application/json, text/plain, */*" }

/** One request as registry-web's customInstance makes it (no body on any of these), read as axios reads it. */
const registryWeb = (service: Running, method: "GET" | "POST", url: string, token?: string) =>
  Effect.map(sendText(service, method, url, { token, headers: axiosHeaders }), (reply) => ({
    ...reply,
    body: reply.text === "" ? undefined : parseJson(reply.text, `${method} ${url}`) as any
  }))

/** The service's log lines, kept: the token's minting must be logged, its text never. */
const lines: Array<string> = []
const write = (...parts: ReadonlyArray<unknown>) => void lines.push(parts.map(String).join(" "))
const capture: Console.Console = { ...globalThis.console, log: write, error: write, info: write, warn: write, debug: write, group: () => {}, groupEnd: () => {} }
const logging = Layer.merge(loggingLayer("logfmt", "Info"), Layer.succeed(Console.Console, capture))

/** The ids GET /nodes lists, from one page large enough for this catalogue. */
const listed = (service: Running, token?: string) =>
  Effect.map(registryWeb(service, "GET", "/nodes?page=1&limit=100", token), (reply) =>
    (expectStatus(reply, 200, "GET /nodes").body.nodes as Array<{ id: string }>).map((n) => n.id).sort())

layer(Service.layer(undefined, logging), { excludeTestServices: true })("registry-web's admin pages", (it) => {
  const t = tokensFor("owner", "stranger", "siteAdmin")

  it.effect("the cast", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.upsertPublishers([{ id: "acme", name: "Acme" }, { id: "other", name: "Other" }, { id: "doomed", name: "Doomed" }])
      for (const [id, publisher_id] of [["acme-1", "acme"], ["acme-2", "acme"], ["other-1", "other"], ["doomed-1", "doomed"]]) {
        yield* service.writes.insertNodes([{ id: id!, publisher_id: publisher_id! }])
      }
      yield* seedActors(service, t)
      // a site admin whose login token carries an e-mail address and a name, as the front-end shows them
      t.siteAdmin = yield* Effect.promise(() => service.token({ sub: cast.siteAdmin, email: "root@example.org", name: "Root", admin: true }))
    }))

  // components/common/HOC/authAdmin.tsx: useGetUser({}), then `!user` to the login page, `!user.isAdmin` a 403 page
  it.effect("GET /users: the signed-in user with isAdmin, email and name; 401 without a token", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const admin = expectStatus(yield* registryWeb(service, "GET", "/users", t.siteAdmin), 200, "site admin").body
      expect(admin).toEqual({ id: cast.siteAdmin, email: "root@example.org", name: "Root", isAdmin: true })
      const plain = expectStatus(yield* registryWeb(service, "GET", "/users", t.owner), 200, "plain user").body
      expect(plain).toEqual({ id: cast.owner, isAdmin: false })
      expectError(yield* registryWeb(service, "GET", "/users"), 401, "unauthorized")
      expectError(yield* registryWeb(service, "GET", "/users", "not-a-jwt"), 401, "unauthorized")
    }))

  // src/hooks/useAdminJwtToken.ts: generateTokenMutation.mutateAsync(), then setAdminJwtToken(result.token, result.expires_at)
  it.effect("POST /admin/generate-token: the caller's own token, at most an hour, logged without its text", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const before = Date.now()
      const reply = expectStatus(yield* registryWeb(service, "POST", "/admin/generate-token", t.siteAdmin), 200, "mint")
      expect(Object.keys(reply.body).sort()).toEqual(["expires_at", "token"])
      const { token, expires_at } = reply.body as { token: string; expires_at: string }
      // new Date(result.expires_at).toLocaleString() in the toast: an ISO instant
      const expiresAt = new Date(expires_at).getTime()
      expect(new Date(expiresAt).toISOString()).toBe(expires_at)
      expect(expiresAt).toBeGreaterThan(before)
      expect(expiresAt).toBeLessThanOrEqual(Date.now() + 3600_000)
      const claims = jose.decodeJwt(token)
      expect(claims.sub).toBe(cast.siteAdmin)
      expect(claims.exp! - claims.iat!).toBeLessThanOrEqual(3600)
      expect(claims.exp! * 1000).toBe(expiresAt)

      // it works as a bearer on the service: the same user, still a site admin
      const me = expectStatus(yield* registryWeb(service, "GET", "/users", token), 200, "with the minted token").body
      expect(me).toEqual({ id: cast.siteAdmin, email: "root@example.org", name: "Root", isAdmin: true })

      const logged = lines.filter((line) => line.includes("Admin token minted"))
      expect(logged).toHaveLength(1)
      expect(logged[0]).toContain(cast.siteAdmin)
      expect(logged[0]).toContain(expires_at)
      expect(lines.some((line) => line.includes(token))).toBe(false)
      expect(logged[0]).toMatch(/level=INFO/)
    }))

  it.effect("POST /admin/generate-token: 401 anonymous, 403 for a plain user", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectError(yield* registryWeb(service, "POST", "/admin/generate-token"), 401, "unauthorized")
      expectError(yield* registryWeb(service, "POST", "/admin/generate-token", t.owner), 403, "forbidden")
    }))

  // components/nodes/NodeDetails.tsx and pages/admin/nodes.tsx:
  // banNodeMutation.mutateAsync({ publisherId: node.publisher.id, nodeId: node.id }), sent with the minted token
  it.effect("POST /publishers/{id}/nodes/{nodeId}/ban: 204, and the node leaves GET /nodes as after the admin path's ban", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const minted = expectStatus(yield* registryWeb(service, "POST", "/admin/generate-token", t.siteAdmin), 200, "mint").body.token as string
      expect(yield* listed(service)).toEqual(["acme-1", "acme-2", "doomed-1", "other-1"])

      expectError(yield* registryWeb(service, "POST", "/publishers/acme/nodes/acme-2/ban"), 401, "unauthorized")
      expectError(yield* registryWeb(service, "POST", "/publishers/acme/nodes/acme-2/ban", t.owner), 403, "forbidden")
      // a node of another publisher, and no node at all
      expectError(yield* registryWeb(service, "POST", "/publishers/acme/nodes/other-1/ban", minted), 404, "not_found")
      expectError(yield* registryWeb(service, "POST", "/publishers/acme/nodes/nobody/ban", minted), 404, "not_found")
      expectError(yield* registryWeb(service, "POST", "/publishers/nobody/nodes/acme-2/ban", minted), 404, "not_found")
      expect(yield* listed(service)).toEqual(["acme-1", "acme-2", "doomed-1", "other-1"])

      const ban = yield* registryWeb(service, "POST", "/publishers/acme/nodes/acme-2/ban", minted)
      expectStatus(ban, 204, "ban node")
      expect(ban.text).toBe("")
      expect(yield* listed(service)).toEqual(["acme-1", "doomed-1", "other-1"])
      expectError(yield* registryWeb(service, "GET", "/nodes/acme-2"), 403, "node_banned")

      // the admin path's unban brings it back: the same status the admin path moves
      const unban = yield* sendText(service, "PUT", "/admin/nodes/acme-2", { token: minted, body: { status: "NodeStatusActive" } })
      expectStatus(unban, 200, "unban node")
      expect(yield* listed(service)).toEqual(["acme-1", "acme-2", "doomed-1", "other-1"])
    }))

  it.effect("POST /publishers/{id}/ban: 204, and its nodes leave GET /nodes; unknown 404, 'unclaimed' 409, plain user 403", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const minted = expectStatus(yield* registryWeb(service, "POST", "/admin/generate-token", t.siteAdmin), 200, "mint").body.token as string

      expectError(yield* registryWeb(service, "POST", "/publishers/doomed/ban"), 401, "unauthorized")
      expectError(yield* registryWeb(service, "POST", "/publishers/doomed/ban", t.owner), 403, "forbidden")
      expectError(yield* registryWeb(service, "POST", "/publishers/nobody/ban", minted), 404, "not_found")
      const unclaimed = expectError(yield* registryWeb(service, "POST", "/publishers/unclaimed/ban", minted), 409, "conflict")
      expect(unclaimed.message).toContain("unclaimed")

      const ban = yield* registryWeb(service, "POST", "/publishers/doomed/ban", minted)
      expectStatus(ban, 204, "ban publisher")
      expect(ban.text).toBe("")
      expect(yield* listed(service)).toEqual(["acme-1", "acme-2", "other-1"])
      const publisher = expectStatus(yield* registryWeb(service, "GET", "/publishers/doomed", t.siteAdmin), 200, "publisher").body
      expect(publisher.status).toBe("PublisherStatusBanned")
      // as after the admin path's ban (test/Admin.test.ts): its nodes answer node_banned
      expectError(yield* registryWeb(service, "GET", "/nodes/doomed-1"), 403, "node_banned")
    }))
})

// a deployment that lets tokens live ten minutes at most: the admin token lives no longer
layer(Service.layer((c) => ({ ...c, auth: { ...c.auth, maxTokenLifetimeSeconds: 600 } })), { excludeTestServices: true })(
  "registry-web's admin token under a shorter token lifetime",
  (it) => {
    it.effect("POST /admin/generate-token: lives AUTH_MAX_TOKEN_LIFETIME_SECONDS when that is under an hour, and verifies", () =>
      Effect.gen(function*() {
        const service = yield* Service
        // the login token itself must live within the limit
        const login = yield* Effect.provide(mintToken(service.config, { sub: "root", admin: true }, "5m"), NodeFileSystem.layer)
        const { token, expires_at } = expectStatus(yield* registryWeb(service, "POST", "/admin/generate-token", login), 200, "mint").body
        const claims = jose.decodeJwt(token)
        expect(claims.exp! - claims.iat!).toBeLessThanOrEqual(600)
        expect(new Date(expires_at).getTime()).toBeLessThanOrEqual(Date.now() + 600_000)
        expect(expectStatus(yield* registryWeb(service, "GET", "/users", token), 200, "bearer").body).toEqual({ id: "root", isAdmin: true })
      }))
  }
)

// tokens verified against another issuer's keys: this service has no key of theirs to sign with
const jwksDeployment = Layer.effect(
  Service,
  Effect.flatMap(JwksServer, (jwks) => serviceOnFreshDatabase((c) => ({ ...c, auth: { ...c.auth, jwksUrl: Option.some(jwks.url) } })))
).pipe(Layer.provideMerge(JwksServer.layer))

layer(jwksDeployment, { excludeTestServices: true })("registry-web's admin token with AUTH_JWKS_URL", (it) => {
  it.effect("POST /admin/generate-token: 409 naming AUTH_JWKS_URL; GET /users reads the provider's token", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwks = yield* JwksServer
      const admin = yield* Effect.promise(() => jwks.sign({ sub: "oidc|root", email: "root@example.org", admin: true }))
      const refused = expectError(yield* registryWeb(service, "POST", "/admin/generate-token", admin), 409, "conflict")
      expect(refused.message).toContain("AUTH_JWKS_URL")
      expect(expectStatus(yield* registryWeb(service, "GET", "/users", admin), 200, "user").body)
        .toEqual({ id: "oidc|root", email: "root@example.org", isAdmin: true })
    }))
})

layer(Service.layer(), { excludeTestServices: true })("registry-web's bans, by property", (it) => {
  const t = tokensFor("owner", "stranger", "siteAdmin")
  let run = 0

  it.effect(
    "random bans (the front-end's paths) and unbans (the admin paths) by random callers: answers and GET /nodes follow a model",
    () =>
      Effect.gen(function*() {
        const service = yield* Service
        yield* service.writes.upsertPublishers([{ id: "acme", name: "Acme" }, { id: "other", name: "Other" }])
        yield* seedActors(service, t)
        // what pages/_app.tsx sends as the bearer of a /ban: the site admin's minted token
        const minted = expectStatus(yield* registryWeb(service, "POST", "/admin/generate-token", t.siteAdmin), 200, "mint").body.token as string
        const bearers = { siteAdmin: minted, owner: t.owner, stranger: t.stranger, anonymous: undefined }
        const actions = ["banPublisher", "banNode", "banNodeUnderOther", "unbanPublisher", "unbanNode"] as const
        yield* forAll(
          {
            steps: fc.array(
              fc.record({ actor: fc.constantFrom(...(Object.keys(bearers) as Array<keyof typeof bearers>)), action: fc.constantFrom(...actions) }),
              { minLength: 1, maxLength: 10 }
            )
          },
          ({ steps }) =>
            Effect.gen(function*() {
              const publisherId = `prop-pub-${run++}`
              const nodeId = `${publisherId}-node`
              yield* service.writes.upsertPublishers([{ id: publisherId }])
              yield* service.writes.insertNodes([{ id: nodeId, publisher_id: publisherId }])
              const model = { publisherBanned: false, nodeBanned: false }
              for (const step of steps) {
                const token = bearers[step.actor]
                const what = `${step.actor} ${step.action} ${JSON.stringify(model)}`
                const reply = step.action === "unbanPublisher"
                  ? yield* send(service, "PUT", `/admin/publishers/${publisherId}`, { token, body: { status: "PublisherStatusActive" } })
                  : step.action === "unbanNode"
                  ? yield* send(service, "PUT", `/admin/nodes/${nodeId}`, { token, body: { status: "NodeStatusActive" } })
                  : yield* registryWeb(
                    service,
                    "POST",
                    step.action === "banPublisher"
                      ? `/publishers/${publisherId}/ban`
                      : `/publishers/${step.action === "banNode" ? publisherId : "other"}/nodes/${nodeId}/ban`,
                    token
                  )
                if (step.actor === "anonymous") expectError(reply, 401, "unauthorized")
                else if (step.actor !== "siteAdmin") expectError(reply, 403, "forbidden")
                else if (step.action === "banNodeUnderOther") expectError(reply, 404, "not_found")
                else {
                  expectStatus(reply, step.action.startsWith("ban") ? 204 : 200, what)
                  if (step.action === "banPublisher") model.publisherBanned = true
                  if (step.action === "unbanPublisher") model.publisherBanned = false
                  if (step.action === "banNode") model.nodeBanned = true
                  if (step.action === "unbanNode") model.nodeBanned = false
                }
                const shown = (yield* listed(service)).includes(nodeId)
                expect(shown, what).toBe(!model.publisherBanned && !model.nodeBanned)
              }
            }),
          { numRuns: 20 }
        )
      }),
    120_000
  )
})
