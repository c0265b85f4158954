/**
 * The image vendor, as the image proxy needs it: start a task, poll a task. The live client
 * forwards `/proxy/imagevendor/<rest>` to `IMAGEVENDOR_BASE_URL/<rest>` with the API key in its
 * header; the simulated one (VENDOR_MODE=simulated) answers from memory, offline.
 *
 * The key is `Redacted` and leaves the process only in the vendor request's header: it is not
 * logged, and a vendor message that echoes it is scrubbed before the caller sees it.
 */
import { HttpClient, HttpClientRequest } from "effect/http"
import { NodeHttpClient } from "@effect/platform-node"
import { Context, Effect, Layer, Option, Redacted, Schema, SchemaTransformation } from "effect"
import { randomUUID } from "node:crypto"
import { AppConfig } from "../Config.ts"
import { type ImageOperation, type ImageTaskKind, MediaTaskStatus } from "../Domain/Media.ts"
import { fromTransportError, fromVendorStatus, VendorFailed, VendorTimedOut, VendorUnconfigured } from "../Vendors/Failure.ts"
import { traced } from "../Tracing.ts"
import { measuredVendor } from "../Observability/Metrics.ts"

/** Where an operation starts, under the vendor's base URL (the proxy's path without `/proxy/imagevendor`). */
const startPath = (operation: ImageOperation) => `/v1/ai/${operation}`

/** Where a task of each kind is polled. */
const pollPath = (kind: ImageTaskKind, vendorTaskId: string) => `/v1/ai/${kind}/${encodeURIComponent(vendorTaskId)}`

/** A vendor's task, normalised. */
const VendorTask = Schema.Struct({
  taskId: Schema.String,
  /** `None` when the vendor said nothing, or a status this service does not know. */
  status: Schema.Option(MediaTaskStatus),
  /** `undefined` when the vendor left it out. */
  generated: Schema.UndefinedOr(Schema.Array(Schema.String))
})
export type VendorTask = typeof VendorTask.Type

/** A task as vendors write it; only a non-blank `task_id` is required. */
const TaskFields = Schema.Struct({
  task_id: Schema.Trim.check(Schema.isNonEmpty()),
  status: Schema.optional(Schema.Unknown),
  task_status: Schema.optional(Schema.Unknown),
  generated: Schema.optional(Schema.Unknown)
})

const isStatus = Schema.is(MediaTaskStatus)

/**
 * A vendor's answer as a task: flat or wrapped in `data`; `status` or `task_status` (compared
 * without regard to case); `generated` possibly missing (its non-string entries dropped).
 */
const VendorTaskBody = Schema.Union([
  TaskFields,
  Schema.Struct({ data: TaskFields }).pipe(
    Schema.decodeTo(
      Schema.toType(TaskFields),
      SchemaTransformation.transform({ decode: ({ data }) => data, encode: (data) => ({ data }) })
    )
  )
]).pipe(
  Schema.decodeTo(
    Schema.toType(VendorTask),
    SchemaTransformation.transform<VendorTask, typeof TaskFields.Type>({
      decode: (task) => {
        const raw = typeof task.status === "string" ? task.status : task.task_status
        const status = typeof raw === "string" ? raw.trim().toUpperCase() : undefined
        return {
          taskId: task.task_id,
          status: isStatus(status) ? Option.some(status) : Option.none(),
          generated: Array.isArray(task.generated) ? task.generated.filter((g): g is string => typeof g === "string") : undefined
        }
      },
      encode: (task) => ({ task_id: task.taskId, status: Option.getOrUndefined(task.status), generated: task.generated })
    })
  )
)

const vendor = "image vendor"

const decodeTask = Schema.decodeUnknownEffect(Schema.fromJsonString(VendorTaskBody))

/**
 * A task the vendor sent (its callback's JSON), read exactly as its answers to starts and polls
 * are: a task has one reading whichever way it arrived.
 */
export const decodeVendorTask = Schema.decodeUnknownEffect(VendorTaskBody)

const makeLive = Effect.gen(function*() {
  const config = yield* AppConfig
  const { apiKey, apiKeyHeader, baseUrl } = config.imageVendor
  const timeoutMillis = config.vendorTimeoutMillis
  const http = (yield* HttpClient.HttpClient).pipe(measuredVendor("imagevendor"))
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
  const exchange = (request: HttpClientRequest.HttpClientRequest) =>
    Effect.gen(function*() {
      if (Option.isNone(baseUrl) || Option.isNone(apiKey)) return yield* new VendorUnconfigured({ vendor, settings: missing })
      const response = yield* http.execute(
        request.pipe(
          HttpClientRequest.prependUrl(baseUrl.value),
          HttpClientRequest.acceptJson,
          HttpClientRequest.setHeader(apiKeyHeader, Redacted.value(apiKey.value))
        )
      )
      if (response.status < 200 || response.status >= 300) {
        return yield* fromVendorStatus(vendor, response.status, response.headers, scrub(yield* response.text))
      }
      // a body that is not JSON is as much "no task" as JSON without one
      return yield* decodeTask(yield* response.text).pipe(
        Effect.catchTag("SchemaError", () =>
          Effect.andThen(
            Effect.logWarning(`the ${vendor} answered ${response.status} without a task`),
            new VendorFailed({ vendor, reason: "answered without a task" })
          ))
      )
    }).pipe(
      Effect.catchTag("HttpClientError", fromTransportError(vendor)),
      Effect.timeoutOrElse({
        duration: timeoutMillis,
        orElse: () => Effect.fail(new VendorTimedOut({ vendor, millis: timeoutMillis }))
      })
    )

  return {
    start: traced("ImageVendor.start")(function*(operation: ImageOperation, body: Readonly<Record<string, unknown>>) {
      return yield* exchange(HttpClientRequest.post(startPath(operation)).pipe(HttpClientRequest.bodyJsonUnsafe(body)))
    }),
    poll: traced("ImageVendor.poll")(function*(kind: ImageTaskKind, vendorTaskId: string) {
      return yield* exchange(HttpClientRequest.get(pollPath(kind, vendorTaskId)))
    })
  }
})

/** Where the simulated vendor's images are served (public, by the image proxy's own routes). */
const simulatedImagePath = (taskId: string) => `/proxy/imagevendor/simulated/${taskId}.png`

/** Tasks the simulated vendor remembers at most (finished ones are forgotten). */
const simulatedCapacity = 10_000

/** How long after its start the simulated vendor calls a task's callback URL, finished. */
const simulatedCallbackMillis = 1_000

/**
 * An offline vendor: a task of any operation is CREATED when started, IN_PROGRESS at its first
 * poll and COMPLETED, with one generated PNG served by this service, from the second poll on.
 */
const makeSimulated = Effect.gen(function*() {
  const { publicBaseUrl } = yield* AppConfig
  yield* Effect.logWarning(
    "WARNING: VENDOR_MODE=simulated — the image proxy answers from a built-in SIMULATED vendor; no real vendor is called"
  )
  const polls = new Map<string, number>()
  const task = (taskId: string, status: MediaTaskStatus, generated: ReadonlyArray<string>): VendorTask => ({
    taskId,
    status: Option.some(status),
    generated
  })
  return {
    start: traced("ImageVendor.start")(function*(_operation: ImageOperation, body: Readonly<Record<string, unknown>>) {
      const taskId = randomUUID()
      if (polls.size >= simulatedCapacity) polls.clear()
      polls.set(taskId, 0)
      const callback = body["webhook_url"]
      if (typeof callback === "string") {
        // as the real vendor does: the finished task, posted to the URL it was given
        yield* Effect.promise(() =>
          fetch(callback, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ data: { task_id: taskId, status: "COMPLETED", generated: [publicBaseUrl + simulatedImagePath(taskId)] } })
          }).then((r) => r.body?.cancel(), () => undefined)
        ).pipe(
          Effect.tap(() => Effect.sync(() => polls.delete(taskId))),
          Effect.delay(simulatedCallbackMillis),
          Effect.forkDetach
        )
      }
      return task(taskId, "CREATED", [])
    }),
    poll: traced("ImageVendor.poll")(function*(_kind: ImageTaskKind, taskId: string) {
      // a task it forgot (a restart, another instance) is done
      const seen = (polls.get(taskId) ?? 1) + 1
      if (seen >= 2) polls.delete(taskId)
      else polls.set(taskId, seen)
      return seen >= 2
        ? task(taskId, "COMPLETED", [publicBaseUrl + simulatedImagePath(taskId)])
        : task(taskId, "IN_PROGRESS", [])
    })
  }
})

/** The vendor VENDOR_MODE chooses: the live client over Node's HTTP stack, or the simulated one. */
export class ImageVendor extends Context.Service<ImageVendor>()("ImageVendor", {
  make: Effect.flatMap(AppConfig, (config) => config.vendorMode === "simulated" ? makeSimulated : makeLive)
}) {
  static readonly layerWithoutDependencies = Layer.effect(ImageVendor, ImageVendor.make)
  static readonly layer = ImageVendor.layerWithoutDependencies.pipe(Layer.provide(NodeHttpClient.layerUndici))
}
