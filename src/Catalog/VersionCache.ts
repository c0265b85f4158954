/**
 * Answers of `GET /nodes/{id}/versions/{v}`, kept in this process as the bytes sent. A version,
 * its node's and its publisher's statuses change only through the catalogue's writes
 * (Changes.ts), which notify every instance: so an answer is kept under the page cache's
 * generation (PageCache.ts), and a change anywhere drops every kept answer, as it drops every
 * page. An answer computed across a change is not kept: the generation it started under has passed.
 * While the page cache keeps nothing (its listener down, or `LIST_CACHE_TTL_SECONDS=0`), nothing
 * is kept here either, and an answer lives at most that TTL, as a page does.
 *
 * The answer does not depend on the caller (no viewer is consulted), so one entry serves
 * everyone. A refusal (404 version missing, 403 node banned) is kept as well; a defect is not.
 * Memory is bounded by both the number of answers and their bytes: the least recently used go first.
 */
import { Cause, Clock, Context, Effect, Exit, Layer, Schema } from "effect"
import { AppConfig } from "../Config.ts"
import type { NodeIsBanned, VersionMissing } from "../Domain/Errors.ts"
import { NodeVersion } from "../Domain/Node.ts"
import { PageCache } from "./PageCache.ts"

/** A version's answer: its JSON bytes as HttpApi would encode them, or why there is none. */
export type VersionAnswer = Exit.Exit<Uint8Array, VersionMissing | NodeIsBanned>

/** The most answers kept. */
export const maxAnswers = 20_000

/** The most bytes kept (bodies, keys and `entryBytes` each): about 30,000 versions of 1 KB. */
export const maxBytes = 32 * 1024 * 1024

/** What a kept refusal, or an entry's bookkeeping, counts beside its key. */
const entryBytes = 128

const encoder = new TextEncoder()
const encodeVersion = Schema.encodeSync(NodeVersion)

/** The bytes HttpApi sends for `version` as a `NodeVersion` success: `JSON.stringify` of its encoded form. */
export const renderVersion = (version: NodeVersion): Uint8Array => encoder.encode(JSON.stringify(encodeVersion(version)))

interface Entry {
  readonly answer: VersionAnswer
  readonly bytes: number
  readonly expiresAt: number
}

/** Only typed refusals are kept; a defect or an interruption is this request's alone. */
const keepable = (answer: VersionAnswer) => Exit.isSuccess(answer) || answer.cause.reasons.every(Cause.isFailReason)

export class VersionCache extends Context.Service<VersionCache>()("VersionCache", {
  make: Effect.gen(function*() {
    const { listCacheTtlMillis } = yield* AppConfig
    const pages = yield* PageCache
    const clock = yield* Clock.Clock

    /** The kept answers, least recently used first (a `Map` iterates in insertion order). */
    const answers = new Map<string, Entry>()
    /** The generation the kept answers belong to. */
    let keptGeneration = -1
    let storedBytes = 0

    const drop = (key: string, entry: Entry) => {
      answers.delete(key)
      storedBytes -= entry.bytes
    }

    /** The entry of `key` if it is current; every entry of an earlier generation is dropped first. */
    const lookup = (key: string, generation: number): Entry | undefined => {
      if (keptGeneration !== generation) {
        answers.clear()
        storedBytes = 0
        keptGeneration = generation
        return undefined
      }
      const entry = answers.get(key)
      if (entry === undefined) return undefined
      answers.delete(key)
      // a page lives LIST_CACHE_TTL inclusive: so does an answer
      if (clock.currentTimeMillisUnsafe() > entry.expiresAt) {
        storedBytes -= entry.bytes
        return undefined
      }
      answers.set(key, entry)
      return entry
    }

    const store = (key: string, generation: number, answer: VersionAnswer) => {
      // a change came between the lookup and the answer: what was read may be stale
      if (pages.generation() !== generation || keptGeneration !== generation || !keepable(answer)) return
      const bytes = key.length + entryBytes + (Exit.isSuccess(answer) ? answer.value.byteLength : 0)
      const previous = answers.get(key)
      if (previous !== undefined) drop(key, previous)
      answers.set(key, { answer, bytes, expiresAt: clock.currentTimeMillisUnsafe() + listCacheTtlMillis })
      storedBytes += bytes
      for (const [oldest, entry] of answers) {
        if (storedBytes <= maxBytes && answers.size <= maxAnswers) break
        drop(oldest, entry)
      }
    }

    return {
      /**
       * The answer for `versionOrId` of `nodeId`: kept, or `compute`d (and kept when no change
       * came meanwhile). Concurrent misses of one version each compute it.
       */
      get: (
        nodeId: string,
        versionOrId: string,
        compute: Effect.Effect<Uint8Array, VersionMissing | NodeIsBanned>
      ): Effect.Effect<Uint8Array, VersionMissing | NodeIsBanned> =>
        Effect.suspend(() => {
          const generation = pages.generation()
          if (generation === undefined) return compute
          // the length first: no node id and version pair can spell another's key
          const key = `${nodeId.length}:${nodeId}${versionOrId}`
          const kept = lookup(key, generation)
          if (kept !== undefined) return kept.answer
          return Effect.flatMap(Effect.exit(compute), (answer) => {
            store(key, generation, answer)
            return answer
          })
        }),
      /** How many answers and bytes are kept (for tests and the bound's documentation). */
      size: () => ({ answers: answers.size, bytes: storedBytes })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(VersionCache, VersionCache.make)
  static readonly layer = VersionCache.layerWithoutDependencies.pipe(Layer.provide(PageCache.layer))
}
