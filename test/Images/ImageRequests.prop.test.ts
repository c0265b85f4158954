/**
 * Properties of the image proxy, by fast-check over real HTTP:
 * - random valid bodies (from the interface's field tables, and the fields the skin enhancer's
 *   faithful and flexible modes add) reach the vendor unchanged in meaning (equal after the skin
 *   enhancer's defaults);
 * - random bodies with one field broken answer 400 naming that field, and the vendor gets nothing;
 * - random sequences of vendor statuses, polled in order (and concurrently), never move the
 *   stored status backwards: the answers follow a model of the state machine.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { maxPromptChars } from "../../src/Domain/Media.ts"
import { queryOne } from "../support/Db.ts"
import { FakeImageVendor } from "../support/FakeImageVendor.ts"
import { expectBadRequest, get, send } from "../support/Http.ts"
import {
  expectFlatTask,
  expectWrappedTask,
  freshStart,
  optimizedForValues,
  paths,
  pngBase64,
  skinModes,
  tokenOf,
  vendorPaths,
  withFakeVendor
} from "../support/ImageProxy.ts"
import { Service } from "../support/Service.ts"
import { forAll } from "../support/Property.ts"

// --- valid bodies --------------------------------------------------------------------------------

const base64Arb = fc.uint8Array({ minLength: 1, maxLength: 48 }).map((bytes) => Buffer.from(bytes).toString("base64"))
const httpsUrl = fc.webUrl({ validSchemes: ["https"], withQueryParameters: true })
const anyUrl = fc.webUrl({ validSchemes: ["http", "https"], withQueryParameters: true, withFragments: true })
const dataUrl = base64Arb.map((b) => `data:image/png;base64,${b}`)
const percent = fc.integer({ min: 0, max: 100 })

const engines = ["balanced", "definio", "illusio", "3d_cartoon", "colorful_anime", "caricature", "real", "super_real", "softy"] as const
const flavors = ["faithful", "gen_z", "psychedelia", "detaily", "clear", "donotstyle", "donotstyle_sharp"] as const

const styleBodyArb = fc.record({
  image: fc.oneof(base64Arb, anyUrl, dataUrl, fc.constant(pngBase64)),
  reference_image: fc.oneof(base64Arb, anyUrl, dataUrl),
  engine: fc.constantFrom(...engines),
  fixed_generation: fc.boolean(),
  flavor: fc.constantFrom(...flavors),
  is_portrait: fc.boolean(),
  portrait_beautifier: fc.constantFrom("beautify_face", "beautify_face_max"),
  portrait_style: fc.constantFrom("standard", "pop", "super_pop"),
  prompt: fc.string({ unit: "grapheme", maxLength: 60 }).filter((s) => !s.includes("\u0000")),
  structure_strength: percent,
  style_strength: percent,
  webhook_url: anyUrl
}, { requiredKeys: ["image", "reference_image"] })

const skinBodyArb = fc.record({
  image: fc.oneof(base64Arb, httpsUrl, dataUrl),
  sharpen: percent,
  smart_grain: percent,
  webhook_url: anyUrl
}, { requiredKeys: ["image"] })

/** A body of a skin enhancer mode: the shared fields, and the mode's own. */
const modeBodyArb = fc.constantFrom(...skinModes).chain((mode) =>
  fc.record({
    image: fc.oneof(base64Arb, httpsUrl, dataUrl),
    sharpen: percent,
    smart_grain: percent,
    webhook_url: anyUrl,
    ...(mode.mode === "faithful" ? { skin_detail: percent } : {}),
    ...(mode.mode === "flexible" ? { optimized_for: fc.constantFrom(...optimizedForValues) } : {})
  }, { requiredKeys: ["image"] }).map((body) => ({ mode, body: body as Record<string, unknown> }))
)

// --- one field broken ----------------------------------------------------------------------------

interface Breakage {
  readonly field: string
  /** `undefined` removes the field. */
  readonly value: unknown
}

const brokenPercent = fc.constantFrom<unknown>(-1, 101, 1000, 50.5, "50", null, true)
const brokenUrl = fc.constantFrom<unknown>("not a url", "ftp://files.example/x", "https://", 7, "")
const brokenImage = fc.constantFrom<unknown>("not base64!", "ftp://files.example/x.png", 42, "", null, ["a"], "data:image/png;base64,???")

const styleBreakage: fc.Arbitrary<Breakage> = fc.oneof(
  fc.constantFrom("image", "reference_image").map((field) => ({ field, value: undefined })),
  fc.record({ field: fc.constantFrom("image", "reference_image"), value: brokenImage }),
  fc.record({ field: fc.constant("engine"), value: fc.constantFrom<unknown>("turbo", "Balanced", 3, "") }),
  fc.record({ field: fc.constant("flavor"), value: fc.constantFrom<unknown>("spicy", "GEN_Z", false) }),
  fc.record({ field: fc.constant("portrait_beautifier"), value: fc.constantFrom<unknown>("beautify", 1) }),
  fc.record({ field: fc.constant("portrait_style"), value: fc.constantFrom<unknown>("mega_pop", null) }),
  fc.record({ field: fc.constantFrom("fixed_generation", "is_portrait"), value: fc.constantFrom<unknown>("yes", 1, null, "true") }),
  fc.record({ field: fc.constant("prompt"), value: fc.constantFrom<unknown>(5, "x".repeat(maxPromptChars + 1), "a\u0000b", ["p"]) }),
  fc.record({ field: fc.constantFrom("structure_strength", "style_strength"), value: brokenPercent }),
  fc.record({ field: fc.constant("webhook_url"), value: brokenUrl })
)

const skinBreakage: fc.Arbitrary<Breakage> = fc.oneof(
  fc.constant({ field: "image", value: undefined }),
  fc.record({ field: fc.constant("image"), value: fc.oneof(brokenImage, fc.constant("http://insecure.example/face.png")) }),
  fc.record({ field: fc.constantFrom("sharpen", "smart_grain"), value: brokenPercent }),
  fc.record({ field: fc.constant("webhook_url"), value: brokenUrl })
)

/** One field of a mode's body broken: a shared one, or the mode's own. */
const modeBreakage = (mode: typeof skinModes[number]["mode"]): fc.Arbitrary<Breakage> =>
  mode === "faithful"
    ? fc.oneof(skinBreakage, fc.record({ field: fc.constant("skin_detail"), value: brokenPercent }))
    : mode === "flexible"
    ? fc.oneof(
      skinBreakage,
      fc.record({ field: fc.constant("optimized_for"), value: fc.constantFrom<unknown>("enhance", "ENHANCE_SKIN", "no_makeup", "", 1, null) })
    )
    : skinBreakage

const broken = (body: Record<string, unknown>, breakage: Breakage) => {
  const copy: Record<string, unknown> = { ...body }
  if (breakage.value === undefined) delete copy[breakage.field]
  else copy[breakage.field] = breakage.value
  return copy
}

// --- statuses ------------------------------------------------------------------------------------

const rank: Record<string, number> = { CREATED: 0, IN_PROGRESS: 1, COMPLETED: 2, FAILED: 2 }
const vendorStatus = fc.constantFrom("CREATED", "IN_PROGRESS", "COMPLETED", "FAILED", "QUEUED", "in_progress", "")

/** The stored status after the vendor says `next`: forwards only, finished tasks never change. */
const modelMove = (stored: string, next: string) => {
  const n = next.toUpperCase()
  if (!(n in rank) || rank[stored]! === 2) return stored
  return rank[n]! > rank[stored]! ? n : stored
}

const runs = { count: 0 }
const numRuns = 25

/** What the vendor is sent of a client's body: all but `webhook_url`, which becomes this service's callback (the fake keeps it apart). */
const forwarded = <B extends object>(body: B) => {
  const { webhook_url: _, ...rest } = body as B & { webhook_url?: string }
  return rest
}

layer(withFakeVendor(), { excludeTestServices: true })("image proxy properties", (it) => {
  it.effect("valid style transfer bodies reach the vendor unchanged", () => forAll({ body: styleBodyArb }, ({ body }) =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      expectFlatTask(yield* send(service, "POST", paths.style, { token, body }))
      expect(fake.requests().map((r) => [r.path, r.body])).toEqual([[vendorPaths.style, forwarded(body)]])
    }), { numRuns }))

  it.effect("valid skin enhancer bodies reach the vendor with the defaults filled in", () => forAll({ body: skinBodyArb }, ({ body }) =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      expectWrappedTask(yield* send(service, "POST", paths.skin, { token, body }))
      expect(fake.requests().map((r) => [r.path, r.body])).toEqual([[vendorPaths.skin, { sharpen: 0, smart_grain: 2, ...forwarded(body) }]])
    }), { numRuns }))

  it.effect("valid bodies of every skin enhancer mode reach the mode's vendor path with the defaults filled in", () => forAll({
    given: modeBodyArb
  }, ({ given: { body, mode } }) =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      expectWrappedTask(yield* send(service, "POST", mode.path, { token, body }))
      expect(fake.requests().map((r) => [r.path, r.body])).toEqual([[mode.vendorPath, { sharpen: 0, smart_grain: 2, ...mode.defaults, ...forwarded(body) }]])
    }), { numRuns }))

  it.effect(
    "a body of a skin enhancer mode with one field broken is 400 naming it; the vendor gets nothing",
    () =>
      forAll(
        { given: modeBodyArb.chain((given) => modeBreakage(given.mode.mode).map((breakage) => ({ ...given, breakage }))) },
        ({ given: { body, breakage, mode } }) =>
          Effect.gen(function*() {
            const { service, fake, token } = yield* freshStart()
            expectBadRequest(yield* send(service, "POST", mode.path, { token, body: broken(body, breakage) }), breakage.field)
            expect(fake.requests()).toEqual([])
          }),
        { numRuns }
      )
  )

  it.effect(
    "a style transfer body with one field broken is 400 naming it; the vendor gets nothing",
    () =>
      forAll(
        { body: styleBodyArb, breakage: styleBreakage },
        ({ body, breakage }) =>
          Effect.gen(function*() {
            const { service, fake, token } = yield* freshStart()
            expectBadRequest(yield* send(service, "POST", paths.style, { token, body: broken(body, breakage) }), breakage.field)
            expect(fake.requests()).toEqual([])
          }),
        { numRuns }
      )
  )

  it.effect(
    "a skin enhancer body with one field broken is 400 naming it; the vendor gets nothing",
    () =>
      forAll(
        { body: skinBodyArb, breakage: skinBreakage },
        ({ body, breakage }) =>
          Effect.gen(function*() {
            const { service, fake, token } = yield* freshStart()
            expectBadRequest(yield* send(service, "POST", paths.skin, { token, body: broken(body, breakage) }), breakage.field)
            expect(fake.requests()).toEqual([])
          }),
        { numRuns }
      )
  )

  it.effect(
    "statuses polled in order follow the model: never backwards, unknown ones not stored, finished ones final",
    () =>
      forAll(
        { statuses: fc.array(vendorStatus, { minLength: 1, maxLength: 8 }) },
        ({ statuses }) =>
          Effect.gen(function*() {
            const { service, fake, token } = yield* freshStart()
            const task = expectFlatTask(yield* send(service, "POST", paths.style, { token, body: { image: pngBase64, reference_image: pngBase64 } }))
            fake.script(task.task_id, statuses)
            let model = "CREATED"
            let asked = 0
            for (const status of statuses) {
              if (rank[model] !== 2) asked++
              model = modelMove(model, status)
              const polled = expectWrappedTask(yield* get(service, paths.stylePoll(task.task_id), { token }))
              expect(polled.status).toBe(model)
            }
            // once finished, the vendor is no longer asked
            expect(fake.requests().filter((r) => r.method === "GET")).toHaveLength(asked)
          }),
        { numRuns }
      )
  )

  it.effect(
    "concurrent polls never move the stored status backwards",
    () =>
      forAll(
        { statuses: fc.array(vendorStatus, { minLength: 2, maxLength: 10 }) },
        ({ statuses }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const fake = yield* FakeImageVendor
            fake.reset()
            const token = yield* tokenOf(service, `concurrent-${runs.count++}`)
            const task = expectFlatTask(yield* send(service, "POST", paths.style, { token, body: { image: pngBase64, reference_image: pngBase64 } }))
            fake.script(task.task_id, [...statuses, "CREATED"])
            const answers = yield* Effect.all(
              statuses.map(() => get(service, paths.stylePoll(task.task_id), { token })),
              { concurrency: "unbounded" }
            )
            for (const a of answers) expect(Object.keys(rank)).toContain(expectWrappedTask(a).status)
            // what the vendor said, in the order it said it, and what is stored in the end
            const served = statuses.slice(0, fake.requests().filter((r) => r.method === "GET").length)
            const stored = (yield* queryOne<{ status: string }>(service, "SELECT status FROM media_tasks WHERE id = $1", [task.task_id]))!.status
            const highest = Math.max(0, ...served.map((s) => rank[s.toUpperCase()] ?? 0))
            expect(rank[stored]).toBe(highest)
            if (highest === 2) expect(served.map((s) => s.toUpperCase())).toContain(stored)
          }),
        { numRuns: 15 }
      )
  )
})
