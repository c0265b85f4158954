/**
 * REPOHOST_MODE=simulated (what `npm run demo` sets): the seeded catalogue's unclaimed nodes,
 * whose repositories are on the simulated host, are claimed with any VCS token; the simulation
 * never answers for a real host. With the setting off (the default) the same claim is refused as
 * before, whatever headers the request carries: only the operator turns the simulation on.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { seedNodes, seedPublishers } from "../../scripts/lib/Catalogue.ts"
import type { NodeInput } from "../../scripts/lib/Seeder.ts"
import { simulatedWebHost } from "../../src/Repohost/Client.ts"
import { seedActors, tokensFor } from "../support/Actors.ts"
import { bearerClient } from "../support/Client.ts"
import { queryOne } from "../support/Db.ts"
import { expectError, send } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"

const catalogue = { nodes: 120, versionsPerNode: 1, seed: 1 }

/** Seeds the demo's kind of catalogue and the usual cast; answers the ids of its unclaimed nodes. */
const seedCatalogue = (service: Running, jwts: { owner?: string }) =>
  Effect.gen(function*() {
    const publishers = seedPublishers(catalogue)
    const batch = seedNodes(catalogue, publishers, 0, catalogue.nodes)
    yield* service.writes.upsertPublishers([...publishers, { id: "acme", name: "Acme" }])
    yield* service.writes.insertNodes(batch.nodes)
    yield* service.writes.insertVersions(batch.versions)
    yield* seedActors(service, jwts)
    const unclaimed = batch.nodes.filter((n) => n.publisher_id === "unclaimed" && n.status === "NodeStatusActive")
    expect(unclaimed.length).toBeGreaterThanOrEqual(2)
    return unclaimed.map((n) => n.id)
  })

const claim = (service: Running, token: string, nodeId: string, headers?: Record<string, string>) =>
  send(service, "POST", `/publishers/acme/nodes/${nodeId}/claim-my-node`, { token, body: { VCS_TOKEN: "anything" }, headers })

const ownerOf = (service: Running, nodeId: string) =>
  Effect.map(queryOne<{ publisher_id: string }>(service, "SELECT publisher_id FROM nodes WHERE id = $1", [nodeId]), (row) => row?.publisher_id)

const onRealHost: NodeInput = { id: "real-host-node", publisher_id: "unclaimed", repository: "https://github.com/ann/real-host-node" }

layer(Service.layer((c) => ({ ...c, repohostMode: "simulated" })), { excludeTestServices: true })("REPOHOST_MODE=simulated", (it) => {
  const jwts = tokensFor("owner")

  it.effect("a seeded unclaimed node is claimed with any VCS token, and is then the publisher's", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const [nodeId] = yield* seedCatalogue(service, jwts)
      const node = yield* Effect.promise(() => service.fetch(`/nodes/${nodeId}`).then((r) => r.json() as Promise<{ repository: string }>))
      expect(new URL(node.repository).hostname).toBe(simulatedWebHost)

      // as the registry web front-end claims (its claim-my-node call), through the typed client
      const client = yield* bearerClient(service, jwts.owner)
      const result = yield* client.api.claims.claimMyNode({ params: { publisherId: "acme", nodeId: nodeId! }, payload: { VCS_TOKEN: "anything" } })
      expect(result.message).toBe(`Node ${nodeId} claimed by acme`)
      expect(result.node.publisher?.id).toBe("acme")
      expect(yield* ownerOf(service, nodeId!)).toBe("acme")
      expectError(yield* claim(service, jwts.owner, nodeId!), 409, "node_already_claimed")
    }))

  it.effect("a node on a real host is not the simulation's to give", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.insertNodes([onRealHost])
      const refused = expectError(yield* claim(service, jwts.owner, onRealHost.id), 409, "repository_not_recognised")
      expect(refused.message).toContain(simulatedWebHost)
      expect(yield* ownerOf(service, onRealHost.id)).toBe("unclaimed")
    }))
})

layer(Service.layer(), { excludeTestServices: true })("REPOHOST_MODE unset (live)", (it) => {
  const jwts = tokensFor("owner")

  it.effect("the same claim of a seeded node is refused, also with headers that name a simulated mode", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expect(service.config.repohostMode).toBe("live")
      const [nodeId] = yield* seedCatalogue(service, jwts)
      for (const headers of [undefined, { "x-vendor-mode": "simulated", "x-repohost-mode": "simulated" }]) {
        expectError(yield* claim(service, jwts.owner, nodeId!, headers), 409, "repository_not_recognised")
      }
      expect(yield* ownerOf(service, nodeId!)).toBe("unclaimed")
    }))
})
