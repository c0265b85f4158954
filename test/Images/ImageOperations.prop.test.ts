/**
 * Properties of the image vendor's other operations (creative upscaler, precision upscaler v2,
 * relight), by fast-check over real HTTP against the loopback fake vendor. Fields, enumerations,
 * ranges and defaults as comfy_api_nodes/nodes_magnific.py sends them and the vendor documents
 * them where the node is silent:
 * - random valid bodies reach the vendor unchanged in meaning (equal after the defaults);
 * - random bodies with one field broken (missing, out of range, of another type, not in the
 *   enumeration, unknown) answer 400 naming that field, and the vendor gets nothing.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { maxPromptChars } from "../../src/Domain/Media.ts"
import { expectBadRequest, send } from "../support/Http.ts"
import { expectWrappedTask, freshStart, withFakeVendor } from "../support/ImageProxy.ts"
import { type Operation, precision, relight, upscaler } from "../support/ImageOperations.ts"
import { forAll } from "../support/Property.ts"

// --- valid bodies --------------------------------------------------------------------------------

const base64Arb = fc.uint8Array({ minLength: 1, maxLength: 48 }).map((bytes) => Buffer.from(bytes).toString("base64"))
const httpsUrl = fc.webUrl({ validSchemes: ["https"], withQueryParameters: true })
const anyUrl = fc.webUrl({ validSchemes: ["http", "https"], withQueryParameters: true, withFragments: true })
const dataUrl = base64Arb.map((b) => `data:image/png;base64,${b}`)
const anyImage = fc.oneof(base64Arb, anyUrl, dataUrl)
const percent = fc.integer({ min: 0, max: 100 })
const adjustment = fc.integer({ min: -10, max: 10 })
const prompt = fc.string({ unit: "grapheme", maxLength: 60 }).filter((s) => !s.includes("\u0000"))

const upscalerBody = fc.record({
  image: anyImage,
  scale_factor: fc.constantFrom("2x", "4x", "8x", "16x"),
  optimized_for: fc.constantFrom(
    "standard", "soft_portraits", "hard_portraits", "art_n_illustration", "videogame_assets",
    "nature_n_landscapes", "films_n_photography", "3d_renders", "science_fiction_n_horror"
  ),
  prompt,
  creativity: adjustment,
  hdr: adjustment,
  resemblance: adjustment,
  fractality: adjustment,
  engine: fc.constantFrom("automatic", "magnific_illusio", "magnific_sharpy", "magnific_sparkle"),
  webhook_url: anyUrl
}, { requiredKeys: ["image"] })

const precisionBody = fc.record({
  image: fc.oneof(base64Arb, httpsUrl, dataUrl),
  sharpen: percent,
  smart_grain: percent,
  ultra_detail: percent,
  flavor: fc.constantFrom("sublime", "photo", "photo_denoiser"),
  scale_factor: fc.integer({ min: 2, max: 16 }),
  webhook_url: anyUrl
}, { requiredKeys: ["image"] })

const advancedSettings = fc.record({
  whites: percent,
  blacks: percent,
  brightness: percent,
  contrast: percent,
  saturation: percent,
  engine: fc.constantFrom("automatic", "balanced", "cool", "real", "illusio", "fairy", "colorful_anime", "hard_transform", "softy"),
  transfer_light_a: fc.constantFrom("automatic", "low", "medium", "normal", "high", "high_on_faces"),
  transfer_light_b: fc.constantFrom(
    "automatic", "composition", "straight", "smooth_in", "smooth_out", "smooth_both", "reverse_both",
    "soft_in", "soft_out", "soft_mid", "strong_mid", "style_shift", "strong_shift"
  ),
  fixed_generation: fc.boolean()
}, { requiredKeys: [] })

const relightBody = fc.record({
  image: anyImage,
  prompt,
  // at most one light source: `lightmap` is used only when there is no reference image
  transfer_light_from_reference_image: anyImage,
  transfer_light_from_lightmap: anyImage,
  light_transfer_strength: percent,
  interpolate_from_original: fc.boolean(),
  change_background: fc.boolean(),
  style: fc.constantFrom("standard", "darker_but_realistic", "clean", "smooth", "brighter", "contrasted_n_hdr", "just_composition"),
  preserve_details: fc.boolean(),
  advanced_settings: advancedSettings,
  webhook_url: anyUrl
}, { requiredKeys: ["image"] }).map((body) => {
  if (body.transfer_light_from_reference_image === undefined) return body
  const { transfer_light_from_lightmap: _, ...rest } = body
  return rest
})

const advancedDefaults = {
  whites: 50,
  blacks: 50,
  brightness: 50,
  contrast: 50,
  saturation: 50,
  engine: "automatic",
  transfer_light_a: "automatic",
  transfer_light_b: "automatic",
  fixed_generation: false
}

/** What the vendor gets: the defaults filled in, and never the client's `webhook_url` (the fake keeps our callback apart). */
const forwarded = (op: Operation, { webhook_url: _, ...body }: Record<string, unknown>) => ({
  ...op.defaults,
  ...body,
  ...(typeof body.advanced_settings === "object" ? { advanced_settings: { ...advancedDefaults, ...body.advanced_settings } } : {})
})

// --- one field broken ----------------------------------------------------------------------------

interface Breakage {
  /** The field, `advanced_settings.<key>` for one of relight's advanced settings. */
  readonly field: string
  /** `undefined` removes the field. */
  readonly value: unknown
}

const brokenPercent = fc.constantFrom<unknown>(-1, 101, 1000, 50.5, "50", null, true)
const brokenAdjustment = fc.constantFrom<unknown>(-11, 11, 100, 0.5, "0", null, false)
const brokenBoolean = fc.constantFrom<unknown>("yes", 1, null, "true")
const brokenUrl = fc.constantFrom<unknown>("not a url", "ftp://files.example/x", "https://", 7, "")
const brokenImage = fc.constantFrom<unknown>("not base64!", "ftp://files.example/x.png", 42, "", null, ["a"], "data:image/png;base64,???")
const brokenPrompt = fc.constantFrom<unknown>(5, "x".repeat(maxPromptChars + 1), "a\u0000b", ["p"])
const brokenEnum = fc.constantFrom<unknown>("turbo", "", 3, null, "STANDARD", "Automatic")
/** A field none of the operations takes. */
const unknownField = fc.record({ field: fc.constantFrom("seed", "auto_downscale", "image_url"), value: fc.constantFrom<unknown>(1, "x", true) })
const missingImage = fc.constant<Breakage>({ field: "image", value: undefined })

const upscalerBreakage: fc.Arbitrary<Breakage> = fc.oneof(
  missingImage,
  fc.record({ field: fc.constant("image"), value: brokenImage }),
  fc.record({ field: fc.constant("scale_factor"), value: fc.constantFrom<unknown>("3x", "2X", 2, "32x", "", null) }),
  fc.record({ field: fc.constantFrom("optimized_for", "engine"), value: brokenEnum }),
  fc.record({ field: fc.constantFrom("creativity", "hdr", "resemblance", "fractality"), value: brokenAdjustment }),
  fc.record({ field: fc.constant("prompt"), value: brokenPrompt }),
  fc.record({ field: fc.constant("webhook_url"), value: brokenUrl }),
  unknownField
)

const precisionBreakage: fc.Arbitrary<Breakage> = fc.oneof(
  missingImage,
  fc.record({ field: fc.constant("image"), value: fc.oneof(brokenImage, fc.constant("http://insecure.example/photo.png")) }),
  fc.record({ field: fc.constantFrom("sharpen", "smart_grain", "ultra_detail"), value: brokenPercent }),
  fc.record({ field: fc.constant("flavor"), value: fc.constantFrom<unknown>("photo denoiser", "Sublime", "", 1, null) }),
  fc.record({ field: fc.constant("scale_factor"), value: fc.constantFrom<unknown>(1, 17, 0, 2.5, "2x", "4", null) }),
  fc.record({ field: fc.constant("webhook_url"), value: brokenUrl }),
  unknownField
)

const relightBreakage: fc.Arbitrary<Breakage> = fc.oneof(
  missingImage,
  fc.record({ field: fc.constantFrom("image", "transfer_light_from_reference_image", "transfer_light_from_lightmap"), value: brokenImage }),
  fc.record({ field: fc.constant("prompt"), value: brokenPrompt }),
  fc.record({ field: fc.constant("light_transfer_strength"), value: brokenPercent }),
  fc.record({ field: fc.constantFrom("interpolate_from_original", "change_background", "preserve_details"), value: brokenBoolean }),
  fc.record({ field: fc.constant("style"), value: brokenEnum }),
  fc.record({ field: fc.constant("advanced_settings"), value: fc.constantFrom<unknown>(5, "enabled", null, ["whites"]) }),
  fc.record({
    field: fc.constantFrom("whites", "blacks", "brightness", "contrast", "saturation").map((k) => `advanced_settings.${k}`),
    value: brokenPercent
  }),
  fc.record({
    field: fc.constantFrom("engine", "transfer_light_a", "transfer_light_b").map((k) => `advanced_settings.${k}`),
    value: brokenEnum
  }),
  fc.record({ field: fc.constant("advanced_settings.fixed_generation"), value: brokenBoolean }),
  fc.record({ field: fc.constant("advanced_settings.seed"), value: fc.constant<unknown>(1) }),
  fc.record({ field: fc.constant("webhook_url"), value: brokenUrl }),
  unknownField
)

/** The body with the breakage applied (a nested one inside `advanced_settings`, created if absent). */
const broken = (body: Record<string, unknown>, { field, value }: Breakage) => {
  const copy: Record<string, unknown> = { ...body }
  const [head, nested] = field.split(".") as [string, string | undefined]
  if (nested !== undefined) {
    const settings = typeof copy[head] === "object" && copy[head] !== null ? copy[head] as Record<string, unknown> : {}
    copy[head] = { ...settings, [nested]: value }
  } else if (value === undefined) delete copy[field]
  else copy[field] = value
  return copy
}

const numRuns = 30

const cases = [
  { op: upscaler, valid: upscalerBody as fc.Arbitrary<Record<string, unknown>>, breakage: upscalerBreakage },
  { op: precision, valid: precisionBody as fc.Arbitrary<Record<string, unknown>>, breakage: precisionBreakage },
  { op: relight, valid: relightBody as fc.Arbitrary<Record<string, unknown>>, breakage: relightBreakage }
] as const

layer(withFakeVendor(), { excludeTestServices: true })("properties of the image vendor's other operations", (it) => {
  for (const { breakage, op, valid } of cases) {
    it.effect(`${op.name}: valid bodies reach the vendor with the defaults filled in`, () =>
      forAll({ body: valid }, ({ body }) =>
        Effect.gen(function*() {
          const { service, fake, token } = yield* freshStart()
          expectWrappedTask(yield* send(service, "POST", op.path, { token, body }))
          expect(fake.requests().map((r) => [r.path, r.body])).toEqual([[op.vendorPath, forwarded(op, body)]])
          // the vendor calls this service back, at a URL of one task
          expect(fake.requests()[0]!.callbackUrl).toMatch(/^https?:\/\/[^/]+\/proxy\/imagevendor\/callbacks\/[A-Za-z0-9_-]{43}$/)
        }), { numRuns }))

    it.effect(`${op.name}: a body with one field broken is 400 naming it; the vendor gets nothing`, () =>
      forAll({ body: valid, breakage }, ({ body, breakage }) =>
        Effect.gen(function*() {
          const { service, fake, token } = yield* freshStart()
          expectBadRequest(yield* send(service, "POST", op.path, { token, body: broken(body, breakage) }), breakage.field)
          expect(fake.requests()).toEqual([])
        }), { numRuns }))
  }
})
