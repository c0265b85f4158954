/**
 * The page cache on stub layers with TestClock: pages live for LIST_CACHE_TTL_SECONDS, a change
 * drops them all, a page computed across a change is never served from the cache, concurrent
 * misses of one page share one query, and nothing is cached while the listener is down.
 */
import { expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as zlib from "node:zlib"
import { NodePages, type NodeQuery } from "../../src/Catalog/NodePages.ts"
import { CatalogueNotices, ListenerLost, PageCache, ServedPage } from "../../src/Catalog/PageCache.ts"
import { stub, testConfig } from "../support/Stub.ts"
import { compressionsSoFar } from "../support/Compressions.ts"
import { encodeForms } from "../../src/Http/Coding.ts"

const ttlMillis = 60_000
/** The payload this instance's own changes carry. */
const ownSender = "this-instance"
const query: NodeQuery = { page: 1, limit: 10, sort: [] }

/** A listener that is up: its first element, then silence. */
const listening = Stream.concat(Stream.make(undefined), Stream.never)

/** The cache over pages numbered by how many times they were computed. */
const cacheOver = (notices: Stream.Stream<string | undefined, ListenerLost>, listPage?: (q: NodeQuery) => Effect.Effect<{ nodes: string; total: number }>) => {
  let computed = 0
  const layer = PageCache.layerWithoutDependencies.pipe(
    Layer.provide([
      stub(NodePages, {
        listPage: listPage ?? (() => Effect.sync(() => ({ nodes: `{"n":${++computed}}`, total: computed })))
      }),
      stub(CatalogueNotices, { stream: notices, sender: ownSender }),
      testConfig((c) => ({ ...c, listCacheTtlMillis: ttlMillis }))
    ])
  )
  return { layer, computed: () => computed }
}

const served = (page: ServedPage) => ({ how: page._tag, body: new TextDecoder().decode(page.page.body) })
const body = (n: number) => `{"limit":10,"nodes":[{"n":${n}}],"page":1,"total":${n},"totalPages":1}`

it.effect("pages live for the TTL, a change drops them, latest=true computes and refreshes", () => {
  const { computed, layer } = cacheOver(listening)
  return Effect.gen(function*() {
    const cache = yield* PageCache
    yield* TestClock.adjust(0)
    expect(served(yield* cache.get(query, false))).toEqual({ how: "Miss", body: body(1) })
    expect(served(yield* cache.get(query, false))).toEqual({ how: "Hit", body: body(1) })
    yield* TestClock.adjust(ttlMillis)
    expect(served(yield* cache.get(query, false))).toEqual({ how: "Hit", body: body(1) })
    yield* TestClock.adjust(1)
    expect(served(yield* cache.get(query, false))).toEqual({ how: "Miss", body: body(2) })
    yield* cache.invalidate
    expect(served(yield* cache.get(query, false))).toEqual({ how: "Miss", body: body(3) })
    expect(served(yield* cache.get(query, true))).toEqual({ how: "Bypass", body: body(4) })
    expect(served(yield* cache.get(query, false))).toEqual({ how: "Hit", body: body(4) })
    expect(computed()).toBe(4)
  }).pipe(Effect.provide(layer))
})

it.effect("a page whose query started before a change and ended after it is never served from the cache", () => {
  let calls = 0
  const gates = [Deferred.makeUnsafe<void>(), Deferred.makeUnsafe<void>()]
  const { layer } = cacheOver(listening, () =>
    Effect.gen(function*() {
      const call = calls++
      if (call === 0) yield* Deferred.await(gates[0]!)
      return { nodes: `{"n":${call + 1}}`, total: call + 1 }
    }))
  return Effect.gen(function*() {
    const cache = yield* PageCache
    yield* TestClock.adjust(0)
    const slow = yield* Effect.forkChild(cache.get(query, false))
    yield* Effect.yieldNow
    // the change commits while the first query runs; it then answers what it read before
    yield* cache.invalidate
    yield* Deferred.succeed(gates[0]!, undefined)
    expect(served(yield* Fiber.join(slow)).body).toBe(body(1))
    expect(served(yield* cache.get(query, false))).toEqual({ how: "Miss", body: body(2) })
    expect(served(yield* cache.get(query, false))).toEqual({ how: "Hit", body: body(2) })
  }).pipe(Effect.provide(layer))
})

it.effect("concurrent misses of one page share one query", () => {
  const gate = Deferred.makeUnsafe<void>()
  let calls = 0
  const { layer } = cacheOver(listening, () =>
    Effect.as(Deferred.await(gate), { nodes: `{"n":${++calls}}`, total: calls }))
  return Effect.gen(function*() {
    const cache = yield* PageCache
    yield* TestClock.adjust(0)
    const fibers = yield* Effect.forEach([1, 2, 3, 4], () => Effect.forkChild(cache.get(query, false)))
    yield* Effect.yieldNow
    yield* Deferred.succeed(gate, undefined)
    const pages = yield* Effect.forEach(fibers, Fiber.join)
    expect(calls).toBe(1)
    expect(new Set(pages.map((p) => served(p).body))).toEqual(new Set([body(1)]))
    expect(pages.every((p) => p._tag === "Miss")).toBe(true)
  }).pipe(Effect.provide(layer))
})

it.effect("while the listener is down nothing is cached", () => {
  const { computed, layer } = cacheOver(Stream.fail(new ListenerLost({ reason: "refused" })))
  return Effect.gen(function*() {
    const cache = yield* PageCache
    yield* TestClock.adjust(0)
    expect((yield* cache.get(query, false))._tag).toBe("Miss")
    expect((yield* cache.get(query, false))._tag).toBe("Miss")
    expect(computed()).toBe(2)
  }).pipe(Effect.provide(layer))
})

it.effect("another instance's notification drops the pages; the echo of this instance's own does not", () => {
  const { computed, layer } = cacheOver(
    // listening at once (the instance is built once it listens), then this instance's echo, then
    // another instance's change, a moment apart each
    Stream.make(undefined).pipe(
      Stream.concat(Stream.fromEffect(Effect.as(Effect.sleep("1 second"), ownSender))),
      Stream.concat(Stream.fromEffect(Effect.as(Effect.sleep("1 second"), "another-instance"))),
      Stream.concat(Stream.never)
    )
  )
  return Effect.gen(function*() {
    const cache = yield* PageCache
    expect(cache.sender).toBe(ownSender)
    expect((yield* cache.get(query, false))._tag).toBe("Miss")
    yield* TestClock.adjust("1 second")
    expect((yield* cache.get(query, false))._tag).toBe("Hit")
    yield* TestClock.adjust("1 second")
    expect((yield* cache.get(query, false))._tag).toBe("Miss")
    expect(computed()).toBe(2)
  }).pipe(Effect.provide(layer))
})

it.effect("a cached page makes its br and gzip forms when first asked, then keeps them", () => {
  const { layer } = cacheOver(listening, () => Effect.succeed({ nodes: `{"d":"${"x".repeat(64 * 1024)}"}`, total: 1 }))
  return Effect.gen(function*() {
    const cache = yield* PageCache
    yield* TestClock.adjust(0)
    const made = yield* compressionsSoFar
    const first = (yield* cache.get(query, false)).page
    expect(first.encoded).toBeDefined()
    // the fill compresses nothing; each form is made once, when first asked for
    expect((yield* compressionsSoFar) - made).toBe(0)
    expect(zlib.gunzipSync(yield* first.encoded!.gzip).equals(first.body)).toBe(true)
    expect(zlib.brotliDecompressSync(yield* first.encoded!.br).equals(first.body)).toBe(true)
    yield* first.encoded!.br
    expect((yield* compressionsSoFar) - made).toBe(2)
    expect((yield* cache.get(query, false))._tag).toBe("Hit")
  }).pipe(Effect.provide(layer))
})

// apart from the forms above: a 40 MiB page takes seconds of brotli, which the bound does not need
it.effect("the pages' bytes are bounded, the earliest filled dropped first", () => {
  // pages of 40 MiB each: the fourth passes the 128 MiB bound
  const big = `{"d":"${"x".repeat(40 * 1024 * 1024)}"}`
  const { layer } = cacheOver(listening, () => Effect.succeed({ nodes: big, total: 1 }))
  const nth = (page: number): NodeQuery => ({ ...query, page })
  return Effect.gen(function*() {
    const cache = yield* PageCache
    yield* TestClock.adjust(0)
    const made = yield* compressionsSoFar
    expect((yield* cache.get(nth(1), false))._tag).toBe("Miss")
    for (const page of [2, 3, 4]) expect((yield* cache.get(nth(page), false))._tag).toBe("Miss")
    // filling compresses nothing
    expect((yield* compressionsSoFar) - made).toBe(0)
    expect((yield* cache.get(nth(4), false))._tag).toBe("Hit")
    expect((yield* cache.get(nth(2), false))._tag).toBe("Hit")
    expect((yield* cache.get(nth(1), false))._tag).toBe("Miss")
  }).pipe(Effect.provide(layer))
})

it.effect("a form whose first asker is interrupted mid-compression is still made for the next one", () =>
  Effect.gen(function*() {
    // large enough to be compressed on the thread pool, so the first asker waits there
    const body = new Uint8Array(256 * 1024).fill(97)
    const forms = yield* encodeForms(body, () => Effect.void)
    const first = yield* Effect.forkChild(forms.br)
    for (let i = 0; i < 5; i++) yield* Effect.yieldNow
    yield* Fiber.interrupt(first)
    expect(zlib.brotliDecompressSync(yield* forms.br).equals(Buffer.from(body))).toBe(true)
  }))
