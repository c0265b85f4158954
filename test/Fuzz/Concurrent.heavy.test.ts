/**
 * The schema-driven fuzzer with several clients at once (issue 22): ten clients share one service,
 * each sending its own requests one after another while the others send theirs. Site admins,
 * publisher owners, anonymous callers, a user and an API key draw requests of every operation of
 * `/openapi.json` (valid and mutated, as Fuzz.heavy.test.ts makes them), and the site admins and owners
 * also write to one publisher all along: two admins ban and unban it, two others ban, unban and
 * tag its nodes and move their versions' statuses, and its owners update and publish those nodes.
 * These writers lock the same rows at the same moments.
 *
 * It fails on any 5xx, on any answer the document does not declare (as Fuzz.heavy.test.ts judges them),
 * and on any line the service logs at ERROR while it runs. A few hundred requests: seconds, in the
 * normal suite. The requests come from a fixed seed (FUZZ_SEED); their interleaving is the
 * scheduler's, which is the point.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { Service } from "../support/Service.ts"
import { captureLogs, type Document, fuzzOne, FuzzLayer, operationsOf, seed, seedCatalogue, validators } from "./Harness.ts"
import { type Actor, type FuzzRequest, type Operation, requestOf } from "./Requests.ts"

// from before the service starts: ERROR lines are counted while fuzzing
const logs = captureLogs()

/** Requests each client sends. */
const requestsPerClient = 30

/** The publisher every moderating client writes to, and its nodes (each with an active version). */
const publisher = "acme"
const moderated = ["mod-1", "mod-2", "mod-3", "mod-4", "mod-5", "mod-6"]

/** What a client writes to the moderated publisher between its fuzzed requests, if anything. */
type Writes = "publisherStatus" | "nodeModeration" | "ownerEdits" | "none"

interface Client {
  readonly name: string
  readonly actor: Actor
  readonly writes: Writes
}

const clients: ReadonlyArray<Client> = [
  { name: "site admin A", actor: "siteAdmin", writes: "publisherStatus" },
  { name: "site admin B", actor: "siteAdmin", writes: "publisherStatus" },
  { name: "site admin C", actor: "siteAdmin", writes: "nodeModeration" },
  { name: "site admin D", actor: "siteAdmin", writes: "nodeModeration" },
  { name: "owner A", actor: "owner", writes: "ownerEdits" },
  { name: "owner B", actor: "owner", writes: "ownerEdits" },
  { name: "anonymous A", actor: "none", writes: "none" },
  { name: "anonymous B", actor: "none", writes: "none" },
  { name: "user", actor: "user", writes: "none" },
  { name: "API key", actor: "apiKey", writes: "none" }
]

interface Job {
  readonly op: Operation
  readonly req: FuzzRequest
  /** The moderated publisher's writes, told apart by kind (to see that they overlapped). */
  readonly write?: Writes
}

/** The operation of the document at `method` and `path` (its template). */
const operationAt = (operations: ReadonlyArray<Operation>, method: string, path: string): Operation => {
  const op = operations.find((o) => o.method === method && o.path === path)
  if (op === undefined) throw new Error(`no operation ${method} ${path} in /openapi.json`)
  return op
}

const jsonRequest = (kind: string, actor: Actor, op: Operation, pathParams: Record<string, string>, body: unknown): FuzzRequest => ({
  kind,
  actor,
  method: op.method,
  pathParams,
  rawPath: false,
  query: [],
  headers: { "content-type": "application/json" },
  body: { kind: "text", text: JSON.stringify(body) }
})

/** The `i`-th write of a client to the moderated publisher, by kind: bans and unbans in turn. */
const writeOf = (operations: ReadonlyArray<Operation>, client: Client, c: number, i: number): Job | undefined => {
  const node = moderated[(c + i) % moderated.length]!
  const banned = i % 2 === 0
  switch (client.writes) {
    case "publisherStatus": {
      const op = operationAt(operations, "PUT", "/admin/publishers/{publisherId}")
      const status = banned ? "PublisherStatusBanned" : "PublisherStatusActive"
      return { op, write: "publisherStatus", req: jsonRequest(`${client.name}: publisher ${status}`, client.actor, op, { publisherId: publisher }, { status }) }
    }
    case "nodeModeration": {
      if (i % 3 === 2) {
        const op = operationAt(operations, "PUT", "/admin/nodes/{nodeId}/versions/{version}")
        const status = banned ? "NodeVersionStatusFlagged" : "NodeVersionStatusActive"
        const body = { status, status_reason: `fuzzed by ${client.name}` }
        return { op, write: "nodeModeration", req: jsonRequest(`${client.name}: version ${status}`, client.actor, op, { nodeId: node, version: "1.0.0" }, body) }
      }
      const op = operationAt(operations, "PUT", "/admin/nodes/{nodeId}")
      const body = { status: banned ? "NodeStatusBanned" : "NodeStatusActive", tags_admin: [`round-${i}`], search_ranking: i }
      return { op, write: "nodeModeration", req: jsonRequest(`${client.name}: node ${body.status}`, client.actor, op, { nodeId: node }, body) }
    }
    case "ownerEdits": {
      if (i % 2 === 0) {
        const op = operationAt(operations, "PUT", "/publishers/{publisherId}/nodes/{nodeId}")
        const body = { description: `edited by ${client.name}, round ${i}` }
        return { op, write: "ownerEdits", req: jsonRequest(`${client.name}: node edit`, client.actor, op, { publisherId: publisher, nodeId: node }, body) }
      }
      const op = operationAt(operations, "POST", "/publishers/{publisherId}/nodes/{nodeId}/versions")
      const body = { node: { description: `published by ${client.name}` }, node_version: { version: `2.${c}.${i}` } }
      return { op, write: "ownerEdits", req: jsonRequest(`${client.name}: publish`, client.actor, op, { publisherId: publisher, nodeId: node }, body) }
    }
    case "none":
      return undefined
  }
}

interface Timed {
  readonly write: Writes | undefined
  readonly kind: string
  readonly start: number
  readonly end: number
  readonly status: number
  readonly problem: string | undefined
}

layer(FuzzLayer, { excludeTestServices: true, timeout: 120_000 })("schema-driven fuzzer, concurrent clients", (it) => {
  it.effect(`${clients.length} clients at once, ${requestsPerClient} requests each, moderating one publisher meanwhile: no 5xx, no ERROR line, every answer as documented`, () =>
    Effect.gen(function*() {
      const service = yield* Service
      const doc = (yield* Effect.promise(() => service.fetch("/openapi.json").then((r) => r.json()))) as Document
      const operations = operationsOf(doc)
      const { context, credentials } = yield* seedCatalogue(service, doc.components.schemas)
      yield* service.writes.insertNodes(moderated.map((id) => ({ id, publisher_id: publisher, name: id })))
      yield* service.writes.insertVersions(moderated.map((id) => ({ node_id: id, version: "1.0.0", status: "NodeVersionStatusActive" as const })))
      const check = validators(doc.components.schemas)

      // each client's own requests: a fuzzed one of any operation, and, for the writers, one to
      // the moderated publisher every other turn
      const anyRequest = fc.constantFrom(...operations).chain((op) => requestOf(context, op).map((req) => ({ op, req })))
      const plans = clients.map((client, c) => {
        const fuzzed = fc.sample(anyRequest, { seed: seed + 1_000 + c, numRuns: requestsPerClient })
        return fuzzed.map(({ op, req }, i): Job =>
          (client.writes !== "none" && i % 2 === 1 ? writeOf(operations, client, c, (i - 1) / 2) : undefined) ??
            { op, req: { ...req, kind: `${req.kind} (${client.name})`, actor: client.actor } }
        )
      })

      const logsBefore = logs.count()
      const t0 = performance.now()
      // in rounds: each client's next request goes out with the others' (so the writes to the
      // moderated publisher are released together, as a busy admin front-end's are); each client
      // waits for its answer, and the round for its slowest
      const outcomes: Array<Timed> = []
      for (let i = 0; i < requestsPerClient; i++) {
        const round = yield* Effect.forEach(
          plans,
          (plan) =>
            Effect.promise(async (): Promise<Timed> => {
              const { op, req, write } = plan[i]!
              const start = performance.now()
              const outcome = await fuzzOne(service, check, credentials, op, req)
              return { write, kind: req.kind, start, end: performance.now(), status: outcome.status, problem: outcome.problem }
            }),
          { concurrency: "unbounded" }
        )
        outcomes.push(...round)
      }
      const seconds = (performance.now() - t0) / 1000
      const errorLines = logs.errorLinesSince(logsBefore)

      const problems = outcomes.flatMap((o) => (o.problem === undefined ? [] : [o.problem]))
      const answered = outcomes.filter((o) => o.status > 0)
      // both reported: the log says why a 500 was one
      expect.soft(problems.slice(0, 40), `${problems.length} problems in ${answered.length} requests (${seconds.toFixed(1)} s)`).toEqual([])
      expect.soft(errorLines.slice(0, 10).map((line) => line.slice(0, 2_000)), `${errorLines.length} ERROR lines logged while fuzzing`).toEqual([])

      // the run did what it is for: most requests answered, the publisher banned and unbanned,
      // and its status changes running while its nodes were being moderated
      expect(answered.length).toBeGreaterThanOrEqual(clients.length * requestsPerClient * 0.9)
      const ofKind = (kind: Writes) => outcomes.filter((o) => o.write === kind && o.status > 0)
      const bans = ofKind("publisherStatus")
      const moderations = ofKind("nodeModeration")
      expect(bans.length).toBeGreaterThanOrEqual(20)
      for (const status of ["PublisherStatusBanned", "PublisherStatusActive"]) {
        expect(bans.filter((b) => b.status === 200 && b.kind.endsWith(status)).length, `${status} set`).toBeGreaterThan(0)
      }
      expect(moderations.length).toBeGreaterThanOrEqual(20)
      expect(ofKind("ownerEdits").length).toBeGreaterThanOrEqual(20)
      const overlapping = bans.filter((b) => moderations.some((m) => m.start < b.end && b.start < m.end))
      expect(overlapping.length, "publisher status changes that ran during a node's moderation").toBeGreaterThan(0)
    }), { timeout: 120_000 })
})
