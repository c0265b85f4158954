import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Publisher } from "../src/Domain/Publisher.ts"
import { decodeExact, isoMillis } from "./support/Catalogue.ts"
import { bearerClient, clientFor } from "./support/Client.ts"
import { rowCount } from "./support/Db.ts"
import { decodeError, send as sendRequest } from "./support/Http.ts"
import { type Running, Service } from "./support/Service.ts"

const decodePublisher = decodeExact(Publisher)

/** A string body is sent as it is, anything else as JSON; the answer's body is read loosely (`any`). */
const send = (service: Running, method: string, path: string, token: string | undefined, body?: unknown) =>
  sendRequest<any>(service, method, path, { token, ...(typeof body === "string" ? { raw: body } : { body }) })

const tokens = (service: Running) =>
  Effect.promise(async () => ({
    alice: await service.token({ sub: "alice", email: "alice@example.com", name: "Alice" }),
    bob: await service.token({ sub: "bob", email: "bob@example.com" }),
    carol: await service.token({ sub: "carol" }),
    site: await service.token({ sub: "moderator", admin: true })
  }))

/** The typed client of each caller of `tokens`. */
const clients = (service: Running, t: Effect.Success<ReturnType<typeof tokens>>) =>
  Effect.all({
    alice: bearerClient(service, t.alice),
    bob: bearerClient(service, t.bob),
    site: bearerClient(service, t.site),
    anonymous: clientFor(service)
  })

layer(Service.layer(), { excludeTestServices: true })("publishers", (it) => {
  it.effect("creating a publisher makes the caller its owner", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const t = yield* tokens(service)
      const c = yield* clients(service, t)
      const publisher = yield* c.alice.api.publishers.createPublisher({
        payload: { id: "acme", name: "Acme", website: "https://acme.test" }
      })
      expect(publisher).toMatchObject({ id: "acme", name: "Acme", status: "PublisherStatusActive", website: "https://acme.test" })
      expect(publisher.members).toEqual([
        { id: "alice", role: "owner", user: { id: "alice", email: "alice@example.com", name: "Alice" } }
      ])
      // on the wire, the creation time is ISO 8601 with milliseconds
      expect((yield* send(service, "GET", "/publishers/acme", t.alice)).body.createdAt).toMatch(isoMillis)
      const mine = yield* c.alice.api.publishers.listMyPublishers()
      expect(mine.map((p) => p.id)).toEqual(["acme"])
      expect(yield* c.bob.api.publishers.listMyPublishers()).toEqual([])
    }))

  it.effect("refuses taken, reserved and malformed ids", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const t = yield* tokens(service)
      const taken = yield* send(service, "POST", "/publishers", t.bob, { id: "acme" })
      expect(taken.status).toBe(409)
      expect(decodeError(taken.body).error).toBe("publisher_exists")
      const reserved = yield* send(service, "POST", "/publishers", t.bob, { id: "unclaimed" })
      expect(reserved.status).toBe(409)
      expect(reserved.body.error).toBe("publisher_id_reserved")
      for (const id of ["A", "Acme", "1abc", "a", "a_b", "x".repeat(65), ""]) {
        const bad = yield* send(service, "POST", "/publishers", t.bob, { id })
        expect(bad.status).toBe(400)
        expect(decodeError(bad.body).message).toContain("'id'")
      }
      expect(yield* rowCount(service, "SELECT 1 FROM publisher_members WHERE user_id = 'bob'")).toBe(0)
    }))

  it.effect("bad bodies are 400 naming the field, and store nothing", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const t = yield* tokens(service)
      const cases: Array<[unknown, string]> = [
        [{}, "id"],
        [{ id: 42 }, "id"],
        [{ id: "bodies", name: 7 }, "name"],
        [{ id: "bodies", description: "d".repeat(5001) }, "description"],
        [[], "request"]
      ]
      for (const [body, field] of cases) {
        const answer = yield* send(service, "POST", "/publishers", t.carol, body)
        expect(answer.status).toBe(400)
        expect(decodeError(answer.body).message).toContain(field)
      }
      const malformed = yield* send(service, "POST", "/publishers", t.carol, "{\"id\":")
      expect(malformed.status).toBe(400)
      expect(decodeError(malformed.body).error).toBe("bad_request")
      expect(yield* rowCount(service, "SELECT 1 FROM publishers WHERE id = 'bodies'")).toBe(0)
    }))

  it.effect("shows members only to members and site admins", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const t = yield* tokens(service)
      const c = yield* clients(service, t)
      const acme = { params: { publisherId: "acme" } }
      const anonymous = yield* send(service, "GET", "/publishers/acme", undefined)
      expect(anonymous.status).toBe(200)
      expect(decodePublisher(anonymous.body).members).toBeUndefined()
      expect((yield* c.anonymous.api.publicPublishers.getPublisher(acme)).members).toBeUndefined()
      expect((yield* c.bob.api.publicPublishers.getPublisher(acme)).members).toBeUndefined()
      expect((yield* c.alice.api.publicPublishers.getPublisher(acme)).members).toHaveLength(1)
      expect((yield* c.site.api.publicPublishers.getPublisher(acme)).members).toHaveLength(1)
      expect((yield* send(service, "GET", "/publishers/nobody", undefined)).status).toBe(404)
      const badToken = yield* send(service, "GET", "/publishers/acme", "not-a-token")
      expect(badToken.status).toBe(401)
    }))

  it.effect("owners and admins update; status is for site admins; read-only fields are ignored", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const t = yield* tokens(service)
      const c = yield* clients(service, t)
      const acme = { publisherId: "acme" }
      const stranger = yield* send(service, "PUT", "/publishers/acme", t.bob, { description: "hijack" })
      expect(stranger.status).toBe(403)
      const updated = yield* c.alice.api.publishers.updatePublisher({
        params: acme,
        payload: { id: "acme", description: "Tools", members: [], createdAt: "2000-01-01T00:00:00.000Z" }
      })
      expect(updated).toMatchObject({ description: "Tools", name: "Acme" })
      expect(updated.createdAt.toISOString()).not.toBe("2000-01-01T00:00:00.000Z")
      expect(updated.members).toHaveLength(1)
      const otherId = yield* send(service, "PUT", "/publishers/acme", t.alice, { id: "other" })
      expect(otherId.status).toBe(400)
      expect(otherId.body.message).toContain("'id'")
      const ownStatus = yield* send(service, "PUT", "/publishers/acme", t.alice, { status: "PublisherStatusBanned" })
      expect(ownStatus.status).toBe(403)
      const unknownStatus = yield* send(service, "PUT", "/publishers/acme", t.site, { status: "PublisherStatusGone" })
      expect(unknownStatus.status).toBe(400)
      expect(unknownStatus.body.message).toContain("status")
      const banned = yield* c.site.api.publishers.updatePublisher({ params: acme, payload: { status: "PublisherStatusBanned" } })
      expect(banned.status).toBe("PublisherStatusBanned")
      const again = yield* c.site.api.publishers.updatePublisher({ params: acme, payload: { status: "PublisherStatusBanned" } })
      expect(again.status).toBe("PublisherStatusBanned")
      const unbanned = yield* c.site.api.publishers.updatePublisher({ params: acme, payload: { status: "PublisherStatusActive" } })
      expect(unbanned.status).toBe("PublisherStatusActive")
      expect((yield* send(service, "PUT", "/publishers/nobody", t.site, {})).status).toBe(404)
      expect((yield* send(service, "PUT", "/publishers/acme", undefined, {})).status).toBe(401)
    }))

  it.effect("owners manage members; the last owner stays", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const t = yield* tokens(service)
      const c = yield* clients(service, t)
      // bob and carol are known users: they have called the API above
      const added = yield* c.alice.api.publishers.addMember({ params: { publisherId: "acme" }, payload: { user_id: "bob", role: "admin" } })
      expect(added).toEqual({ id: "bob", role: "admin", user: { id: "bob", email: "bob@example.com" } })
      // an admin is not an owner: members are managed by owners only
      const byAdmin = yield* send(service, "POST", "/publishers/acme/members", t.bob, { user_id: "carol", role: "member" })
      expect(byAdmin.status).toBe(403)
      const unknownUser = yield* send(service, "POST", "/publishers/acme/members", t.alice, { user_id: "ghost", role: "member" })
      expect(unknownUser.status).toBe(404)
      const badRole = yield* send(service, "POST", "/publishers/acme/members", t.alice, { user_id: "carol", role: "king" })
      expect(badRole.status).toBe(400)
      expect(badRole.body.message).toContain("role")
      // the admin may now edit the publisher
      const edited = yield* c.bob.api.publishers.updatePublisher({ params: { publisherId: "acme" }, payload: { support: "help@acme.test" } })
      expect(edited.support).toBe("help@acme.test")
      const demoteLast = yield* send(service, "POST", "/publishers/acme/members", t.alice, { user_id: "alice", role: "member" })
      expect(demoteLast.status).toBe(409)
      expect(demoteLast.body.error).toBe("last_owner")
      const removeLast = yield* send(service, "DELETE", "/publishers/acme/members/alice", t.alice)
      expect(removeLast.status).toBe(409)
      const promoted = yield* send(service, "POST", "/publishers/acme/members", t.alice, { user_id: "bob", role: "owner" })
      expect(promoted.status).toBe(200)
      yield* c.bob.api.publishers.removeMember({ params: { publisherId: "acme", userId: "alice" } })
      expect((yield* send(service, "DELETE", "/publishers/acme/members/alice", t.bob)).status).toBe(404)
      expect(yield* c.alice.api.publishers.listMyPublishers()).toEqual([])
    }))
})

layer(Service.layer(), { excludeTestServices: true })("request bodies", (it) => {
  it.effect("a body over the limit is 413 ErrorResponse; nothing stored", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* Effect.promise(() => service.token({ sub: "big" }))
      const huge = JSON.stringify({ id: "huge", description: "x".repeat(17 * 1024 * 1024) })
      const answer = yield* send(service, "POST", "/publishers", token, huge)
      expect(answer.status).toBe(413)
      expect(decodeError(answer.body).error).toBe("payload_too_large")
      expect(yield* rowCount(service, "SELECT 1 FROM publishers WHERE id = 'huge'")).toBe(0)
    }))

  it.effect("the reserved publisher cannot be banned", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const site = yield* Effect.promise(() => service.token({ sub: "mod", admin: true }))
      const answer = yield* send(service, "PUT", "/publishers/unclaimed", site, { status: "PublisherStatusBanned" })
      expect(answer.status).toBe(409)
      expect((yield* send(service, "GET", "/publishers/unclaimed", undefined)).body.status).toBe("PublisherStatusActive")
    }))
})
