/**
 * The publisher pages of registry-web, sent byte for byte as its axios client sends them
 * (`src/api/mutator/axios-instance.ts`: query strings by `qs`, the JSON Accept header of axios, and
 * `pages/_app.tsx`'s interceptor adding `Authorization: Bearer <token>` whenever a user is signed
 * in), and read as its components read the answers.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { cast, seedActors, tokensFor } from "./support/Actors.ts"
import { addMember } from "./support/Db.ts"
import { expectStatus, parseJson, sendText } from "./support/Http.ts"
import { type Running, Service } from "./support/Service.ts"

/** What axios sends with every request of registry-web. */
const axiosHeaders = { accept: "application/json, text/plain, */*" }

/** One request as registry-web's customInstance makes it, its answer read as axios reads it. */
const registryWeb = (service: Running, method: "GET" | "DELETE", url: string, token?: string) =>
  Effect.map(sendText(service, method, url, { token, headers: axiosHeaders }), (reply) => ({
    ...reply,
    data: reply.text === "" ? undefined : parseJson(reply.text, `${method} ${url}`) as any
  }))

layer(Service.layer(), { excludeTestServices: true })("registry-web's publisher pages", (it) => {
  const t = tokensFor("owner", "admin", "member", "stranger", "siteAdmin")

  it.effect("the cast", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.upsertPublishers([{ id: "acme", name: "Acme Nodes" }, { id: "banned-one", status: "PublisherStatusBanned" }])
      yield* service.writes.insertNodes([{ id: "acme-pack", publisher_id: "acme" }])
      yield* seedActors(service, t)
    }))

  // components/publisher/CreatePublisherFormContent.tsx: useValidatePublisher({ username }) on every keystroke
  it.effect("CreatePublisherFormContent.tsx: validate as the user types, the message shown on 400", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const free = yield* registryWeb(service, "GET", "/publishers/validate?username=lumen-lab", t.stranger)
      expect(expectStatus(free, 200, "free id").data).toEqual({ isAvailable: true })
      const taken = yield* registryWeb(service, "GET", "/publishers/validate?username=acme", t.stranger)
      expect(taken.data).toEqual({ isAvailable: false })
      // the empty field before the first keystroke, and an id with a capital: error.response.data.message is shown
      for (const username of ["", "Lumen"]) {
        const bad = yield* registryWeb(service, "GET", `/publishers/validate?username=${username}`, t.stranger)
        expect(bad.status).toBe(400)
        expect(bad.data.message).toContain("username")
      }
    }))

  // components/nodes/AdminNodeClaimModal.tsx: useListPublishers(), filtered in the page by name or id
  it.effect("AdminNodeClaimModal.tsx: the whole list in one call, filtered by name or id", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const list = yield* registryWeb(service, "GET", "/publishers", t.siteAdmin)
      const publishers = expectStatus(list, 200, "list").data as Array<{ id?: string; name?: string }>
      expect(Array.isArray(publishers)).toBe(true)
      const searchTerm = "acme"
      const filtered = publishers.filter((p) =>
        p.name?.toLowerCase().includes(searchTerm) || p.id?.toLowerCase().includes(searchTerm))
      expect(filtered.map((p) => p.id)).toEqual(["acme"])
      // a site admin's list holds the banned publisher too
      expect(publishers.map((p) => p.id)).toEqual(["acme", "banned-one", "unclaimed"])
    }))

  // components/publisher/PublisherDetail.tsx: useGetPermissionOnPublisher(publisher.id), then `permissions?.canEdit`
  it.effect("PublisherDetail.tsx: canEdit shows the edit and delete buttons to managers", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const owner = yield* registryWeb(service, "GET", "/publishers/acme/permissions", t.owner)
      expect(expectStatus(owner, 200, "owner").data).toEqual({ canEdit: true })
      const member = yield* registryWeb(service, "GET", "/publishers/acme/permissions", t.member)
      expect(member.data).toEqual({ canEdit: false })
    }))

  // components/nodes/NodeDetails.tsx: useGetPermissionOnPublisherNodes(node.publisher.id, nodeId)
  it.effect("NodeDetails.tsx: canEdit of the node's page", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const admin = yield* registryWeb(service, "GET", "/publishers/acme/nodes/acme-pack/permissions", t.admin)
      expect(expectStatus(admin, 200, "admin").data).toEqual({ canEdit: true })
      const stranger = yield* registryWeb(service, "GET", "/publishers/acme/nodes/acme-pack/permissions", t.stranger)
      expect(stranger.data).toEqual({ canEdit: false })
    }))

  // components/publisher/DeletePublisherModal.tsx: useDeletePublisher().mutate({ publisherId }); on error it shows error.response.data.message
  it.effect("DeletePublisherModal.tsx: the refusal's message says why; then the delete answers 204", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const refused = yield* registryWeb(service, "DELETE", "/publishers/acme", t.owner)
      expect(refused.status).toBe(409)
      expect(refused.data.message).toContain("1 node")
      yield* service.writes.upsertPublishers([{ id: "empty-one" }])
      yield* addMember(service, "empty-one", cast.owner, "owner")
      const deleted = yield* registryWeb(service, "DELETE", "/publishers/empty-one", t.owner)
      expect(deleted.status).toBe(204)
      expect(deleted.text).toBe("")
    }))
})
