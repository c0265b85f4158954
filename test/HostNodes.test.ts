/**
 * Host-node records of a node version: GET (public), POST (bulk, site admins), PUT (owners and
 * admins of the node's publisher, site admins; `policy` by site admins only). Real HTTP against a
 * real PostgreSQL; stored rows are read back with SQL to prove what was (not) written.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as fc from "fast-check"
import { HostNode, type HostNodePolicy } from "../src/Domain/HostNode.ts"
import { hostNodePolicyMoves } from "../src/Domain/Transitions.ts"
import { move } from "./support/Moves.ts"
import { seedActors, tokensFor } from "./support/Actors.ts"
import { Catalogue, compareBytes, decodeExact } from "./support/Catalogue.ts"
import { clientFor } from "./support/Client.ts"
import { countRows, query, queryOne } from "./support/Db.ts"
import { expectBadRequest, expectError, expectStatus, send } from "./support/Http.ts"
import { forAll } from "./support/Property.ts"
import { type Running, Service } from "./support/Service.ts"

// --- helpers -----------------------------------------------------------------------------------

/** Exactly the wire format: no unknown fields, no nulls. */
const decodeRecords = decodeExact(Schema.Array(HostNode))
const decodeRecord = decodeExact(HostNode)

const hostNodesPath = (nodeId: string, version: string) => `/nodes/${nodeId}/versions/${version}/host-nodes`
const recordPath = (nodeId: string, version: string, name: string) =>
  `${hostNodesPath(nodeId, version)}/${encodeURIComponent(name)}`

/** The stored records of a version, by name, as rows. */
const storedRecords = (service: Running, nodeId: string, version: string) =>
  query<{ host_node_name: string; policy: string; description: string | null }>(
    service,
    `SELECT h.host_node_name, h.policy, h.description FROM host_nodes h
     JOIN node_versions v ON v.id = h.version_id WHERE v.node_id = $1 AND v.version = $2
     ORDER BY h.host_node_name COLLATE "C"`,
    [nodeId, version]
  )

const storedRecord = (service: Running, nodeId: string, version: string, name: string) =>
  queryOne<{ policy: string; description: string | null }>(
    service,
    `SELECT h.policy, h.description FROM host_nodes h JOIN node_versions v ON v.id = h.version_id
     WHERE v.node_id = $1 AND v.version = $2 AND h.host_node_name = $3`,
    [nodeId, version, name]
  )

const countRecords = (service: Running) => countRows(service, "host_nodes")

/** PUT fields of a record as the token's holder: 200 with the whole record, decoded. */
const putRecord = (service: Running, path: string, token: string | undefined, body: unknown, what: string) =>
  Effect.map(send(service, "PUT", path, { token, body }), (answer) => decodeRecord(expectStatus(answer, 200, what).body))

// --- the catalogue -------------------------------------------------------------------------------

type Actor = "none" | "invalid" | "stranger" | "otherOwner" | "member" | "admin" | "owner" | "siteAdmin"
const tokens: Record<Actor, string | undefined> = {
  none: undefined,
  invalid: "not-a-jwt",
  ...tokensFor("stranger", "otherOwner", "member", "admin", "owner", "siteAdmin")
}

/** The typed client calling as `actor`. */
const clientOf = (service: Running, actor: Actor) => {
  const token = tokens[actor]
  return clientFor(service, token === undefined ? undefined : { bearer: token })
}

const cat = new Catalogue()

layer(Service.layer(), { excludeTestServices: true })("host-node records", (it) => {
  it.effect("seeds publishers, nodes, versions and members", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* cat.add(service, {
        publishers: [{ id: "acme" }, { id: "other" }, { id: "shut", status: "PublisherStatusBanned" }],
        nodes: [
          { id: "acme-node", publisher_id: "acme" },
          { id: "acme-banned", publisher_id: "acme", status: "NodeStatusBanned" },
          { id: "acme-deleted", publisher_id: "acme", status: "NodeStatusDeleted" },
          { id: "shut-node", publisher_id: "shut" }
        ],
        versions: [
          { node_id: "acme-node", version: "1.0.0", status: "NodeVersionStatusActive" },
          { node_id: "acme-node", version: "1.1.0-beta.1", status: "NodeVersionStatusPending" },
          { node_id: "acme-node", version: "0.9.0", status: "NodeVersionStatusDeleted" },
          { node_id: "acme-node", version: "2.0.0", status: "NodeVersionStatusActive" },
          { node_id: "acme-banned", version: "1.0.0", status: "NodeVersionStatusActive" },
          { node_id: "acme-deleted", version: "1.0.0", status: "NodeVersionStatusActive" },
          { node_id: "shut-node", version: "1.0.0", status: "NodeVersionStatusActive" }
        ]
      })
      yield* seedActors(service, tokens)
    }))

  // --- POST ------------------------------------------------------------------------------------

  it.effect("POST: a site admin records a version's host-nodes; 201 with the records by name, absent fields omitted", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const body = [
        { host_node_name: "Zeta", category: "image", output_is_list: [false, true], return_types: "IMAGE,MASK" },
        {
          host_node_name: "Alpha",
          category: "loaders",
          deprecated: false,
          description: "Loads things",
          experimental: true,
          function: "load",
          input_types: "{\"required\":{}}",
          output_is_list: [],
          policy: "HostNodePolicyLocalOnly",
          return_names: "MODEL",
          return_types: "MODEL"
        },
        { host_node_name: "beta" },
        { host_node_name: "Émoji ✨ node" }
      ]
      const answer = expectStatus(
        yield* send(service, "POST", hostNodesPath("acme-node", "1.0.0"), { token: tokens.siteAdmin, body }),
        201,
        "POST"
      )
      expect(answer.headers.get("content-type")).toMatch(/^application\/json/)
      const created = decodeRecords(answer.body)
      const byName = [...body].sort((a, b) => compareBytes(a.host_node_name, b.host_node_name))
      expect(created).toEqual(byName.map((r) => ({ policy: "HostNodePolicyActive", ...r })))
      // the record with only a name has nothing else but its default policy
      expect(created.find((r) => r.host_node_name === "beta")).toEqual({ host_node_name: "beta", policy: "HostNodePolicyActive" })

      const listed = expectStatus(yield* send(service, "GET", hostNodesPath("acme-node", "1.0.0")), 200, "GET")
      expect(decodeRecords(listed.body)).toEqual(created)
      // other versions keep their own (empty) lists
      const other = expectStatus(yield* send(service, "GET", hostNodesPath("acme-node", "2.0.0")), 200, "GET other version")
      expect(other.body).toEqual([])
    }))

  it.effect("POST: a name the version already has, or a name twice in the body, is 409 and nothing is stored", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const path = hostNodesPath("acme-node", "1.0.0")
      const before = yield* storedRecords(service, "acme-node", "1.0.0")
      // a name the version has (Alpha), then a name twice in the body (dup): the message names it
      for (const [names, named] of [[["new-one", "Alpha", "new-two"], "Alpha"], [["dup", "fresh", "dup"], "dup"]] as const) {
        const body = names.map((host_node_name) => ({ host_node_name }))
        const e = expectError(yield* send(service, "POST", path, { token: tokens.siteAdmin, body }), 409, "conflict")
        expect(e.message).toContain(named)
      }
      expect(yield* storedRecords(service, "acme-node", "1.0.0")).toEqual(before)

      // an existing name in a later batch of a large request rolls back the earlier batches too
      const count = yield* countRecords(service)
      const large = Array.from({ length: 2500 }, (_, i) => ({ host_node_name: `bulk-${String(i).padStart(4, "0")}` }))
      large.push({ host_node_name: "Zeta" })
      expectError(yield* send(service, "POST", path, { token: tokens.siteAdmin, body: large }), 409, "conflict")
      expect(yield* countRecords(service)).toBe(count)
    }))

  it.effect("POST: 5000 records in one request are stored, all of them", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const siteAdmin = yield* clientOf(service, "siteAdmin")
      const payload = Array.from({ length: 5000 }, (_, i) => ({
        host_node_name: `n${String(4999 - i).padStart(4, "0")}`,
        output_is_list: [i % 2 === 0]
      }))
      const created = yield* siteAdmin.api.hostNodes.createHostNodes({ params: { nodeId: "acme-node", version: "2.0.0" }, payload })
      expect(created).toHaveLength(5000)
      expect(created[0]!.host_node_name).toBe("n0000")
      expect(created[4999]!.host_node_name).toBe("n4999")
      expect(yield* storedRecords(service, "acme-node", "2.0.0")).toHaveLength(5000)
    }))

  it.effect("POST: unknown or deleted nodes and versions are 404", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const body = [{ host_node_name: "x" }]
      for (const [nodeId, version] of [
        ["nobody", "1.0.0"],
        ["acme-node", "9.9.9"],
        ["acme-node", "0.9.0"],
        ["acme-deleted", "1.0.0"]
      ] as const) {
        expectError(yield* send(service, "POST", hostNodesPath(nodeId, version), { token: tokens.siteAdmin, body }), 404, "not_found")
      }
      // a banned node's versions can still be recorded by the extraction job
      expectStatus(
        yield* send(service, "POST", hostNodesPath("acme-banned", "1.0.0"), { token: tokens.siteAdmin, body }),
        201,
        "POST on a banned node"
      )
    }))

  it.effect("POST: site admins only (401 without a valid token, 403 for every other role); nothing stored", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const expected: Record<Actor, number> = {
        none: 401,
        invalid: 401,
        stranger: 403,
        otherOwner: 403,
        member: 403,
        admin: 403,
        owner: 403,
        siteAdmin: 201
      }
      const count = yield* countRecords(service)
      const outcome: Record<string, number> = {}
      for (const actor of Object.keys(expected) as Array<Actor>) {
        const answer = yield* send(service, "POST", hostNodesPath("acme-node", "1.1.0-beta.1"), {
          token: tokens[actor],
          body: [{ host_node_name: `by-${actor}` }]
        })
        outcome[actor] = answer.status
        if (answer.status !== 201) expectError(answer, answer.status)
      }
      expect(outcome).toEqual(expected)
      expect(yield* countRecords(service)).toBe(count + 1)
      expect((yield* storedRecords(service, "acme-node", "1.1.0-beta.1")).map((r) => r.host_node_name)).toEqual(["by-siteAdmin"])
      // a stranger asking about a node that does not exist learns nothing more than "forbidden"
      expectError(
        yield* send(service, "POST", hostNodesPath("nobody", "1.0.0"), { token: tokens.stranger, body: [{ host_node_name: "x" }] }),
        403,
        "forbidden"
      )
    }))

  it.effect("POST: bad bodies are 400 naming the field, and nothing is stored", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const path = hostNodesPath("acme-node", "2.0.0")
      const count = yield* countRecords(service)
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [[{ category: "no name" }], "host_node_name"],
        [[{ host_node_name: "ok" }, { description: "second has no name" }], "host_node_name"],
        [[{ host_node_name: "" }], "host_node_name"],
        [[{ host_node_name: 42 }], "host_node_name"],
        [[{ host_node_name: "x".repeat(201) }], "host_node_name"],
        [[{ host_node_name: "t", deprecated: "yes" }], "deprecated"],
        [[{ host_node_name: "t", experimental: 1 }], "experimental"],
        [[{ host_node_name: "t", output_is_list: [true, "false"] }], "output_is_list"],
        [[{ host_node_name: "t", output_is_list: true }], "output_is_list"],
        [[{ host_node_name: "t", policy: "Nope" }], "policy"],
        [[{ host_node_name: "t", policy: "hostnodepolicyactive" }], "policy"],
        [[{ host_node_name: "t", description: "d".repeat(5001) }], "description"],
        [[{ host_node_name: "t", category: "c".repeat(201) }], "category"],
        [[{ host_node_name: "t", input_types: "i".repeat(20_001) }], "input_types"],
        [[{ host_node_name: "t", return_types: null }], "return_types"],
        [[null], "0"]
      ]
      for (const [body, field] of cases) {
        expectBadRequest(yield* send(service, "POST", path, { token: tokens.siteAdmin, body }), field)
      }
      // the whole body is wrong: the message says what was expected
      for (const body of [{ host_node_name: "not an array" }, "text", 7]) {
        const e = expectError(yield* send(service, "POST", path, { token: tokens.siteAdmin, body }), 400, "bad_request")
        expect(e.message).toMatch(/array|ReadonlyArray/i)
      }
      const tooMany = Array.from({ length: 5001 }, (_, i) => ({ host_node_name: `many-${i}` }))
      const e = expectError(yield* send(service, "POST", path, { token: tokens.siteAdmin, body: tooMany }), 400, "bad_request")
      expect(e.message).toContain("5000")
      for (const raw of ["[{\"host_node_name\": \"x\"", "not json", "", "[{'host_node_name': 'x'}]"]) {
        expectError(yield* send(service, "POST", path, { token: tokens.siteAdmin, raw }), 400, "bad_request")
      }
      expect(yield* countRecords(service)).toBe(count)
    }))

  // --- GET -------------------------------------------------------------------------------------

  it.effect("GET: public; unknown or deleted nodes and versions 404, banned nodes and publishers 403 node_banned", () =>
    Effect.gen(function*() {
      const service = yield* Service
      // anyone: no token, any token
      for (const actor of ["none", "stranger", "siteAdmin"] as const) {
        const client = yield* clientOf(service, actor)
        const records = yield* client.api.publicHostNodes.listHostNodes({ params: { nodeId: "acme-node", version: "1.0.0" } })
        expect(records.map((r) => r.host_node_name)).toEqual(["Alpha", "Zeta", "beta", "Émoji ✨ node"])
      }
      // a pending version has records too
      expect((yield* send(service, "GET", hostNodesPath("acme-node", "1.1.0-beta.1"))).status).toBe(200)
      for (const [nodeId, version] of [
        ["nobody", "1.0.0"],
        ["acme-node", "9.9.9"],
        ["acme-node", "0.9.0"],
        ["acme-node", "not-a-version"],
        ["acme-deleted", "1.0.0"],
        ["acme-deleted", "9.9.9"]
      ] as const) {
        expectError(yield* send(service, "GET", hostNodesPath(nodeId, version)), 404, "not_found")
      }
      for (const [nodeId, version] of [["acme-banned", "1.0.0"], ["acme-banned", "9.9.9"], ["shut-node", "1.0.0"]] as const) {
        for (const token of [undefined, tokens.siteAdmin]) {
          expectError(yield* send(service, "GET", hostNodesPath(nodeId, version), { token }), 403, "node_banned")
        }
      }
    }))

  // --- PUT -------------------------------------------------------------------------------------

  it.effect("PUT: a partial update changes only the fields sent and answers the whole record", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const owner = yield* clientOf(service, "owner")
      const admin = yield* clientOf(service, "admin")
      const version = { nodeId: "acme-node", version: "1.0.0" }
      const path = recordPath("acme-node", "1.0.0", "Alpha")
      const updated = yield* owner.api.hostNodes.updateHostNode({
        params: { ...version, hostNodeName: "Alpha" },
        payload: { description: "Loads more things", deprecated: true, output_is_list: [true, true] }
      })
      const expected = {
        host_node_name: "Alpha",
        category: "loaders",
        deprecated: true,
        description: "Loads more things",
        experimental: true,
        function: "load",
        input_types: "{\"required\":{}}",
        output_is_list: [true, true],
        policy: "HostNodePolicyLocalOnly",
        return_names: "MODEL",
        return_types: "MODEL"
      }
      expect(updated).toEqual(expected)
      const listed = yield* owner.api.publicHostNodes.listHostNodes({ params: version })
      expect(listed.find((r) => r.host_node_name === "Alpha")).toEqual(expected)

      // the name is the path's: one in the body renames nothing
      expect(yield* putRecord(service, path, tokens.owner, { host_node_name: "Renamed" }, "PUT with a name")).toEqual(expected)
      // an empty body changes nothing and answers the record
      expect(yield* admin.api.hostNodes.updateHostNode({ params: { ...version, hostNodeName: "Alpha" }, payload: {} })).toEqual(expected)
      // a name with characters that need escaping in a URL
      const emoji = yield* admin.api.hostNodes.updateHostNode({
        params: { ...version, hostNodeName: "Émoji ✨ node" },
        payload: { category: "fun" }
      })
      expect(emoji).toEqual({ host_node_name: "Émoji ✨ node", category: "fun", policy: "HostNodePolicyActive" })
    }))

  it.effect("PUT: who may (401, 403 for strangers, other publishers and members; 200 for admin, owner, site admin)", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const path = recordPath("acme-node", "1.0.0", "Zeta")
      const expected: Record<Actor, number> = {
        none: 401,
        invalid: 401,
        stranger: 403,
        otherOwner: 403,
        member: 403,
        admin: 200,
        owner: 200,
        siteAdmin: 200
      }
      const outcome: Record<string, number> = {}
      let description = (yield* storedRecord(service, "acme-node", "1.0.0", "Zeta"))?.description
      for (const actor of Object.keys(expected) as Array<Actor>) {
        const answer = yield* send(service, "PUT", path, { token: tokens[actor], body: { description: `by ${actor}` } })
        outcome[actor] = answer.status
        if (answer.status === 200) {
          expect(decodeRecord(answer.body).description).toBe(`by ${actor}`)
          description = `by ${actor}`
        } else {
          expectError(answer, answer.status, answer.status === 401 ? "unauthorized" : "forbidden")
        }
        expect((yield* storedRecord(service, "acme-node", "1.0.0", "Zeta"))?.description, actor).toBe(description)
      }
      expect(outcome).toEqual(expected)
    }))

  it.effect("PUT: policy is for site admins only; owners and admins get 403 and nothing changes", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const path = recordPath("acme-node", "1.0.0", "beta")
      const before = yield* storedRecords(service, "acme-node", "1.0.0")
      for (const actor of ["owner", "admin", "member", "stranger"] as const) {
        const e = expectError(
          yield* send(service, "PUT", path, {
            token: tokens[actor],
            body: { policy: "HostNodePolicyBanned", description: "sneaked in" }
          }),
          403,
          "forbidden"
        )
        if (actor === "owner" || actor === "admin") expect(e.message).toContain("policy")
        // asking for the policy the record already has is still the site admins' business
        expectError(yield* send(service, "PUT", path, { token: tokens[actor], body: { policy: "HostNodePolicyActive" } }), 403, "forbidden")
      }
      expect(yield* storedRecords(service, "acme-node", "1.0.0")).toEqual(before)
      const banned = yield* putRecord(service, path, tokens.siteAdmin, { policy: "HostNodePolicyBanned", description: "banned" }, "site admin PUT policy")
      expect(banned).toEqual({ host_node_name: "beta", description: "banned", policy: "HostNodePolicyBanned" })
    }))

  it.effect("PUT: an absent record, version or node is 404", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const path of [
        recordPath("acme-node", "1.0.0", "no-such-record"),
        recordPath("acme-node", "2.0.0", "Alpha"),
        recordPath("acme-node", "9.9.9", "Alpha"),
        recordPath("acme-node", "0.9.0", "Alpha"),
        recordPath("acme-deleted", "1.0.0", "Alpha"),
        recordPath("nobody", "1.0.0", "Alpha")
      ]) {
        for (const token of [tokens.owner, tokens.siteAdmin]) {
          expectError(yield* send(service, "PUT", path, { token, body: { description: "x" } }), 404, "not_found")
        }
      }
      // names are exact: case matters
      expectError(
        yield* send(service, "PUT", recordPath("acme-node", "1.0.0", "alpha"), { token: tokens.siteAdmin, body: {} }),
        404,
        "not_found"
      )
    }))

  it.effect("PUT: bad bodies are 400 naming the field, and nothing changes", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const path = recordPath("acme-node", "1.0.0", "Alpha")
      const before = yield* storedRecords(service, "acme-node", "1.0.0")
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{ policy: "Nope" }, "policy"],
        [{ policy: 1 }, "policy"],
        [{ deprecated: "true" }, "deprecated"],
        [{ output_is_list: [1] }, "output_is_list"],
        [{ output_is_list: Array.from({ length: 201 }, () => true) }, "output_is_list"],
        [{ description: "d".repeat(5001) }, "description"],
        [{ function: ["f"] }, "function"],
        [{ category: null }, "category"]
      ]
      for (const [body, field] of cases) {
        for (const token of [tokens.owner, tokens.siteAdmin]) {
          expectBadRequest(yield* send(service, "PUT", path, { token, body }), field)
        }
      }
      for (const body of [[{ description: "an array" }], "text", null]) {
        expectError(yield* send(service, "PUT", path, { token: tokens.siteAdmin, body }), 400, "bad_request")
      }
      for (const raw of ["{\"description\": ", "{description: 'x'}"]) {
        expectError(yield* send(service, "PUT", path, { token: tokens.siteAdmin, raw }), 400, "bad_request")
      }
      expect(yield* storedRecords(service, "acme-node", "1.0.0")).toEqual(before)
    }))

  // --- the policy machine ------------------------------------------------------------------------

  const policies: ReadonlyArray<HostNodePolicy> = ["HostNodePolicyActive", "HostNodePolicyBanned", "HostNodePolicyLocalOnly"]
  const actors = ["siteAdmin", "owner", "admin", "member", "stranger"] as const
  let run = 0

  it.effect(
    "policy: random moves by random actors follow the state machine; refused moves change nothing",
    () =>
      forAll(
        {
          initial: fc.constantFrom(...policies),
          steps: fc.array(
            fc.record({
              actor: fc.constantFrom(...actors),
              policy: fc.constantFrom(...policies),
              description: fc.option(fc.string({ maxLength: 20 }), { nil: undefined })
            }),
            { minLength: 1, maxLength: 12 }
          )
        },
        ({ initial, steps }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const name = `prop-${run++}`
            expectStatus(
              yield* send(service, "POST", hostNodesPath("acme-node", "1.1.0-beta.1"), {
                token: tokens.siteAdmin,
                body: [{ host_node_name: name, policy: initial, description: "initial" }]
              }),
              201,
              "POST"
            )
            const model = { policy: initial, description: "initial" }
            for (const step of steps) {
              const answer = yield* send(service, "PUT", recordPath("acme-node", "1.1.0-beta.1", name), {
                token: tokens[step.actor],
                body: { policy: step.policy, ...(step.description === undefined ? {} : { description: step.description }) }
              })
              const verdict = move(hostNodePolicyMoves, model.policy, step.policy)
              if (step.actor !== "siteAdmin") {
                expectError(answer, 403, "forbidden")
              } else if (verdict === "refused") {
                expectError(answer, 409, "conflict")
              } else {
                expectStatus(answer, 200, `${step.actor} ${model.policy} -> ${step.policy}`)
                model.policy = step.policy
                if (step.description !== undefined) model.description = step.description
                expect(decodeRecord(answer.body)).toMatchObject({ host_node_name: name, ...model })
              }
              expect(yield* storedRecord(service, "acme-node", "1.1.0-beta.1", name)).toEqual(model)
            }
          }),
        { numRuns: 20 }
      ),
    120_000
  )
})
