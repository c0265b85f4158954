/**
 * The image proxy's tests share this: the service pointed at a loopback fake vendor with a known
 * key, the proxy's paths, valid request bodies, and decoders of its answers.
 */
import { Effect, Layer, Option, Redacted } from "effect"
import { expect } from "vitest"
import { MediaTask, MediaTaskEnvelope } from "../../src/Domain/Media.ts"
import { decodeExact } from "./Catalogue.ts"
import { FakeImageVendor, type FakeVendor } from "./FakeImageVendor.ts"
import { tcpForwarder } from "./Forwarder.ts"
import { type Answer, expectStatus } from "./Http.ts"
import { type ConfigOverrides, type Running, Service, serviceOnFreshDatabase } from "./Service.ts"

/** The key the service is given for the vendor, and the header it goes in. */
export const vendorKey = "imgv-secret-6f1e2a9c4b7d"
export const vendorKeyHeader = "x-imagevendor-key"
/** Short, so that a hanging vendor costs a test little; long enough for a loaded machine. */
export const vendorTimeoutMillis = 1500

export const atFake = (fake: FakeVendor, more: ConfigOverrides = (c) => c): ConfigOverrides => (c) =>
  more({
    ...c,
    vendorMode: "live",
    vendorTimeoutMillis,
    imageVendor: { baseUrl: Option.some(fake.url), apiKey: Option.some(Redacted.make(vendorKey)), apiKeyHeader: vendorKeyHeader }
  })

/** A token of user `sub` for the service. */
export const tokenOf = (service: Running, sub: string) => Effect.promise(() => service.token({ sub }))

/** A test's start: the service, its fake vendor back to normal and empty, and a token of `sub`. */
export const freshStart = (sub = "ann") =>
  Effect.gen(function*() {
    const service = yield* Service
    const fake = yield* FakeImageVendor
    fake.reset()
    return { service, fake, token: yield* tokenOf(service, sub) }
  })

/** The service and a fake vendor it calls. */
export const withFakeVendor = (more?: ConfigOverrides) =>
  Layer.unwrap(Effect.map(FakeImageVendor, (fake) => Service.layer(atFake(fake, more)))).pipe(
    Layer.provideMerge(FakeImageVendor.layer)
  )

/**
 * The service with the simulated vendor, reached through a forwarder whose URL (known before the
 * service starts) is its PUBLIC_BASE_URL: the absolute URLs it hands out open as they are.
 */
export const simulatedAtPublicUrl = Layer.effect(
  Service,
  Effect.gen(function*() {
    const forwarder = yield* tcpForwarder
    const running = yield* serviceOnFreshDatabase((c) => ({ ...c, vendorMode: "simulated", publicBaseUrl: forwarder.url }))
    forwarder.target.port = Number(new URL(running.baseUrl).port)
    return running
  })
)

export const paths = {
  style: "/proxy/imagevendor/v1/ai/image-style-transfer",
  skin: "/proxy/imagevendor/v1/ai/skin-enhancer/creative",
  skinFaithful: "/proxy/imagevendor/v1/ai/skin-enhancer/faithful",
  skinFlexible: "/proxy/imagevendor/v1/ai/skin-enhancer/flexible",
  stylePoll: (taskId: string) => `/proxy/imagevendor/v1/ai/image-style-transfer/${taskId}`,
  skinPoll: (taskId: string) => `/proxy/imagevendor/v1/ai/skin-enhancer/${taskId}`
} as const

/** What the vendor is asked at, for each proxy path. */
export const vendorPaths = {
  style: "/v1/ai/image-style-transfer",
  skin: "/v1/ai/skin-enhancer/creative",
  skinFaithful: "/v1/ai/skin-enhancer/faithful",
  skinFlexible: "/v1/ai/skin-enhancer/flexible",
  stylePoll: (taskId: string) => `/v1/ai/image-style-transfer/${taskId}`,
  skinPoll: (taskId: string) => `/v1/ai/skin-enhancer/${taskId}`
} as const

/** The skin enhancer's modes, their proxy and vendor paths, and what each adds to the shared defaults. */
export const skinModes = [
  { mode: "creative", path: paths.skin, vendorPath: vendorPaths.skin, defaults: {} },
  { mode: "faithful", path: paths.skinFaithful, vendorPath: vendorPaths.skinFaithful, defaults: { skin_detail: 80 } },
  { mode: "flexible", path: paths.skinFlexible, vendorPath: vendorPaths.skinFlexible, defaults: { optimized_for: "enhance_skin" } }
] as const

/** The values `optimized_for` takes. */
export const optimizedForValues = ["enhance_skin", "improve_lighting", "enhance_everything", "transform_to_real", "no_make_up"] as const

/** A 1x1 PNG in base64. */
export const pngBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="

export const styleBody = {
  image: "https://images.example/portrait.jpg",
  reference_image: pngBase64,
  engine: "colorful_anime",
  flavor: "gen_z",
  is_portrait: true,
  portrait_style: "pop",
  style_strength: 80,
  prompt: "in the style of a poster"
} as const

export const skinBody = { image: "https://images.example/face.png" } as const

export const decodeTask = decodeExact(MediaTask)
export const decodeEnvelope = decodeExact(MediaTaskEnvelope)

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** A 200 with the flat task of a started style transfer. */
export const expectFlatTask = (answer: Answer, what = "style transfer") => {
  const task = decodeTask(expectStatus(answer, 200, what).body)
  expect(task.task_id).toMatch(uuid)
  return task as Required<MediaTask>
}

/** A 200 with `{data: task}`. */
export const expectWrappedTask = (answer: Answer, what = "task") => {
  const { data } = decodeEnvelope(expectStatus(answer, 200, what).body)
  expect(data.task_id).toMatch(uuid)
  return data as Required<MediaTask>
}

/**
 * Each way the vendor may fail, and what the caller gets (CONTRACT.md): shared by every image
 * operation's tests, since every operation maps its vendor's failures with the same code.
 */
export const vendorFailureCases = [
  { name: "400 with a message", behaviour: { kind: "status", status: 400, body: { message: "image is not a picture" } }, status: 400, code: "bad_request", message: "image is not a picture" },
  { name: "422 with error.message", behaviour: { kind: "status", status: 422, body: { error: { message: "reference_image too small" } } }, status: 400, code: "bad_request", message: "reference_image too small" },
  { name: "401", behaviour: { kind: "status", status: 401, body: { message: "invalid api key" } }, status: 502, code: "upstream_error" },
  { name: "403", behaviour: { kind: "status", status: 403, body: { message: "forbidden" } }, status: 502, code: "upstream_error" },
  { name: "404", behaviour: { kind: "status", status: 404, body: { message: "no such task" } }, status: 404, code: "not_found" },
  { name: "429 with Retry-After", behaviour: { kind: "status", status: 429, headers: { "retry-after": "17" } }, status: 429, code: "rate_limited", retryAfter: "17" },
  { name: "500", behaviour: { kind: "status", status: 500, text: "<html>oops</html>" }, status: 502, code: "upstream_error" },
  { name: "503", behaviour: { kind: "status", status: 503 }, status: 502, code: "upstream_error" },
  { name: "200 without a task", behaviour: { kind: "status", status: 200, body: { ok: true } }, status: 502, code: "upstream_error" },
  { name: "a hang past the timeout", behaviour: { kind: "hang" }, status: 504, code: "upstream_timeout" },
  { name: "a connection reset", behaviour: { kind: "reset" }, status: 502, code: "upstream_error" }
] as const
