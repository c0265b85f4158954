/**
 * Rendered pages of `GET /nodes`, cached in this process and correct across instances: every
 * catalogue write sends a PostgreSQL NOTIFY in its transaction (Changes.ts) and every instance
 * LISTENs and drops its pages. While the listening connection is down nothing is cached, since a
 * notification could be missed.
 *
 * The pages live in an `effect/Cache`, which also makes concurrent misses of one page share one
 * query. Its keys carry the generation (how many invalidations this process has seen): a page
 * whose query started before a change and finished after it is stored under the old generation,
 * where no request will look again.
 *
 * A cached page keeps its br and gzip forms, each compressed when an answer first asks for it,
 * so that later hits compress nothing and a form nobody asks for costs nothing
 * (Http/Coding.ts). The pages' bytes, their forms counted as they are made, are bounded
 * beside their number, the earliest filled dropped first.
 *
 * LISTEN runs on a connection of its own rather than through `PgClient.listen`: that one ignores
 * its connection's errors and end, so a lost LISTEN would go unnoticed and pages would stay stale.
 */
import { PgClient } from "@effect/sql-pg"
import { Cache, Context, Data, Deferred, Effect, Equal, Hash, Layer, Option, Schedule, Stream } from "effect"
import { createHash, randomUUID } from "node:crypto"
import { AppConfig } from "../Config.ts"
import { type NodeQuery, NodePages } from "./NodePages.ts"
import { span, traced } from "../Tracing.ts"
import { recordListCache } from "../Observability/Metrics.ts"
import { encodeForms, minCompressedBytes } from "../Http/Coding.ts"
import type { EncodedForms } from "../Http/Representation.ts"

/** The channel every catalogue write notifies. */
export const catalogueChannel = "catalogue_changed"

/** A page as sent: its JSON bytes and their ETag, and its compressed forms (made on demand) when it is cached. */
export interface RenderedPage {
  readonly body: Uint8Array
  readonly etag: string
  readonly encoded?: EncodedForms
}

/** How a page was served. */
export type ServedPage = Data.TaggedEnum<{
  /** From the cache. */
  Hit: { readonly page: RenderedPage }
  /** Computed, and cached when the cache is on. */
  Miss: { readonly page: RenderedPage }
  /** Computed because the client asked for the database's answer (`latest=true`). */
  Bypass: { readonly page: RenderedPage }
}>
export const ServedPage = Data.taggedEnum<ServedPage>()

/** The most pages kept; the least recently used go first. */
const capacity = 2000

/** The most bytes of pages kept (JSON, br and gzip together): 500-node pages fill it at about 500. */
const maxBytes = 128 * 1024 * 1024

const encoder = new TextEncoder()

/** A page of nodes as `GET /nodes` answers it. */
export const renderPage = (query: { readonly page: number; readonly limit: number }, nodes: string, total: number): RenderedPage => {
  const body = encoder.encode(
    `{"limit":${query.limit},"nodes":[${nodes}],"page":${query.page},"total":${total},"totalPages":${Math.ceil(total / query.limit)}}`
  )
  return { body, etag: `"${createHash("sha1").update(body).digest("base64url")}"` }
}

/** Two queries asking the same thing share one key. */
const canonical = (q: NodeQuery) =>
  JSON.stringify([
    q.page, q.limit, q.sort, q.supportedOs?.toLowerCase(), q.supportedAccelerator?.toLowerCase(),
    q.updatedAfter?.getTime(), q.nodeIds && [...q.nodeIds].sort(), q.hostVersionKey, q.includeBanned === true
  ])

/**
 * A page's key: the query (compared by its canonical form) under one generation. A fill runs in
 * the asking request's context (Effect 4's `Cache.get` forks the lookup from the caller), so its
 * SQL spans sit under that request's span (test/Observability/Tracing.test.ts).
 */
class PageKey implements Equal.Equal {
  constructor(
    readonly generation: number,
    readonly id: string,
    readonly query: NodeQuery
  ) {}
  [Equal.symbol](that: Equal.Equal): boolean {
    return that instanceof PageKey && that.generation === this.generation && that.id === this.id
  }
  [Hash.symbol](): number {
    return Hash.combine(Hash.number(this.generation))(Hash.string(this.id))
  }
}

/** How long an instance waits at start for its change listener before it serves with the cache off. */
const listenerStartMillis = 5_000

/** Resumes after `millis` of wall-clock time. */
const waitingAtMost = (millis: number) =>
  Effect.callback<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), millis)
    return Effect.sync(() => clearTimeout(timer))
  })

/** The connection listening for catalogue changes closed or failed. */
export class ListenerLost extends Data.TaggedError("ListenerLost")<{ readonly reason: string }> {}

/**
 * The notifications of `catalogueChannel`: `undefined` once LISTEN is in place, then each
 * notification's payload; fails when the listening connection fails or closes. Effect 4's
 * `PgClient.listen` holds one of the pool's connections for it and fails its queue with the
 * connection's error (Effect 3's ignored that, and a listener of our own on `pg` stood in).
 */
const notifications = (client: PgClient.PgClient) =>
  Stream.unwrap(Effect.map(client.listen(catalogueChannel), (queue) =>
    Stream.concat(
      Stream.make(undefined),
      Stream.map(Stream.fromQueue(queue), (notice): string | undefined => notice.payload)
    ))).pipe(
      Stream.mapError((e) => new ListenerLost({ reason: e.message })),
      // a connection that ends without an error ends the stream: to this listener that is a loss too
      (stream) => Stream.concat(stream, Stream.fail(new ListenerLost({ reason: "the connection closed" })))
    )

/** Catalogue changes as this instance hears of them (one element when listening starts, then one per change). */
export class CatalogueNotices extends Context.Service<CatalogueNotices>()("CatalogueNotices", {
  make: Effect.map(PgClient.PgClient, (client) => ({
    stream: notifications(client),
    /**
     * The payload this instance's changes carry: it drops its own pages after each commit, so
     * the echo of its own notification would only drop the pages computed since, for nothing.
     */
    sender: randomUUID() as string
  }))
}) {
  static readonly layer = Layer.effect(CatalogueNotices, CatalogueNotices.make)
}

/** How a served page counts in the list cache's metrics. */
const cacheResults = { Hit: "hit", Miss: "miss", Bypass: "bypass" } as const

export class PageCache extends Context.Service<PageCache>()("PageCache", {
  make: Effect.gen(function*() {
    const { listCacheTtlMillis } = yield* AppConfig
    const notices = yield* CatalogueNotices
    const pages = yield* NodePages
    let generation = 0
    let listening = false

    const compute = (query: NodeQuery) => Effect.map(pages.listPage(query), ({ nodes, total }) => renderPage(query, nodes, total))

    // the bytes of each key's page, in the order they were filled: a key the cache itself dropped
    // (its capacity, its TTL) stays counted until it is refilled or dropped here, erring on the
    // side of dropping early
    const filled = new Map<string, { readonly key: PageKey; readonly bytes: number }>()
    let storedBytes = 0
    const nameOf = (key: PageKey) => `${key.generation}|${key.id}`
    /** Drops the earliest filled pages until the bounds hold again, never `kept`'s. */
    const dropOverflow = (kept: string) => {
      const dropped: Array<PageKey> = []
      for (const [oldest, entry] of filled) {
        if ((storedBytes <= maxBytes && filled.size <= capacity) || oldest === kept) break
        filled.delete(oldest)
        storedBytes -= entry.bytes
        dropped.push(entry.key)
      }
      return Effect.forEach(dropped, (k) => Cache.invalidate(cache, k), { discard: true })
    }
    /** Counts a page just stored under `key`, as the newest. */
    const account = (key: PageKey, page: RenderedPage) =>
      Effect.suspend(() => {
        // a page of a generation already dropped is never looked up again
        if (key.generation !== generation) return Effect.void
        const name = nameOf(key)
        storedBytes += page.body.byteLength - (filled.get(name)?.bytes ?? 0)
        filled.delete(name)
        filled.set(name, { key, bytes: page.body.byteLength })
        return dropOverflow(name)
      })
    /** Counts a compressed form made for `key`'s page, while that page is kept. */
    const grow = (key: PageKey, bytes: number) =>
      Effect.suspend(() => {
        const name = nameOf(key)
        const entry = filled.get(name)
        if (key.generation !== generation || entry === undefined) return Effect.void
        storedBytes += bytes
        filled.set(name, { key, bytes: entry.bytes + bytes })
        return dropOverflow(name)
      })
    /** A page to store under `key`: with its compressed forms, each made when first asked for. */
    const encoded = (key: PageKey, page: RenderedPage) =>
      page.body.byteLength < minCompressedBytes
        ? Effect.succeed(page)
        : Effect.map(encodeForms(page.body, (bytes) => grow(key, bytes)), (forms): RenderedPage => ({ ...page, encoded: forms }))
    const cache: Cache.Cache<PageKey, RenderedPage> = yield* Cache.make({
      capacity,
      // a page lives LIST_CACHE_TTL inclusive: Effect 4's Cache drops an entry once `now >= expiresAt`
      timeToLive: listCacheTtlMillis + 1,
      lookup: (key: PageKey) =>
        Effect.tap(Effect.flatMap(compute(key.query), (page) => encoded(key, page)), (page) => account(key, page))
    })

    /** Drops every page; writers call it after their commit, so that their own reads see the change. */
    const invalidate = Effect.suspend(() => {
      generation++
      filled.clear()
      storedBytes = 0
      return Cache.invalidateAll(cache)
    }).pipe(span("PageCache.invalidate"))

    // a lost listener is logged when it is lost and when it is back, not at every failed attempt
    // in between (an outage of the database would repeat it every few seconds)
    let lost = false
    // the instance is built, and reports ready, once others' writes can drop its pages: a page
    // asked for before that is not kept, and its repeats would all be misses
    const listeningOnce = yield* Deferred.make<void>()
    yield* notices.stream.pipe(
      // this instance's own changes dropped its pages after their commit already
      Stream.filter((payload) => payload !== notices.sender),
      Stream.runForEach(() =>
        Effect.andThen(
          // the first element says LISTEN is in place: what changed before it is not in the cache
          Effect.suspend(() => {
            listening = true
            if (!lost) return Effect.void
            lost = false
            return Effect.logInfo("catalogue change listener: listening again; list cache on")
          }),
          // the wait at start ends after this first drop, so that no page asked for is dropped by it
          Effect.andThen(invalidate, Deferred.succeed(listeningOnce, undefined))
        )
      ),
      Effect.tapError((e) =>
        Effect.andThen(
          // a refused LISTEN ends the wait at start too: the instance serves with the cache off
          Effect.andThen(invalidate, Deferred.succeed(listeningOnce, undefined)),
          Effect.suspend(() => {
            listening = false
            if (lost) return Effect.logDebug(`catalogue change listener: still reconnecting (${e.reason})`)
            lost = true
            return Effect.logWarning(`catalogue change listener: ${e.reason}; list cache off until it reconnects`)
          })
        )
      ),
      Effect.retry(Schedule.min([Schedule.exponential("100 millis"), Schedule.spaced("5 seconds")])),
      Effect.forkScoped
    )
    // bounded by the wall clock, not Effect's: a listener that neither listens nor fails leaves
    // the cache off after this long, not the instance unbuilt (and a test clock does not move it)
    yield* Effect.raceFirst(Deferred.await(listeningOnce), waitingAtMost(listenerStartMillis))

    /** The page of `query`: from the cache when it is on, computed when `bypass` or on a miss. */
    const get = traced("PageCache.get")(function*(query: NodeQuery, bypass: boolean) {
      // a page with banned nodes is a site admin's: never kept, so that no other asker can be
      // served it, and the admin always sees the current bans
      if (query.includeBanned === true) return ServedPage.Bypass({ page: yield* compute(query) })
      const key = new PageKey(generation, canonical(query), query)
      if (bypass) {
        const page = yield* compute(query)
        if (!listening) return ServedPage.Bypass({ page })
        const stored = yield* encoded(key, page)
        yield* Cache.set(cache, key, stored)
        yield* account(key, stored)
        return ServedPage.Bypass({ page: stored })
      }
      if (!listening || listCacheTtlMillis === 0) return ServedPage.Miss({ page: yield* compute(query) })
      const cached = yield* Cache.getSuccess(cache, key)
      if (Option.isSome(cached)) return ServedPage.Hit({ page: cached.value })
      return ServedPage.Miss({ page: yield* Cache.get(cache, key) })
    })

    return {
      get: (query: NodeQuery, bypass: boolean) => Effect.tap(get(query, bypass), (served) => recordListCache(cacheResults[served._tag])),
      invalidate,
      sender: notices.sender,
      /**
       * The generation answers may be kept under now (how many invalidations this process has
       * seen), or `undefined` while nothing may be kept (the listener down, or the cache off): other
       * answers that only catalogue writes change are kept under it too (VersionCache.ts).
       */
      generation: (): number | undefined => (listening && listCacheTtlMillis > 0 ? generation : undefined)
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(PageCache, PageCache.make)
  static readonly layer = PageCache.layerWithoutDependencies.pipe(Layer.provide([NodePages.layer, CatalogueNotices.layer]))
}
