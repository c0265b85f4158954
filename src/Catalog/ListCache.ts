/**
 * An in-process cache of rendered list pages, correct across instances: every catalogue write
 * sends a PostgreSQL NOTIFY (see Writes.ts) and every instance LISTENs and drops its pages. While
 * the listening connection is down nothing is cached, since a notification could be missed.
 */
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Redacted, Schedule } from "effect"
import pg from "pg"
import { AppConfig } from "../Config.ts"
import { catalogueChannel } from "./Writes.ts"

export interface CachedPage {
  readonly body: Uint8Array
  readonly etag: string
}

export class ListCache extends Context.Tag("ListCache")<ListCache, {
  readonly get: (key: string) => Option.Option<CachedPage>
  /** Counts invalidations: a page computed under an older generation is not stored. */
  readonly generation: () => number
  readonly set: (key: string, generation: number, page: CachedPage) => void
  /** Drops every page; writers call it after their commit so their own reads see the change. */
  readonly invalidate: () => void
}>() {}

const maxEntries = 2000

export const ListCacheLive = Layer.scoped(
  ListCache,
  Effect.gen(function*() {
    const { listCacheTtlMillis } = yield* AppConfig
    const client = yield* PgClient.PgClient
    const entries = new Map<string, CachedPage & { readonly expires: number }>()
    let generation = 0
    let listening = false
    const invalidate = () => {
      generation++
      entries.clear()
    }

    // One dedicated connection; on any failure, invalidate, wait and listen again.
    const listenOnce = Effect.async<never, Error>((resume) => {
      const conn = new pg.Client({ connectionString: Redacted.value(client.config.url!), application_name: "registry-listener", keepAlive: true })
      const fail = (e: Error) => {
        listening = false
        invalidate()
        conn.removeAllListeners()
        conn.on("error", () => {})
        conn.end().catch(() => {})
        resume(Effect.fail(e))
      }
      conn.on("error", fail)
      conn.on("end", () => fail(new Error("the LISTEN connection closed")))
      conn.on("notification", invalidate)
      conn.connect()
        .then(() => conn.query(`LISTEN ${catalogueChannel}`))
        .then(() => {
          // changes made before we listened are not in the cache: it starts empty
          invalidate()
          listening = true
        }, fail)
      return Effect.sync(() => {
        listening = false
        conn.removeAllListeners()
        conn.on("error", () => {})
        conn.end().catch(() => {})
      })
    })
    yield* listenOnce.pipe(
      Effect.tapError((e) => Effect.logWarning(`catalogue change listener: ${e.message}; list cache off until it reconnects`)),
      Effect.retry(Schedule.exponential("100 millis").pipe(Schedule.union(Schedule.spaced("5 seconds")))),
      Effect.forkScoped
    )

    return ListCache.of({
      get: (key) => {
        if (!listening) return Option.none()
        const entry = entries.get(key)
        if (!entry) return Option.none()
        if (entry.expires < Date.now()) {
          entries.delete(key)
          return Option.none()
        }
        // most recently used last: the first key is the one to evict
        entries.delete(key)
        entries.set(key, entry)
        return Option.some(entry)
      },
      generation: () => generation,
      set: (key, gen, page) => {
        if (!listening || gen !== generation || listCacheTtlMillis === 0) return
        if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!)
        entries.set(key, { ...page, expires: Date.now() + listCacheTtlMillis })
      },
      invalidate
    })
  })
)
