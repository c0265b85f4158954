/**
 * Reviews: POST /nodes/{nodeId}/reviews?star=1..5 over real HTTP on real PostgreSQL.
 *
 * `rating` is compared exactly, with `toBe`, never with a tolerance: the stars are integers, so
 * their sum and count are exact doubles, and PostgreSQL's float8 division and JavaScript's `/`
 * are both IEEE 754 division, correctly rounded. PostgreSQL prints a float8 in its shortest
 * round-trip form, so the JSON carries that same double. A mean that differs by one unit in the
 * last place is a different computation (or a lost star), not noise.
 *
 * The clients that send this request: registry-web (`src/api/generated.ts`, `postNodeReview`,
 * bearer token from `pages/_app.tsx`) and ComfyUI_frontend (`src/services/comfyRegistryService.ts`,
 * `postPackReview`).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { Node } from "../src/Domain/Node.ts"
import { decodeExact, getPage } from "./support/Catalogue.ts"
import { bearerClient } from "./support/Client.ts"
import { query } from "./support/Db.ts"
import { cacheOf, eventually } from "./support/Eventually.ts"
import { expectBadRequest, expectError, expectStatus, send, sendText } from "./support/Http.ts"
import { forAll } from "./support/Property.ts"
import { type Running, Service, ServicePair } from "./support/Service.ts"

const decodeNode = decodeExact(Node)

/** Tokens of the reviewers, minted once per user. */
const tokens = new Map<string, Promise<string>>()
const tokenOf = (service: Running, user: string) =>
  Effect.promise(() => {
    const known = tokens.get(user) ?? service.token({ sub: user })
    tokens.set(user, known)
    return known
  })

/** The user's review through the typed client; answers the node. */
const review = (service: Running, user: string, nodeId: string, star: 1 | 2 | 3 | 4 | 5) =>
  Effect.gen(function*() {
    const client = yield* bearerClient(service, yield* tokenOf(service, user))
    return yield* client.api.reviews.postNodeReview({ params: { nodeId }, query: { star } })
  }).pipe(Effect.orDie)

/** The node as GET /nodes/{nodeId} answers it. */
const getNode = (service: Running, nodeId: string) =>
  Effect.gen(function*() {
    const client = yield* bearerClient(service, yield* tokenOf(service, "reader"))
    return yield* client.api.catalog.getNode({ params: { nodeId }, query: {} })
  }).pipe(Effect.orDie)

/** A raw POST of a review with this query string. */
const postRaw = (service: Running, user: string, nodeId: string, queryString: string) =>
  Effect.flatMap(tokenOf(service, user), (token) => send(service, "POST", `/nodes/${nodeId}/reviews${queryString}`, { token }))

/** The mean of the stars, as the model computes it: undefined when there are none. */
const meanOf = (stars: Iterable<number>) => {
  const all = [...stars]
  return all.length === 0 ? undefined : all.reduce((a, b) => a + b, 0) / all.length
}

/** The stored stars of a node, by user. */
const storedStars = (service: Running, nodeId: string) =>
  Effect.map(
    query<{ user_id: string; star: number }>(service, "SELECT user_id, star FROM node_reviews WHERE node_id = $1", [nodeId]),
    (rows) => new Map(rows.map((r) => [r.user_id, r.star]))
  )

/** Every column of the node but `rating`, and its versions, as stored. */
const everythingButRating = (service: Running, nodeId: string) =>
  query(
    service,
    `SELECT to_jsonb(n) - 'rating' AS node,
            (SELECT jsonb_agg(to_jsonb(v) ORDER BY v.version) FROM node_versions v WHERE v.node_id = n.id) AS versions
     FROM nodes n WHERE n.id = $1`,
    [nodeId]
  )

let nodes = 0
/** A new node of publisher `acme`, with a few fields set. */
const freshNode = (service: Running, fields: { readonly rating?: number } = {}) =>
  Effect.gen(function*() {
    const id = `reviewed-${++nodes}`
    yield* service.writes.insertNodes([{ id, publisher_id: "acme", name: `Reviewed ${nodes}`, ...fields }])
    return id
  })

const arbStar = fc.constantFrom(1, 2, 3, 4, 5) as fc.Arbitrary<1 | 2 | 3 | 4 | 5>
const reviewers = ["ria", "rob", "rex", "ray", "roz", "rue"]

layer(Service.layer(), { excludeTestServices: true })("node reviews", (it) => {
  it.effect("seeds publishers", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.upsertPublishers([{ id: "acme" }, { id: "outlaw", status: "PublisherStatusBanned" }])
    }))

  it.effect("a review answers the node with the mean of its stars; rating again replaces the star", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const nodeId = yield* freshNode(service)
      expect((yield* getNode(service, nodeId)).rating).toBeUndefined()

      const first = yield* review(service, "ria", nodeId, 4)
      expect(first.id).toBe(nodeId)
      expect(first.rating).toBe(4)
      expect((yield* review(service, "rob", nodeId, 5)).rating).toBe(4.5)
      // ria changes her mind: her 4 is replaced, not added to
      expect((yield* review(service, "ria", nodeId, 1)).rating).toBe(3)
      expect((yield* review(service, "rex", nodeId, 2)).rating).toBe(8 / 3)
      expect((yield* getNode(service, nodeId)).rating).toBe(8 / 3)
      expect(yield* storedStars(service, nodeId)).toEqual(new Map([["ria", 1], ["rob", 5], ["rex", 2]]))
    }))

  it.effect("a node nobody reviewed keeps its rating (none, or a seeded one) until its first review", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const seeded = yield* freshNode(service, { rating: 4.3 })
      const other = yield* freshNode(service)
      expect((yield* getNode(service, seeded)).rating).toBe(4.3)
      yield* review(service, "ria", other, 2)
      expect((yield* getNode(service, seeded)).rating).toBe(4.3)
      // the seeded value has no stars behind it: the first review's star is the whole mean
      expect((yield* review(service, "ria", seeded, 1)).rating).toBe(1)
    }))

  it.effect("a review changes nothing of the node but its rating, and no other node", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const nodeId = yield* freshNode(service)
      const neighbour = yield* freshNode(service, { rating: 2.5 })
      yield* service.writes.updateNode(nodeId, {
        description: "Something to keep",
        tags: ["a", "b"],
        downloads: 41,
        search_ranking: 3,
        supported_os: ["linux"]
      })
      yield* service.writes.insertVersions([{ node_id: nodeId, version: "1.0.0", status: "NodeVersionStatusActive" }])
      const before = yield* everythingButRating(service, nodeId)
      const neighbourBefore = yield* query(service, "SELECT to_jsonb(n) AS row FROM nodes n WHERE id = $1", [neighbour])
      yield* review(service, "rob", nodeId, 5)
      yield* review(service, "rob", nodeId, 3)
      yield* review(service, "roz", nodeId, 4)
      expect(yield* everythingButRating(service, nodeId)).toEqual(before)
      expect(yield* query(service, "SELECT to_jsonb(n) AS row FROM nodes n WHERE id = $1", [neighbour])).toEqual(neighbourBefore)
      expect((yield* getNode(service, nodeId)).rating).toBe(3.5)
    }))

  it.effect("deleted and unknown nodes are 404; banned ones, and a banned publisher's, 403 node_banned; nothing is recorded", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.insertNodes([
        { id: "gone", publisher_id: "acme", status: "NodeStatusDeleted", rating: 2 },
        { id: "barred", publisher_id: "acme", status: "NodeStatusBanned", rating: 2 },
        { id: "outlaws-node", publisher_id: "outlaw", rating: 2 }
      ])
      expectError(yield* postRaw(service, "ria", "gone", "?star=5"), 404, "not_found")
      expectError(yield* postRaw(service, "ria", "no-such-node", "?star=5"), 404, "not_found")
      expectError(yield* postRaw(service, "ria", "barred", "?star=5"), 403, "node_banned")
      expectError(yield* postRaw(service, "ria", "outlaws-node", "?star=5"), 403, "node_banned")
      const rows = yield* query<{ id: string; rating: number; reviews: number }>(
        service,
        `SELECT id, rating, (SELECT count(*)::int FROM node_reviews r WHERE r.node_id = n.id) AS reviews
         FROM nodes n WHERE id IN ('gone', 'barred', 'outlaws-node') ORDER BY id`
      )
      expect(rows).toEqual([
        { id: "barred", rating: 2, reviews: 0 },
        { id: "gone", rating: 2, reviews: 0 },
        { id: "outlaws-node", rating: 2, reviews: 0 }
      ])
    }))

  it.effect("without a valid bearer token: 401, nothing recorded", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const nodeId = yield* freshNode(service)
      expectError(yield* send(service, "POST", `/nodes/${nodeId}/reviews?star=5`), 401, "unauthorized")
      expectError(yield* send(service, "POST", `/nodes/${nodeId}/reviews?star=5`, { token: "not.a.jwt" }), 401, "unauthorized")
      expect((yield* storedStars(service, nodeId)).size).toBe(0)
    }))

  it.effect("no star, or star twice, is a 400 naming star", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const nodeId = yield* freshNode(service)
      expectBadRequest(yield* postRaw(service, "ria", nodeId, ""), "star")
      expectBadRequest(yield* postRaw(service, "ria", nodeId, "?stars=5"), "star")
      expectBadRequest(yield* postRaw(service, "ria", nodeId, "?star=4&star=5"), "star")
      expect((yield* storedStars(service, nodeId)).size).toBe(0)
    }))

  it.effect(
    "star: one digit from 1 to 5 is a review, any other text a 400 naming star",
    () =>
      forAll(
        {
          star: fc.oneof(
            fc.string({ maxLength: 6 }),
            fc.integer({ min: -10, max: 20 }).map(String),
            fc.double({ noNaN: false }).map(String),
            fc.constantFrom("1.0", "04", " 3", "3 ", "+3", "3e0", "0x3", "٣", "five", "")
          )
        },
        ({ star }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const nodeId = yield* freshNode(service)
            const answer = yield* postRaw(service, "ria", nodeId, `?star=${encodeURIComponent(star)}`)
            if (/^[1-5]$/.test(star)) {
              expectStatus(answer, 200, `star=${star}`)
              expect(decodeNode(answer.body).rating).toBe(Number(star))
            } else {
              expectBadRequest(answer, "star")
              expect((yield* storedStars(service, nodeId)).size).toBe(0)
            }
          }),
        { numRuns: 60 }
      ),
    120_000
  )

  it.effect(
    "concurrent reviews leave rating equal to the model's mean of each user's last star",
    () =>
      forAll(
        {
          // each batch is sent at once; a user reviews at most once per batch, so "last" is defined
          batches: fc.array(
            fc.uniqueArray(fc.record({ user: fc.constantFrom(...reviewers), star: arbStar }), {
              selector: (r) => r.user,
              minLength: 1,
              maxLength: reviewers.length
            }),
            { minLength: 1, maxLength: 5 }
          )
        },
        ({ batches }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const nodeId = yield* freshNode(service)
            const model = new Map<string, number>()
            for (const batch of batches) {
              yield* Effect.forEach(batch, ({ star, user }) => review(service, user, nodeId, star), { concurrency: "unbounded" })
              for (const { star, user } of batch) model.set(user, star)
              expect((yield* getNode(service, nodeId)).rating).toBe(meanOf(model.values()))
            }
            expect(yield* storedStars(service, nodeId)).toEqual(model)
          }),
        { numRuns: 25 }
      ),
    300_000
  )

  it.effect("one user's concurrent reviews of a node leave one star, and the rating is that star", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const nodeId = yield* freshNode(service)
      yield* review(service, "rob", nodeId, 1)
      yield* Effect.forEach([1, 2, 3, 4, 5, 5, 4, 3, 2, 1] as const, (star) => review(service, "ria", nodeId, star), {
        concurrency: "unbounded"
      })
      const stars = yield* storedStars(service, nodeId)
      expect([...stars.keys()].sort()).toEqual(["ria", "rob"])
      expect((yield* getNode(service, nodeId)).rating).toBe((stars.get("ria")! + 1) / 2)
    }))

  it.effect("GET /nodes sorted by rating follows reviews at once, through the list cache", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const [a, b, c, d] = [yield* freshNode(service), yield* freshNode(service), yield* freshNode(service), yield* freshNode(service)]
      yield* review(service, "ria", a, 5)
      yield* review(service, "rob", a, 4)
      yield* review(service, "ria", b, 3)
      yield* review(service, "ria", c, 5)
      const q = { node_id: [a, b, c, d], sort: ["rating;desc"], limit: 10 }
      const ratings = (page: { readonly nodes: ReadonlyArray<{ readonly id: string; readonly rating?: number }> }) =>
        page.nodes.map((n) => [n.id, n.rating])
      // cached after the first read
      expect(ratings(yield* getPage(service, "/nodes", q))).toEqual([[c, 5], [a, 4.5], [b, 3], [d, undefined]])
      expect(yield* cacheOf(service, `/nodes?node_id=${a}&node_id=${b}&node_id=${c}&node_id=${d}&sort=rating%3Bdesc&limit=10`)).toBe("hit")

      yield* review(service, "ria", b, 5)
      yield* review(service, "rob", b, 5)
      yield* review(service, "rex", d, 1)
      const after = yield* sendText(service, "GET", `/nodes?node_id=${a}&node_id=${b}&node_id=${c}&node_id=${d}&sort=rating%3Bdesc&limit=10`)
      expect(after.headers.get("x-cache")).toBe("miss")
      // b and c tie at 5: the id breaks it
      expect(ratings(yield* getPage(service, "/nodes", q))).toEqual([[b, 5], [c, 5], [a, 4.5], [d, 1]])
      expect(ratings(yield* getPage(service, "/nodes", { ...q, sort: ["rating"] }))).toEqual([[d, 1], [a, 4.5], [b, 5], [c, 5]])
    }))

  it.effect("registry-web (src/api/generated.ts postNodeReview): POST ?star=N, no body, bearer token: 200 and the Node", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const nodeId = yield* freshNode(service)
      const token = yield* tokenOf(service, "roz")
      const answer = yield* Effect.promise(async () => {
        const response = await service.fetch(`/nodes/${nodeId}/reviews?star=4`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}` }
        })
        return { status: response.status, contentType: response.headers.get("content-type"), body: await response.json() }
      })
      expect(answer.status).toBe(200)
      expect(answer.contentType).toMatch(/^application\/json/)
      const node = decodeNode(answer.body)
      expect(node).toMatchObject({ id: nodeId, rating: 4, publisher: { id: "acme" } })
    }))

  it.effect("ComfyUI_frontend (src/services/comfyRegistryService.ts postPackReview): JSON content type, empty body", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const nodeId = yield* freshNode(service)
      // axios.post(endpoint, null, { params: { star } }) on a client whose default header is
      // Content-Type: application/json: no body, and no Authorization header (the frontend's
      // registry client sets none), which a bearer endpoint answers 401
      const asSent = yield* send(service, "POST", `/nodes/${nodeId}/reviews?star=3`, { headers: { "content-type": "application/json" } })
      expectError(asSent, 401, "unauthorized")
      // the same request with a bearer token is a review
      const token = yield* tokenOf(service, "rue")
      const authorized = yield* send(service, "POST", `/nodes/${nodeId}/reviews?star=3`, {
        token,
        headers: { "content-type": "application/json" }
      })
      expectStatus(authorized, 200, "review with a JSON content type and no body")
      expect(decodeNode(authorized.body).rating).toBe(3)
    }))
})

layer(ServicePair.layer, { excludeTestServices: true })("node reviews across instances", (it) => {
  it.effect("a review through one instance drops the other's cached pages: its GET /nodes shows the rating", () =>
    Effect.gen(function*() {
      const { a, b } = yield* ServicePair
      const nodeId = yield* freshNode(a)
      const page = `/nodes?node_id=${nodeId}`
      const ratingOn = (service: Running) => Effect.map(getPage(service, page, {}), (p) => p.nodes[0]?.rating)
      expect(yield* ratingOn(a)).toBeUndefined()
      expect(yield* cacheOf(a, page)).toBe("hit")
      yield* review(b, "ria", nodeId, 2)
      expect((yield* eventually(ratingOn(a), (rating) => rating === 2)).value).toBe(2)
    }))
})
