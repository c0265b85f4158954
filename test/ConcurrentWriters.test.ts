/**
 * Writers of one publisher, its node and its versions released together, over real HTTP on real
 * PostgreSQL: the site admins' changes (publisher bans, node bans and fields, version moves),
 * publishing, the owners' changes and deletions, and claiming. Before the lock order
 * (Catalog/Changes.ts) a ban beside a node change deadlocked and answered 500.
 *
 * Each group of writers starts from its own publisher, node, version and unclaimed node, in a
 * random state. What must hold: no answer is 5xx, and the answers and the final state are those
 * of the writers run one after another in some order, as the model below predicts them.
 * The rows are read from the database itself, so `listed` (the column every listing filters on)
 * is checked too.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fc from "fast-check"
import type { NodeStatus, NodeVersionStatus } from "../src/Domain/Node.ts"
import type { PublisherStatus } from "../src/Domain/Publisher.ts"
import { nodeStatusMoves, nodeVersionStatusMoves } from "../src/Domain/Transitions.ts"
import { query } from "./support/Db.ts"
import { type Fake, FakeRepohost } from "./support/FakeRepohost.ts"
import { send } from "./support/Http.ts"
import { move } from "./support/Moves.ts"
import { forAll } from "./support/Property.ts"
import { type Running, Service } from "./support/Service.ts"

const webHost = "repohost.example"
const vcsToken = "vcs-admin-of-ann"
const owner = "ann"

const TestLayer = Layer.unwrap(Effect.map(FakeRepohost, (fake: Fake) =>
  Service.layer((c) => ({ ...c, repohost: { apiUrl: fake.url, timeoutMillis: 2000, webHost } })))).pipe(
    Layer.provideMerge(FakeRepohost.layer)
  )

const writers = [
  "banPublisher",
  "unbanPublisher",
  "banNode",
  "restoreNode",
  "adminDetail",
  "ownerDescribe",
  "publish",
  "deleteVersion",
  "flagVersion",
  "deleteNode",
  "claim"
] as const
type Writer = typeof writers[number]

/** What the writers can change: the group's publisher `p`, its node `n` with version 1.0.0, the unclaimed node `u`. */
interface State {
  readonly publisher: PublisherStatus
  readonly node: NodeStatus
  readonly description: string
  /** The node's `status_detail`, the site admins' field. */
  readonly detail: string
  readonly versions: Readonly<Record<string, NodeVersionStatus>>
  /** Whether `u` moved to `p`. */
  readonly claimed: boolean
}

interface Step {
  readonly writer: Writer
  /** The writer's place in its group: what it writes is its own (a version number, a description). */
  readonly index: number
}

const versionOf = (step: Step) => `2.0.${step.index}`
const descriptionOf = (step: Step) => `${step.writer} ${step.index}`

/** A writer's answer and the state after it, run alone on `s`. */
const model = (s: State, step: Step): readonly [number, State] => {
  const nodeMove = (to: NodeStatus): readonly [number, State] => {
    const m = move(nodeStatusMoves, s.node, to)
    return m === "refused" ? [409, s] : [200, { ...s, node: to }]
  }
  switch (step.writer) {
    case "banPublisher":
      return [200, { ...s, publisher: "PublisherStatusBanned" }]
    case "unbanPublisher":
      return [200, { ...s, publisher: "PublisherStatusActive" }]
    case "banNode":
      return nodeMove("NodeStatusBanned")
    case "restoreNode":
      return nodeMove("NodeStatusActive")
    case "adminDetail":
      return [200, { ...s, detail: descriptionOf(step) }]
    case "ownerDescribe":
      if (s.node === "NodeStatusDeleted") return [404, s]
      if (s.node === "NodeStatusBanned") return [403, s]
      return [200, { ...s, description: descriptionOf(step) }]
    case "publish":
      if (s.publisher === "PublisherStatusBanned") return [403, s]
      if (s.node === "NodeStatusDeleted") return [409, s]
      if (s.node === "NodeStatusBanned") return [403, s]
      return [201, { ...s, versions: { ...s.versions, [versionOf(step)]: "NodeVersionStatusPending" } }]
    case "deleteVersion": {
      const current = s.versions["1.0.0"]!
      if (s.node === "NodeStatusDeleted" || current === "NodeVersionStatusDeleted") return [404, s]
      if (move(nodeVersionStatusMoves, current, "NodeVersionStatusDeleted") === "refused") return [409, s]
      return [204, { ...s, versions: { ...s.versions, "1.0.0": "NodeVersionStatusDeleted" } }]
    }
    case "flagVersion": {
      const current = s.versions["1.0.0"]!
      if (move(nodeVersionStatusMoves, current, "NodeVersionStatusFlagged") === "refused") return [409, s]
      return [200, { ...s, versions: { ...s.versions, "1.0.0": "NodeVersionStatusFlagged" } }]
    }
    case "deleteNode":
      if (s.node === "NodeStatusDeleted") return [404, s]
      if (s.node === "NodeStatusBanned") return [409, s]
      return [204, { ...s, node: "NodeStatusDeleted" }]
    case "claim":
      return s.claimed ? [409, s] : [200, { ...s, claimed: true }]
  }
}

/** The outcome of `steps` run one after another in this order: each one's answer, and the final state. */
const serially = (initial: State, steps: ReadonlyArray<Step>) => {
  const answers: Array<number> = Array(steps.length)
  let state = initial
  for (const step of steps) {
    const [status, next] = model(state, step)
    answers[step.index] = status
    state = next
  }
  return { answers, state }
}

const orders = <A>(items: ReadonlyArray<A>): Array<Array<A>> =>
  items.length <= 1 ? [[...items]] : items.flatMap((item, i) => orders([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]))

/** What the database holds after a group, in the model's terms, with the `listed` column of both nodes. */
interface Observed {
  readonly answers: ReadonlyArray<number>
  readonly state: State
  readonly listed: { readonly n: boolean; readonly u: boolean }
}

const listedIn = (s: State) => ({
  n: s.node === "NodeStatusActive" && s.publisher === "PublisherStatusActive",
  // `u` stays active; under `unclaimed` (never banned) until it is claimed
  u: !s.claimed || s.publisher === "PublisherStatusActive"
})

const ids = (group: number) => ({ p: `cw-p${group}`, n: `cw-n${group}`, u: `cw-u${group}` })

/** A state as text that does not depend on the order its versions were listed in. */
const canonical = (state: State): string =>
  JSON.stringify({ ...state, versions: Object.fromEntries(Object.entries(state.versions).sort(([a], [b]) => a.localeCompare(b))) })

/** Publishers, nodes and versions of `groups` (numbered from `first`) in their initial states, in bulk. */
const prepare = (service: Running, first: number, initials: ReadonlyArray<State>) =>
  Effect.gen(function*() {
    const all = initials.map((s, i) => ({ ...ids(first + i), s }))
    yield* service.writes.upsertPublishers(all.map(({ p, s }) => ({ id: p, status: s.publisher })))
    yield* service.writes.insertNodes(all.flatMap(({ n, p, s, u }) => [
      { id: n, publisher_id: p, status: s.node, description: s.description, status_detail: s.detail },
      { id: u, publisher_id: "unclaimed", repository: `https://${webHost}/ann/${u}` }
    ]))
    yield* service.writes.insertVersions(all.map(({ n, s }) => ({ node_id: n, version: "1.0.0", status: s.versions["1.0.0"]! })))
    yield* query(
      service,
      `WITH u AS (INSERT INTO users (id) VALUES ($1) ON CONFLICT (id) DO NOTHING)
       INSERT INTO publisher_members (publisher_id, user_id, role) SELECT p, $1, 'owner' FROM unnest($2::text[]) AS p`,
      [owner, all.map(({ p }) => p)]
    )
  })

/** The group's state as stored. */
const observe = (service: Running, group: number) =>
  Effect.gen(function*() {
    const { n, p, u } = ids(group)
    const [row] = yield* query<
      { publisher: PublisherStatus; node: NodeStatus; description: string; detail: string; n_listed: boolean; u_owner: string; u_listed: boolean }
    >(
      service,
      `SELECT p.status AS publisher, n.status AS node, n.description, n.status_detail AS detail, n.listed AS n_listed,
              u.publisher_id AS u_owner, u.listed AS u_listed
       FROM publishers p JOIN nodes n ON n.id = $2 JOIN nodes u ON u.id = $3 WHERE p.id = $1`,
      [p, n, u]
    )
    const versions = yield* query<{ version: string; status: NodeVersionStatus }>(
      service,
      "SELECT version, status FROM node_versions WHERE node_id = $1",
      [n]
    )
    return {
      state: {
        publisher: row!.publisher,
        node: row!.node,
        description: row!.description,
        detail: row!.detail,
        versions: Object.fromEntries(versions.map((v) => [v.version, v.status])),
        claimed: row!.u_owner === p
      },
      listed: { n: row!.n_listed, u: row!.u_listed }
    }
  })

/** The request a writer sends for group `group`. */
const request = (service: Running, tokens: { readonly admin: string; readonly owner: string }, group: number, step: Step) => {
  const { n, p, u } = ids(group)
  const admin = { token: tokens.admin }
  const asOwner = { token: tokens.owner }
  switch (step.writer) {
    case "banPublisher":
      return send(service, "PUT", `/admin/publishers/${p}`, { ...admin, body: { status: "PublisherStatusBanned" } })
    case "unbanPublisher":
      return send(service, "PUT", `/admin/publishers/${p}`, { ...admin, body: { status: "PublisherStatusActive" } })
    case "banNode":
      return send(service, "PUT", `/admin/nodes/${n}`, { ...admin, body: { status: "NodeStatusBanned" } })
    case "restoreNode":
      return send(service, "PUT", `/admin/nodes/${n}`, { ...admin, body: { status: "NodeStatusActive" } })
    case "adminDetail":
      return send(service, "PUT", `/admin/nodes/${n}`, { ...admin, body: { status_detail: descriptionOf(step) } })
    case "ownerDescribe":
      return send(service, "PUT", `/publishers/${p}/nodes/${n}`, { ...asOwner, body: { description: descriptionOf(step) } })
    case "publish":
      return send(service, "POST", `/publishers/${p}/nodes/${n}/versions`, {
        ...asOwner,
        body: { node_version: { version: versionOf(step) } }
      })
    case "deleteVersion":
      return send(service, "DELETE", `/publishers/${p}/nodes/${n}/versions/1.0.0`, asOwner)
    case "flagVersion":
      return send(service, "PUT", `/admin/nodes/${n}/versions/1.0.0`, { ...admin, body: { status: "NodeVersionStatusFlagged" } })
    case "deleteNode":
      return send(service, "DELETE", `/publishers/${p}/nodes/${n}`, asOwner)
    case "claim":
      return send(service, "POST", `/publishers/${p}/nodes/${u}/claim-my-node`, { ...asOwner, body: { VCS_TOKEN: vcsToken } })
  }
}

const publisherStates: ReadonlyArray<PublisherStatus> = ["PublisherStatusActive", "PublisherStatusBanned"]
const nodeStates: ReadonlyArray<NodeStatus> = ["NodeStatusActive", "NodeStatusBanned", "NodeStatusDeleted"]
const versionStates: ReadonlyArray<NodeVersionStatus> = [
  "NodeVersionStatusPending",
  "NodeVersionStatusActive",
  "NodeVersionStatusFlagged",
  "NodeVersionStatusBanned",
  "NodeVersionStatusDeleted"
]

const initialState: fc.Arbitrary<State> = fc.record({
  publisher: fc.constantFrom(...publisherStates),
  node: fc.constantFrom(...nodeStates),
  description: fc.constant("initial"),
  detail: fc.constant("initial"),
  versions: fc.constantFrom(...versionStates).map((v) => ({ "1.0.0": v })),
  claimed: fc.constant(false)
})

layer(TestLayer, { excludeTestServices: true })("concurrent writers of one publisher", (it) => {
  const tokens = { admin: "", owner: "" }
  let nextGroup = 0

  it.effect("setup: a site admin, an owner, and the repository host's answer for the claims", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeRepohost
      fake.behave(vcsToken, { kind: "user", login: "ann-on-host", admin: ["ann/*"] })
      tokens.admin = yield* Effect.promise(() => service.token({ sub: "root", admin: true }))
      tokens.owner = yield* Effect.promise(() => service.token({ sub: owner }))
    }))

  /**
   * Runs each group of writers at once on its own publisher, `parallel` groups at a time; checks
   * every answer and final state against the serial orders of its writers.
   */
  const runGroups = (groups: ReadonlyArray<{ readonly initial: State; readonly writers: ReadonlyArray<Writer> }>, parallel: number) =>
    Effect.gen(function*() {
      const service = yield* Service
      const first = nextGroup
      nextGroup += groups.length
      yield* prepare(service, first, groups.map((g) => g.initial))
      yield* Effect.forEach(groups, (group, i) =>
        Effect.gen(function*() {
          const steps = group.writers.map((writer, index) => ({ writer, index }))
          const answers = yield* Effect.all(steps.map((step) => request(service, tokens, first + i, step)), { concurrency: "unbounded" })
          const what = `${JSON.stringify(group)} answered ${answers.map((a) => `${a.status} ${a.text.slice(0, 120)}`).join(" | ")}`
          expect(answers.filter((a) => a.status >= 500), what).toEqual([])
          const stored = yield* observe(service, first + i)
          const observed: Observed = { answers: answers.map((a) => a.status), ...stored }
          const serial = orders(steps).map((order) => serially(group.initial, order))
          const matches = serial.some((s) =>
            JSON.stringify(s.answers) === JSON.stringify(observed.answers) &&
            canonical(s.state) === canonical(observed.state) &&
            JSON.stringify(listedIn(s.state)) === JSON.stringify(observed.listed)
          )
          expect(matches, `${what}\nobserved ${JSON.stringify(observed)}\nserial outcomes ${JSON.stringify(serial)}`).toBe(true)
        }), { concurrency: parallel, discard: true })
    })

  it.effect("every pair of writers, from random states, ends as one of its serial orders, never 5xx", () =>
    Effect.gen(function*() {
      const pairs = writers.flatMap((a, i) => writers.slice(i).map((b) => [a, b] as const))
      const rounds = 3
      const initials = fc.sample(initialState, { numRuns: pairs.length * rounds, seed: 22 })
      const groups = initials.map((initial, k) => ({ initial, writers: pairs[k % pairs.length]! }))
      for (let start = 0; start < groups.length; start += 66) yield* runGroups(groups.slice(start, start + 66), 6)
    }), { timeout: 300_000 })

  it.effect(
    "groups of three to five writers end as one of their serial orders, never 5xx",
    () =>
      forAll(
        {
          groups: fc.array(
            fc.record({ initial: initialState, writers: fc.array(fc.constantFrom(...writers), { minLength: 3, maxLength: 5 }) }),
            { minLength: 6, maxLength: 6 }
          )
        },
        ({ groups }) => runGroups(groups, 6),
        { numRuns: 8 }
      ),
    300_000
  )

  it.effect("six bans and six node changes at once on a publisher of 34 nodes: no 5xx, every listing right", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const publisher = "cw-many"
      const nodeIds = Array.from({ length: 34 }, (_, i) => `cw-many-${i}`)
      yield* service.writes.upsertPublishers([{ id: publisher }])
      yield* service.writes.insertNodes(nodeIds.map((id) => ({ id, publisher_id: publisher })))
      const statusOf = (round: number, i: number): PublisherStatus => (round + i) % 2 === 0 ? "PublisherStatusBanned" : "PublisherStatusActive"
      const nodeStatusOf = (round: number, i: number): NodeStatus => (round + i) % 3 === 0 ? "NodeStatusBanned" : "NodeStatusActive"
      for (let round = 0; round < 10; round++) {
        const bans = Array.from({ length: 6 }, (_, i) =>
          send(service, "PUT", `/admin/publishers/${publisher}`, { token: tokens.admin, body: { status: statusOf(round, i) } }))
        const nodeChanges = Array.from({ length: 6 }, (_, i) =>
          send(service, "PUT", `/admin/nodes/${nodeIds[(round * 6 + i) % nodeIds.length]}`, {
            token: tokens.admin,
            body: { status: nodeStatusOf(round, i), status_detail: `round ${round}` }
          }))
        const answers = yield* Effect.all([...bans, ...nodeChanges], { concurrency: "unbounded" })
        expect(answers.map((a) => a.status), `round ${round}: ${answers.map((a) => a.text.slice(0, 100)).join(" | ")}`)
          .toEqual(Array(12).fill(200))
        const wrong = yield* query(
          service,
          `SELECT n.id FROM nodes n JOIN publishers p ON p.id = n.publisher_id
           WHERE p.id = $1 AND n.listed <> (n.status = 'NodeStatusActive' AND p.status = 'PublisherStatusActive')`,
          [publisher]
        )
        expect(wrong, `round ${round}`).toEqual([])
      }
    }), { timeout: 300_000 })
})
