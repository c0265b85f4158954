/**
 * Trusted publishing against a model: random sequences of registering a trusted publisher (for
 * one of two nodes, one of two workflows), removing one, exchanging a new or an earlier identity
 * token of either workflow, publishing with a publish token, and banning or unbanning the
 * publisher. After each step the answer is the model's: an exchange is refused at `repository`
 * while the repository has no trusted publisher, at `workflow_ref` while none allows the
 * workflow, 403 while the publisher is banned, at `jti` for a token already exchanged, and
 * otherwise mints a token for exactly the matched nodes; a publish token works for a node while a
 * trusted publisher it was minted for is still registered there, and what it publishes names one
 * of them in its provenance.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fc from "fast-check"
import { NodeVersion } from "../../src/Domain/Node.ts"
import { PublishToken, TrustedPublisher } from "../../src/Domain/TrustedPublisher.ts"
import { decodeExact } from "../support/Catalogue.ts"
import { query } from "../support/Db.ts"
import { type Answer, expectError, expectStatus, send } from "../support/Http.ts"
import { githubClaims, OidcIssuer } from "../support/OidcIssuer.ts"
import { forAll } from "../support/Property.ts"
import { Service } from "../support/Service.ts"
import { makePublisher, publish } from "../Publishing/Flow.ts"

const audience = "model-registry"
const nodes = ["a", "b"] as const
const workflows = ["publish.yml", "release.yml"] as const
type NodeKey = typeof nodes[number]
type Workflow = typeof workflows[number]

type Step =
  | { readonly kind: "register"; readonly node: NodeKey; readonly workflow: Workflow }
  | { readonly kind: "remove"; readonly index: number }
  | { readonly kind: "exchange"; readonly workflow: Workflow; readonly earlier: number | undefined }
  | { readonly kind: "publish"; readonly token: number; readonly node: NodeKey }
  | { readonly kind: "ban"; readonly banned: boolean }

/** Picks one of what exists when the step runs (modulo their number). */
const index = fc.nat({ max: 1000 })
const pick = <A>(items: ReadonlyArray<A>, i: number): A | undefined => items.length === 0 ? undefined : items[i % items.length]
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("register" as const), node: fc.constantFrom(...nodes), workflow: fc.constantFrom(...workflows) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("remove" as const), index }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("exchange" as const), workflow: fc.constantFrom(...workflows), earlier: fc.option(index, { nil: undefined }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("publish" as const), token: index, node: fc.constantFrom(...nodes) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("ban" as const), banned: fc.boolean() }) }
)

interface Registration {
  readonly id: string
  readonly node: NodeKey
  readonly workflow: Workflow
  removed: boolean
}

interface Identity {
  readonly token: string
  readonly workflow: Workflow
  exchanged: boolean
}

interface Minted {
  readonly value: string
  /** The registrations it was minted for. */
  readonly registrations: ReadonlyArray<Registration>
}

const TestLayer = Layer.unwrap(Effect.map(OidcIssuer, (issuer) =>
  Service.layer((c) => ({
    ...c,
    auth: { ...c.auth, failureLimit: 100_000 },
    trustedPublishing: { ...c.trustedPublishing, issuers: [issuer.url], audience }
  })))).pipe(Layer.provideMerge(OidcIssuer.layer))

layer(TestLayer, { excludeTestServices: true })("trusted publishing against a model", (it) => {
  let run = 0

  it.effect("registrations, exchanges, publishes and bans answer as the model says", () =>
    forAll(
      { steps: fc.array(step, { minLength: 1, maxLength: 12 }) },
      ({ steps }) =>
        Effect.gen(function*() {
          const service = yield* Service
          const issuer = yield* OidcIssuer
          const id = `tp-model-${run++}`
          const publisher = yield* makePublisher(service, id)
          const repository = `org-${id}/repo`
          const nodeId = (node: NodeKey) => `${id}-${node}`
          const registrations: Array<Registration> = []
          const identities: Array<Identity> = []
          const minted: Array<Minted> = []
          let banned = false
          let published = 0

          const refusedAt = (answer: Answer, claim: string, what: string) => {
            expect(answer.status, what).toBe(401)
            expect(answer.body, what).toEqual({ error: "identity_token_refused", message: expect.stringMatching(new RegExp(`\\(claim: ${claim}\\)$`)) })
          }

          for (const s of steps) {
            const what = `${JSON.stringify(s)} with ${JSON.stringify({ registrations, banned, minted: minted.length })}`
            switch (s.kind) {
              case "register": {
                const answer = yield* send(service, "POST", `/publishers/${id}/nodes/${nodeId(s.node)}/trusted-publishers`, {
                  token: publisher.ownerJwt,
                  body: { issuer: issuer.url, repository_owner: `org-${id}`, repository_name: "repo", workflow: s.workflow }
                })
                if (banned) {
                  expectError(answer, 403, "publisher_banned")
                  break
                }
                const made = decodeExact(TrustedPublisher)(expectStatus(answer, 201, what).body)
                registrations.push({ id: made.id, node: s.node, workflow: s.workflow, removed: false })
                break
              }
              case "remove": {
                const target = pick(registrations, s.index)
                if (target === undefined) break
                const answer = yield* send(service, "DELETE", `/publishers/${id}/nodes/${nodeId(target.node)}/trusted-publishers/${target.id}`, {
                  token: publisher.ownerJwt
                })
                if (target.removed) {
                  expectError(answer, 404, "not_found")
                } else {
                  expectStatus(answer, 204, what)
                  target.removed = true
                }
                break
              }
              case "exchange": {
                const earlier = s.earlier === undefined ? undefined : pick(identities, s.earlier)
                const identity = earlier ?? {
                  token: yield* Effect.promise(() => issuer.sign(githubClaims(audience, { repository, workflow: s.workflow }))),
                  workflow: s.workflow,
                  exchanged: false
                }
                if (earlier === undefined) identities.push(identity)
                const answer = yield* send(service, "POST", "/trusted-publishing/exchange", { body: { token: identity.token } })
                const active = registrations.filter((r) => !r.removed)
                const matched = active.filter((r) => r.workflow === identity.workflow)
                if (active.length === 0) refusedAt(answer, "repository", what)
                else if (matched.length === 0) refusedAt(answer, "workflow_ref", what)
                else if (banned) expectError(answer, 403, "publisher_banned")
                else if (identity.exchanged) refusedAt(answer, "jti", what)
                else {
                  const token = decodeExact(PublishToken)(expectStatus(answer, 200, what).body)
                  expect(token.nodes.map((n) => n.trusted_publisher_id).sort(), what).toEqual(matched.map((r) => r.id).sort())
                  expect(new Set(token.nodes.map((n) => n.node_id)), what).toEqual(new Set(matched.map((r) => nodeId(r.node))))
                  identity.exchanged = true
                  minted.push({ value: token.token, registrations: matched })
                }
                break
              }
              case "publish": {
                const token = pick(minted, s.token)
                if (token === undefined) break
                const version = `1.0.${published++}`
                const answer = yield* publish(service, id, nodeId(s.node), version, { pat: token.value })
                const allowing = token.registrations.filter((r) => !r.removed && r.node === s.node)
                if (allowing.length === 0) {
                  expectError(answer, 401, "invalid_token")
                } else if (banned) {
                  expectError(answer, 403, "publisher_banned")
                } else {
                  const shown = decodeExact(NodeVersion)((expectStatus(answer, 201, what).body as { node_version: unknown }).node_version)
                  expect(shown.provenance, what).toMatchObject({ method: "trusted_publishing", repository, workflow: expect.any(String) })
                  const provenance = shown.provenance as { trusted_publisher_id: string; workflow: string }
                  expect(allowing.map((r) => r.id), what).toContain(provenance.trusted_publisher_id)
                  expect(provenance.workflow, what).toBe(`.github/workflows/${allowing[0]!.workflow}`)
                }
                break
              }
              case "ban": {
                yield* query(service, "UPDATE publishers SET status = $2 WHERE id = $1", [
                  id,
                  s.banned ? "PublisherStatusBanned" : "PublisherStatusActive"
                ])
                banned = s.banned
                break
              }
            }
          }
        }),
      { numRuns: 50 }
    ))
})
