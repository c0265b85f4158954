/**
 * Personal access tokens: POST/GET/DELETE /publishers/{publisherId}/tokens[/{tokenId}] over real
 * HTTP, and TokenRepo.verify (what publishing will use) against the same database.
 */
import { expect, layer } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Redacted, Schema } from "effect"
import { createHash } from "node:crypto"
import { TokenSummary } from "../src/Domain/Token.ts"
import { TokenRepo } from "../src/Tokens/Repo.ts"
import { seedActors, tokensFor } from "./support/Actors.ts"
import { decodeExact, isoMillis, uuidPattern } from "./support/Catalogue.ts"
import { bearerClient } from "./support/Client.ts"
import { countRows, query } from "./support/Db.ts"
import { expectError, expectStatus, send } from "./support/Http.ts"
import { type Running, Service } from "./support/Service.ts"

const prefix = "rgpat_"

type Actor = "none" | "invalid" | "stranger" | "member" | "admin" | "owner" | "siteAdmin" | "otherOwner"
const tokens: Record<Actor, string | undefined> = {
  none: undefined,
  invalid: "not.a.jwt",
  ...tokensFor("stranger", "member", "admin", "owner", "siteAdmin", "otherOwner")
}

/** The typed client calling as `actor` (the owner unless said). */
const clientOf = (service: Running, actor: Actor = "owner") => bearerClient(service, tokens[actor]!)

/** A request with the token of `actor` (the owner's unless said). */
const call = (
  service: Running,
  method: string,
  path: string,
  options: { readonly actor?: Actor; readonly body?: unknown; readonly raw?: string } = {}
) => send(service, method, path, { token: tokens[options.actor ?? "owner"], body: options.body, raw: options.raw })

const create = (service: Running, publisherId: string, body: unknown, actor: Actor = "owner") =>
  Effect.gen(function*() {
    const answer = expectStatus(yield* call(service, "POST", `/publishers/${publisherId}/tokens`, { actor, body }), 201, "create")
    expect(Object.keys(answer.body as object)).toEqual(["token"])
    return (answer.body as { token: string }).token
  })

const decodeSummaries = decodeExact(Schema.Array(TokenSummary))

const list = (service: Running, publisherId: string, actor: Actor = "owner") =>
  Effect.gen(function*() {
    const answer = expectStatus(yield* call(service, "GET", `/publishers/${publisherId}/tokens`, { actor }), 200, "list")
    return { text: answer.text, tokens: decodeSummaries(answer.body) }
  })

const tokenCount = (service: Running) => countRows(service, "personal_access_tokens")

/** TokenRepo over its own pool on the service's database, as another part of the service would use it. */
const withRepo = <A>(service: Running, f: (repo: TokenRepo["Service"]) => Effect.Effect<A>) =>
  Effect.flatMap(TokenRepo, f).pipe(
    Effect.provide(TokenRepo.layer.pipe(Layer.provide(PgClient.layer({ url: Redacted.make(service.databaseUrl) })))),
    Effect.orDie
  )

layer(Service.layer(), { excludeTestServices: true })("personal access tokens", (it) => {
  it.effect("seeds publishers and members", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.upsertPublishers([{ id: "acme" }, { id: "other" }])
      yield* seedActors(service, tokens)
    }))

  it.effect("a token has the prefix and at least 256 random bits, and each is different", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const owner = yield* clientOf(service, "owner")
      const admin = yield* clientOf(service, "admin")
      const values = new Set<string>()
      for (let i = 0; i < 5; i++) {
        const creator = i % 2 === 0 ? owner : admin
        const { token: value } = yield* creator.api.tokens.createToken({ params: { publisherId: "acme" }, payload: { name: `t${i}` } })
        expect(value.startsWith(prefix)).toBe(true)
        const random = value.slice(prefix.length)
        expect(random).toMatch(/^[A-Za-z0-9_-]+$/)
        expect(Buffer.from(random, "base64url").length).toBeGreaterThanOrEqual(32)
        values.add(value)
      }
      expect(values.size).toBe(5)
    }))

  it.effect("only a hash of the value is stored", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const value = yield* create(service, "acme", { name: "stored", description: "checks the table" })
      const rows = yield* query<Record<string, unknown>>(
        service,
        "SELECT * FROM personal_access_tokens WHERE name = 'stored'"
      )
      expect(rows).toHaveLength(1)
      const row = rows[0]!
      const random = value.slice(prefix.length)
      for (const [column, stored] of Object.entries(row)) {
        const forms = Buffer.isBuffer(stored)
          ? [stored.toString("utf8"), stored.toString("hex"), stored.toString("base64"), stored.toString("base64url")]
          : [JSON.stringify(stored) ?? ""]
        for (const form of forms) {
          expect(form, column).not.toContain(value)
          expect(form, column).not.toContain(random)
          expect(form, column).not.toContain(random.slice(0, 12))
        }
      }
      expect(Buffer.isBuffer(row.token_hash)).toBe(true)
      expect((row.token_hash as Buffer).equals(createHash("sha256").update(value).digest())).toBe(true)
      expect(row.token_hint).toBe(value.slice(0, prefix.length + 4))
      expect(row.created_by).toBe("ann")
      expect(row.revoked_at).toBeNull()
    }))

  it.effect("listing shows tokens masked, with their metadata, to owners and admins", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const value = yield* create(service, "other", { name: "ci", description: "for the CI" }, "otherOwner")
      const plain = yield* create(service, "other", { name: "plain" }, "otherOwner")
      const listed = yield* list(service, "other", "otherOwner")
      expect(listed.tokens.map((t) => t.name)).toEqual(["ci", "plain"])
      expect(listed.text).not.toContain(value.slice(prefix.length + 4))
      expect(listed.text).not.toContain(plain.slice(prefix.length + 4))
      const [ci, second] = listed.tokens
      expect(ci).toEqual({
        id: expect.stringMatching(uuidPattern),
        name: "ci",
        description: "for the CI",
        token: `${value.slice(0, prefix.length + 4)}…`,
        createdAt: expect.stringMatching(isoMillis)
      })
      expect(second!.description).toBeUndefined()
      expect(second!.lastUsedAt).toBeUndefined()
      expect(second!.token).toBe(`${plain.slice(0, prefix.length + 4)}…`)
      // admins list too; each publisher sees its own tokens only
      const acme = yield* list(service, "acme", "admin")
      expect(acme.tokens.length).toBeGreaterThan(0)
      expect(acme.tokens.map((t) => t.id)).not.toContain(ci!.id)
    }))

  it.effect("authorization: owners and admins only, never site admins or other members", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const victim = yield* create(service, "acme", { name: "authz target" })
      const victimId = (yield* list(service, "acme")).tokens.find((t) => t.name === "authz target")!.id
      const expected: Record<Actor, number> = {
        none: 401,
        invalid: 401,
        stranger: 403,
        member: 403,
        otherOwner: 403,
        siteAdmin: 403,
        admin: 0,
        owner: 0
      }
      const table: Array<[string, Actor, number, number]> = []
      for (const actor of Object.keys(expected) as Array<Actor>) {
        const before = yield* tokenCount(service)
        const created = yield* call(service, "POST", "/publishers/acme/tokens", { actor, body: { name: `by ${actor}` } })
        table.push(["create", actor, created.status, expected[actor] || 201])
        expect(yield* tokenCount(service)).toBe(before + (created.status === 201 ? 1 : 0))
        const listed = yield* call(service, "GET", "/publishers/acme/tokens", { actor })
        table.push(["list", actor, listed.status, expected[actor] || 200])
        if (expected[actor] !== 0) {
          const revoked = yield* call(service, "DELETE", `/publishers/acme/tokens/${victimId}`, { actor })
          table.push(["revoke", actor, revoked.status, expected[actor]])
          for (const answer of [created, listed, revoked]) {
            expectError(answer, expected[actor], expected[actor] === 401 ? "unauthorized" : "forbidden")
          }
        }
      }
      expect(table.map(([op, actor, status]) => [op, actor, status])).toEqual(
        table.map(([op, actor, , want]) => [op, actor, want])
      )
      // the refused revocations left the token alive
      expect((yield* list(service, "acme")).tokens.map((t) => t.id)).toContain(victimId)
      expect(Option.isSome(yield* withRepo(service, (repo) => repo.verify("acme", Redacted.make(victim))))).toBe(true)
      // an unknown publisher is 404 for each operation
      expectError(yield* call(service, "POST", "/publishers/nobody/tokens", { body: { name: "x" } }), 404, "not_found")
      expectError(yield* call(service, "GET", "/publishers/nobody/tokens"), 404, "not_found")
      expectError(yield* call(service, "DELETE", `/publishers/nobody/tokens/${victimId}`), 404, "not_found")
    }))

  it.effect("lifecycle: created, used, listed with its last use, revoked at once, then refused", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const owner = yield* clientOf(service)
      const acme = { publisherId: "acme" }
      const { token: value } = yield* owner.api.tokens.createToken({ params: acme, payload: { name: "lifecycle" } })
      const find = Effect.map(owner.api.tokens.listTokens({ params: acme }), (listed) => listed.find((t) => t.name === "lifecycle"))
      const before = yield* find
      expect(before!.lastUsedAt).toBeUndefined()

      const used = yield* withRepo(service, (repo) => repo.verify("acme", Redacted.make(value)))
      expect(used).toEqual(Option.some(before!.id))
      const after = yield* find
      expect(after!.lastUsedAt).toBeInstanceOf(Date)
      expect(after!.lastUsedAt!.getTime()).toBeGreaterThanOrEqual(after!.createdAt.getTime())
      // on the wire, ISO 8601 with milliseconds
      expect((yield* list(service, "acme")).tokens.find((t) => t.name === "lifecycle")!.lastUsedAt).toMatch(isoMillis)

      // not for another publisher, not a near miss, not something without the prefix
      yield* withRepo(service, (repo) =>
        Effect.gen(function*() {
          expect(yield* repo.verify("other", Redacted.make(value))).toEqual(Option.none())
          expect(yield* repo.verify("acme", Redacted.make(`${value}x`))).toEqual(Option.none())
          expect(yield* repo.verify("acme", Redacted.make(value.slice(prefix.length)))).toEqual(Option.none())
        }))

      const [, revoked] = yield* owner.api.tokens.revokeToken({ params: { ...acme, tokenId: before!.id }, responseMode: "decoded-and-response" })
      expect(revoked.status).toBe(204)
      expect(yield* revoked.text).toBe("")
      expect(yield* find).toBeUndefined()
      expect(yield* withRepo(service, (repo) => repo.verify("acme", Redacted.make(value)))).toEqual(Option.none())
      const stored = yield* query<{ revoked: boolean }>(
        service,
        "SELECT revoked_at IS NOT NULL AS revoked FROM personal_access_tokens WHERE id = $1",
        [before!.id]
      )
      expect(stored).toEqual([{ revoked: true }])
      // a second revocation finds no token
      expectError(yield* call(service, "DELETE", `/publishers/acme/tokens/${before!.id}`), 404, "not_found")
    }))

  it.effect("revoking an unknown, malformed or other publisher's token is 404", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const othersValue = yield* create(service, "other", { name: "not acme's" }, "otherOwner")
      const othersId = (yield* list(service, "other", "otherOwner")).tokens.find((t) => t.name === "not acme's")!.id
      for (const id of ["00000000-0000-0000-0000-000000000000", othersId, "not-a-uuid", "123", "%27%3B--"]) {
        expectError(yield* call(service, "DELETE", `/publishers/acme/tokens/${id}`), 404, "not_found")
      }
      expect(yield* withRepo(service, (repo) => repo.verify("other", Redacted.make(othersValue)))).toEqual(Option.some(othersId))
    }))

  it.effect("bad bodies are 400 naming the field, and store nothing", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const cases: Array<[string, { body?: unknown; raw?: string }, string | undefined]> = [
        ["missing name", { body: { description: "no name" } }, "name"],
        ["empty name", { body: { name: "" } }, "name"],
        ["name of 101 characters", { body: { name: "n".repeat(101) } }, "name"],
        ["name of the wrong type", { body: { name: 42 } }, "name"],
        ["name null", { body: { name: null } }, "name"],
        ["description of the wrong type", { body: { name: "ok", description: ["x"] } }, "description"],
        ["description too long", { body: { name: "ok", description: "d".repeat(1001) } }, "description"],
        ["malformed JSON", { raw: "{\"name\": \"x\"" }, undefined],
        ["an array", { body: [{ name: "x" }] }, undefined],
        ["a string", { body: "name" }, undefined],
        ["no body", {}, undefined]
      ]
      const before = yield* tokenCount(service)
      for (const [label, input, field] of cases) {
        const answer = yield* call(service, "POST", "/publishers/acme/tokens", input)
        const e = expectError(answer, 400, "bad_request")
        if (field !== undefined) expect(e.message, label).toContain(field)
      }
      expect(yield* tokenCount(service)).toBe(before)
      // the limits themselves are accepted
      const owner = yield* clientOf(service)
      const acme = { publisherId: "acme" }
      const longest = yield* owner.api.tokens.createToken({ params: acme, payload: { name: "n".repeat(100), description: "d".repeat(1000) } })
      expect(longest.token.startsWith(prefix)).toBe(true)
      const ignoring = yield* owner.api.tokens.createToken({
        params: acme,
        payload: { name: "x", token: "ignored", id: "ignored", createdAt: "ignored" }
      })
      expect(ignoring.token.startsWith(prefix)).toBe(true)
      expect(yield* tokenCount(service)).toBe(before + 2)
    }))
})
