/**
 * The one wrapper every write to the catalogue (nodes, versions, publishers) goes through: one
 * transaction that also notifies every instance that its cached pages are stale (PageCache.ts),
 * and this instance's own pages dropped after the commit, so that the writer's next read sees its
 * change. Beside it, the bookkeeping such writes share: which nodes are listed, and that a change
 * to a publisher's record counts as a change of its nodes.
 */
import { SqlClient, type Statement } from "effect/sql"
import { Context, Effect, Layer } from "effect"
import { LockRace, retryConflicts } from "../Db/Conflicts.ts"
import { orDieOnDatabase } from "../Db/Rows.ts"
import type { NodeStatus } from "../Domain/Node.ts"
import { catalogueChannel, PageCache } from "./PageCache.ts"
import { span } from "../Tracing.ts"

export class CatalogChanges extends Context.Service<CatalogChanges>()("CatalogChanges", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cache = yield* PageCache
    // with a payload (some listeners, PgClient.listen, drop notifications without one): this
    // instance's, so that its own listener knows it has dropped its pages already
    const notify = sql`SELECT pg_notify(${catalogueChannel}, ${cache.sender})`
    /** Whether the node `n` of publisher `p` appears in public listings. */
    const listed = sql.literal("(n.status = 'NodeStatusActive' AND p.status = 'PublisherStatusActive')")

    /**
     * Runs `effect` as one transaction that notifies every instance; one that lost to a concurrent
     * transaction runs again (`effect` must hold nothing but the transaction's work). A database
     * failure is a defect.
     */
    const change = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      retryConflicts(sql.withTransaction(Effect.tap(effect, () => notify))).pipe(
        Effect.ensuring(cache.invalidate),
        orDieOnDatabase,
        span("CatalogChanges.change")
      )

    /**
     * `change` for a write that is one UPDATE or DELETE statement (without RETURNING): the write
     * and its notification as a single statement, which commits on its own. One round trip
     * instead of a transaction's four (BEGIN, the write, the notification, COMMIT); the
     * notification is sent only when a row changed.
     */
    const changeOne = (write: Statement.Statement<unknown>) =>
      retryConflicts(sql`WITH changed AS (${write} RETURNING 1)
          SELECT pg_notify(${catalogueChannel}, ${cache.sender}) WHERE EXISTS (SELECT 1 FROM changed)`).pipe(
        Effect.ensuring(cache.invalidate),
        orDieOnDatabase,
        span("CatalogChanges.change")
      )

    /**
     * Recomputes whether the nodes `where` selects (alias `n`) appear in public listings, writing
     * only the rows whose answer changes.
     */
    const refreshListed = (where: Statement.Fragment) =>
      sql`UPDATE nodes n SET listed = ${listed} FROM publishers p
          WHERE p.id = n.publisher_id AND n.listed <> ${listed} AND ${where}`

    /**
     * The publishers' records changed in a way that may change their nodes' listing (a status, or
     * the seed's upserts): their own `updated_at` says so to `GET /nodes?timestamp=`
     * (NodePages.ts), so their nodes are not rewritten, apart from those whose listing changes.
     */
    const touchPublishers = (ids: ReadonlyArray<string>) =>
      Effect.andThen(
        sql`UPDATE publishers SET updated_at = now() WHERE id = ANY(${ids as Array<string>})`,
        refreshListed(sql`n.publisher_id = ANY(${ids as Array<string>})`)
      )

    /** Locks the publishers FOR SHARE, by id: the first locks of a write that creates or moves nodes. */
    const lockPublishers = (ids: ReadonlyArray<string>) =>
      Effect.asVoid(sql`SELECT 1 FROM publishers WHERE id = ANY(${[...ids]}) ORDER BY id FOR SHARE`)

    /**
     * Locks nodes for a write, in the lock order: their publishers FOR SHARE, then the nodes FOR
     * NO KEY UPDATE (which, unlike FOR UPDATE, lets versions and reviews be added to them), each
     * kind by id. Answers the nodes found. A node moved to another publisher between the two (a
     * claim) makes the transaction run again (LockRace).
     */
    const lockNodes = (ids: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const publishers = yield* sql<{ id: string }>`SELECT id FROM publishers
          WHERE id IN (SELECT publisher_id FROM nodes WHERE id = ANY(${[...ids]})) ORDER BY id FOR SHARE`
        const nodes = yield* sql<{ id: string; publisher_id: string; status: NodeStatus }>`
          SELECT id, publisher_id, status FROM nodes WHERE id = ANY(${[...ids]}) ORDER BY id FOR NO KEY UPDATE`
        const locked = new Set(publishers.map((p) => p.id))
        const moved = nodes.find((n) => !locked.has(n.publisher_id))
        if (moved !== undefined) return yield* new LockRace({ what: `The publisher of node '${moved.id}'` })
        return nodes
      })

    /** `lockNodes` of one node: its publisher and status, none when there is no such node. */
    const lockNode = (id: string) => Effect.map(lockNodes([id]), (nodes) => nodes[0])

    return { change, changeOne, refreshListed, touchPublishers, lockPublishers, lockNodes, lockNode }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(CatalogChanges, CatalogChanges.make)
  static readonly layer = CatalogChanges.layerWithoutDependencies.pipe(Layer.provide(PageCache.layer))
}
