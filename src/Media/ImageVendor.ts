/**
 * The image vendor, as the image proxy needs it: start a task, poll a task. The live client
 * forwards `/proxy/imagevendor/<rest>` to `IMAGEVENDOR_BASE_URL/<rest>` with the API key in its
 * header; the simulated one (VENDOR_MODE=simulated) answers from memory, offline.
 *
 * The key is `Redacted` and leaves the process only in the vendor request's header: it is not
 * logged, and a vendor message that echoes it is scrubbed before the caller sees it.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { randomUUID } from "node:crypto"
import { AppConfig } from "../Config.ts"
import type { MediaTaskStatus } from "../Domain/Media.ts"
import { UpstreamError, type ServiceUnavailable } from "../Errors.ts"
import { fromTransportError, fromVendorStatus, type VendorFailure, vendorNotConfigured, vendorTimeout } from "./VendorFailure.ts"

/** The two operations, named as their paths name them. */
export type ImageTaskKind = "image-style-transfer" | "skin-enhancer"

/** Where each operation starts, under the vendor's base URL (the proxy's path without `/proxy/imagevendor`). */
export const startPaths: Record<ImageTaskKind, string> = {
  "image-style-transfer": "/v1/ai/image-style-transfer",
  "skin-enhancer": "/v1/ai/skin-enhancer/creative"
}

/** Where a task of each operation is polled. */
export const pollPath = (kind: ImageTaskKind, vendorTaskId: string) => `/v1/ai/${kind}/${encodeURIComponent(vendorTaskId)}`

/** A vendor's task, normalised. */
export interface VendorTask {
  readonly taskId: string
  /** `None` when the vendor said nothing, or a status this service does not know. */
  readonly status: Option.Option<MediaTaskStatus>
  /** `undefined` when the vendor left it out. */
  readonly generated: ReadonlyArray<string> | undefined
}

export type ImageVendorError = VendorFailure | ServiceUnavailable

export class ImageVendor extends Context.Tag("ImageVendor")<ImageVendor, {
  readonly mode: "live" | "simulated"
  readonly start: (kind: ImageTaskKind, body: Readonly<Record<string, unknown>>) => Effect.Effect<VendorTask, ImageVendorError>
  readonly poll: (kind: ImageTaskKind, vendorTaskId: string) => Effect.Effect<VendorTask, ImageVendorError>
}>() {}

const vendor = "image vendor"

const knownStatuses: ReadonlySet<string> = new Set<MediaTaskStatus>(["CREATED", "IN_PROGRESS", "COMPLETED", "FAILED"])

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * A vendor answer as a task: flat or wrapped in `data`; `status` or `task_status` (compared
 * without regard to case); `generated` possibly missing. `None` when it names no task.
 */
export const normaliseTask = (body: unknown): Option.Option<VendorTask> => {
  if (!isRecord(body)) return Option.none()
  const task = isRecord(body.data) ? body.data : body
  const taskId = typeof task.task_id === "string" ? task.task_id.trim() : ""
  if (taskId === "") return Option.none()
  const rawStatus = typeof task.status === "string" ? task.status : task.task_status
  const status = typeof rawStatus === "string" ? rawStatus.trim().toUpperCase() : undefined
  return Option.some({
    taskId,
    status: status !== undefined && knownStatuses.has(status) ? Option.some(status as MediaTaskStatus) : Option.none(),
    generated: Array.isArray(task.generated) ? task.generated.filter((g): g is string => typeof g === "string") : undefined
  })
}

export const makeLiveImageVendor = Effect.gen(function*() {
  const config = yield* AppConfig
  const { apiKey, apiKeyHeader, baseUrl } = config.imageVendor
  const timeoutMillis = config.vendorTimeoutMillis
  const http = yield* HttpClient.HttpClient
  const missing = [
    ...(Option.isNone(baseUrl) ? ["IMAGEVENDOR_BASE_URL"] : []),
    ...(Option.isNone(apiKey) ? ["IMAGEVENDOR_API_KEY"] : [])
  ]
  if (missing.length > 0) {
    // informational: a deployment may not use the image proxy at all
    yield* Effect.logInfo(`the image proxy answers 503 until ${missing.join(" and ")} are set`)
  }
  const scrub = (text: string) =>
    Option.match(apiKey, { onNone: () => text, onSome: (key) => text.split(Redacted.value(key)).join("[redacted]") })

  /** One exchange, its body read whole, bounded by the vendor timeout; a 2xx must name a task. */
  const exchange = (request: HttpClientRequest.HttpClientRequest): Effect.Effect<VendorTask, ImageVendorError> => {
    if (Option.isNone(baseUrl) || Option.isNone(apiKey)) return Effect.fail(vendorNotConfigured(vendor, missing))
    return Effect.gen(function*() {
      const response = yield* http.execute(
        request.pipe(
          HttpClientRequest.prependUrl(baseUrl.value),
          HttpClientRequest.acceptJson,
          HttpClientRequest.setHeader(apiKeyHeader, Redacted.value(apiKey.value))
        )
      )
      const text = scrub(yield* response.text)
      if (response.status < 200 || response.status >= 300) {
        return yield* fromVendorStatus(vendor, response.status, response.headers, text)
      }
      let body: unknown
      try {
        body = JSON.parse(text)
      } catch {
        body = undefined
      }
      return yield* Option.match(normaliseTask(body), {
        onNone: () =>
          Effect.logWarning(`the ${vendor} answered ${response.status} without a task`).pipe(
            Effect.zipRight(Effect.fail(new UpstreamError({ message: `The ${vendor} answered without a task` })))
          ),
        onSome: Effect.succeed
      })
    }).pipe(
      Effect.catchTags({ RequestError: fromTransportError(vendor), ResponseError: fromTransportError(vendor) }),
      Effect.timeoutFail({ duration: timeoutMillis, onTimeout: () => vendorTimeout(vendor, timeoutMillis) })
    )
  }

  return ImageVendor.of({
    mode: "live",
    start: (kind, body) => exchange(HttpClientRequest.post(startPaths[kind]).pipe(HttpClientRequest.bodyUnsafeJson(body))),
    poll: (kind, vendorTaskId) => exchange(HttpClientRequest.get(pollPath(kind, vendorTaskId)))
  })
})

/** Where the simulated vendor's images are served (public, by the image proxy's own routes). */
export const simulatedImagePath = (taskId: string) => `/proxy/imagevendor/simulated/${taskId}.svg`

/** Tasks the simulated vendor remembers at most (finished ones are forgotten). */
const simulatedCapacity = 10_000

/**
 * An offline vendor: a task is CREATED when started, IN_PROGRESS at its first poll and COMPLETED,
 * with one generated image served by this service, from the second poll on.
 */
export const makeSimulatedImageVendor = Effect.gen(function*() {
  const { publicBaseUrl } = yield* AppConfig
  yield* Effect.logWarning(
    "WARNING: VENDOR_MODE=simulated — the image proxy answers from a built-in SIMULATED vendor; no real vendor is called"
  )
  const polls = new Map<string, number>()
  return ImageVendor.of({
    mode: "simulated",
    start: () =>
      Effect.sync(() => {
        const taskId = randomUUID()
        if (polls.size >= simulatedCapacity) polls.clear()
        polls.set(taskId, 0)
        return { taskId, status: Option.some("CREATED" as const), generated: [] }
      }),
    poll: (_kind, taskId) =>
      Effect.sync(() => {
        // a task it forgot (a restart, another instance) is done
        const seen = (polls.get(taskId) ?? 1) + 1
        if (seen >= 2) polls.delete(taskId)
        else polls.set(taskId, seen)
        return seen >= 2
          ? { taskId, status: Option.some("COMPLETED" as const), generated: [publicBaseUrl + simulatedImagePath(taskId)] }
          : { taskId, status: Option.some("IN_PROGRESS" as const), generated: [] }
      })
  })
})

/** The vendor VENDOR_MODE chooses: the live client over Node's HTTP stack, or the simulated one. */
export const ImageVendorLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    config.vendorMode === "simulated"
      ? Layer.effect(ImageVendor, makeSimulatedImageVendor)
      : Layer.effect(ImageVendor, makeLiveImageVendor).pipe(Layer.provide(NodeHttpClient.layerUndici)))
)
