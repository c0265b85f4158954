/**
 * Version answers kept in memory, on stub layers with TestClock: an answer is kept under the
 * page cache's generation and dropped with it, one computed across a change is not kept, nothing
 * is kept while the page cache keeps nothing, an answer lives the list cache's TTL, refusals are
 * kept and defects are not, and the number and bytes of answers are bounded (least recently used first).
 */
import { expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { PageCache } from "../../src/Catalog/PageCache.ts"
import { maxAnswers, maxBytes, VersionCache } from "../../src/Catalog/VersionCache.ts"
import { NodeIsBanned, VersionMissing } from "../../src/Domain/Errors.ts"
import { stub, testConfig } from "../support/Stub.ts"

const ttlMillis = 60_000

/** The cache over a page cache whose generation the test moves (`undefined`: nothing may be kept). */
const cacheOver = () => {
  const state = { generation: 0 as number | undefined }
  const layer = VersionCache.layerWithoutDependencies.pipe(
    Layer.provide([
      stub(PageCache, { generation: () => state.generation }),
      testConfig((c) => ({ ...c, listCacheTtlMillis: ttlMillis }))
    ])
  )
  return { layer, state }
}

/** An answer numbered by how many times it was computed. */
const counting = () => {
  let n = 0
  return {
    compute: Effect.sync(() => new TextEncoder().encode(`{"n":${++n}}`)),
    computed: () => n
  }
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

it.effect("an answer is kept under the generation; a change drops it", () => {
  const { layer, state } = cacheOver()
  const { compute, computed } = counting()
  return Effect.gen(function*() {
    const versions = yield* VersionCache
    expect(text(yield* versions.get("tool", "1.0.0", compute))).toBe(`{"n":1}`)
    expect(text(yield* versions.get("tool", "1.0.0", compute))).toBe(`{"n":1}`)
    // another version, and the same text split differently between node and version, are other answers
    expect(text(yield* versions.get("tool", "1.0.1", compute))).toBe(`{"n":2}`)
    expect(text(yield* versions.get("tool1", ".0.0", compute))).toBe(`{"n":3}`)
    state.generation = 1
    expect(text(yield* versions.get("tool", "1.0.0", compute))).toBe(`{"n":4}`)
    expect(text(yield* versions.get("tool", "1.0.0", compute))).toBe(`{"n":4}`)
    expect(versions.size().answers).toBe(1)
    expect(computed()).toBe(4)
  }).pipe(Effect.provide(layer))
})

it.effect("an answer computed across a change is served but not kept", () => {
  const { layer, state } = cacheOver()
  const gate = Deferred.makeUnsafe<void>()
  let calls = 0
  const compute = Effect.andThen(
    Effect.suspend(() => (calls++ === 0 ? Deferred.await(gate) : Effect.void)),
    Effect.sync(() => new TextEncoder().encode(`{"n":${calls}}`))
  )
  return Effect.gen(function*() {
    const versions = yield* VersionCache
    const slow = yield* Effect.forkChild(versions.get("tool", "1.0.0", compute))
    yield* Effect.yieldNow
    // the write commits while the first read runs; that read answers what it read before
    state.generation = 1
    yield* Deferred.succeed(gate, undefined)
    expect(text(yield* Fiber.join(slow))).toBe(`{"n":1}`)
    expect(text(yield* versions.get("tool", "1.0.0", compute))).toBe(`{"n":2}`)
    expect(text(yield* versions.get("tool", "1.0.0", compute))).toBe(`{"n":2}`)
    expect(calls).toBe(2)
  }).pipe(Effect.provide(layer))
})

it.effect("nothing is kept while the page cache keeps nothing", () => {
  const { layer, state } = cacheOver()
  const { compute, computed } = counting()
  state.generation = undefined
  return Effect.gen(function*() {
    const versions = yield* VersionCache
    yield* versions.get("tool", "1.0.0", compute)
    yield* versions.get("tool", "1.0.0", compute)
    expect(computed()).toBe(2)
    expect(versions.size()).toEqual({ answers: 0, bytes: 0 })
  }).pipe(Effect.provide(layer))
})

it.effect("an answer lives the list cache's TTL, inclusive", () => {
  const { layer } = cacheOver()
  const { compute, computed } = counting()
  return Effect.gen(function*() {
    const versions = yield* VersionCache
    yield* versions.get("tool", "1.0.0", compute)
    yield* TestClock.adjust(ttlMillis)
    expect(text(yield* versions.get("tool", "1.0.0", compute))).toBe(`{"n":1}`)
    yield* TestClock.adjust(1)
    expect(text(yield* versions.get("tool", "1.0.0", compute))).toBe(`{"n":2}`)
    expect(computed()).toBe(2)
  }).pipe(Effect.provide(layer))
})

it.effect("refusals are kept; a defect is not", () => {
  const { layer } = cacheOver()
  let calls = 0
  const refuse = Effect.suspend(() => {
    calls++
    return Effect.fail(calls === 1 ? new VersionMissing({ nodeId: "tool", version: "9.9.9" }) : new NodeIsBanned({ nodeId: "tool" }))
  })
  const die = Effect.suspend(() => {
    calls++
    return Effect.die(new Error("connection lost"))
  })
  return Effect.gen(function*() {
    const versions = yield* VersionCache
    const first = yield* Effect.exit(versions.get("tool", "9.9.9", refuse))
    const again = yield* Effect.exit(versions.get("tool", "9.9.9", refuse))
    expect(first).toEqual(again)
    expect(Exit.isFailure(first)).toBe(true)
    expect(calls).toBe(1)
    calls = 0
    expect(Exit.hasDies(yield* Effect.exit(versions.get("tool", "1.0.0", die)))).toBe(true)
    expect(Exit.hasDies(yield* Effect.exit(versions.get("tool", "1.0.0", die)))).toBe(true)
    expect(calls).toBe(2)
  }).pipe(Effect.provide(layer))
})

it.effect("the number of answers is bounded, the least recently used dropped first", () => {
  const { layer } = cacheOver()
  const { compute, computed } = counting()
  return Effect.gen(function*() {
    const versions = yield* VersionCache
    yield* versions.get("tool", "0", compute)
    for (let i = 1; i < maxAnswers; i++) yield* versions.get("tool", String(i), compute)
    // used again: now the most recent
    yield* versions.get("tool", "0", compute)
    yield* versions.get("tool", "new", compute)
    expect(versions.size().answers).toBe(maxAnswers)
    const before = computed()
    yield* versions.get("tool", "0", compute)
    expect(computed()).toBe(before)
    yield* versions.get("tool", "1", compute)
    expect(computed()).toBe(before + 1)
  }).pipe(Effect.provide(layer))
})

it.effect("the bytes of answers are bounded", () => {
  const { layer } = cacheOver()
  // answers of 1 MiB each: the bound holds about 32 of them
  const big = Effect.sync(() => new Uint8Array(1024 * 1024))
  return Effect.gen(function*() {
    const versions = yield* VersionCache
    for (let i = 0; i < 40; i++) yield* versions.get("tool", String(i), big)
    const { answers, bytes } = versions.size()
    expect(bytes).toBeLessThanOrEqual(maxBytes)
    expect(answers).toBeLessThan(40)
    expect(answers).toBeGreaterThanOrEqual(30)
  }).pipe(Effect.provide(layer))
})
