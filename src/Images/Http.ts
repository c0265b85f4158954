/** The image proxy's handlers: the schemas validate, ImageTasks does the rest. */
import { HttpApiBuilder } from "effect/http-api"
import { Effect, Layer } from "effect"
import { ImageCallbacksApi, ImageProxyApi, SimulatedImagesApi } from "./Api.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
import { AppConfig } from "../Config.ts"
import { BadRequest, IdempotencyKeyInProgress, IdempotencyKeyReused, NotFound } from "../Domain/ApiErrors.ts"
import {
  MediaTaskEnvelope,
  type SkinEnhancerFaithfulRequest,
  type SkinEnhancerFlexibleRequest,
  type SkinEnhancerRequest,
  skinEnhancerDefaults
} from "../Domain/Media.ts"
import { ImageTasks, toWire } from "./Service.ts"
import { cachedSimulatedPngs } from "./SimulatedImage.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import { vendorAnswers } from "../Vendors/Failure.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({
  ...sharedAnswers,
  ...vendorAnswers,
  TaskMissing: NotFound,
  KeyReused: IdempotencyKeyReused,
  KeyInProgress: IdempotencyKeyInProgress,
  CallbackUnknown: NotFound,
  CallbackRefused: BadRequest
})

const enveloped = (task: Parameters<typeof toWire>[0]) => new MediaTaskEnvelope({ data: toWire(task) }, { disableChecks: true })

/** The request as forwarded, and as an Idempotency-Key is bound to it: the defaults applied. */
const withSkinDefaults = (request: SkinEnhancerRequest) => ({
  ...request,
  sharpen: request.sharpen ?? skinEnhancerDefaults.sharpen,
  smart_grain: request.smart_grain ?? skinEnhancerDefaults.smart_grain
})

const withFaithfulDefaults = (request: SkinEnhancerFaithfulRequest) => ({
  ...withSkinDefaults(request),
  skin_detail: request.skin_detail ?? skinEnhancerDefaults.skin_detail
})

const withFlexibleDefaults = (request: SkinEnhancerFlexibleRequest) => ({
  ...withSkinDefaults(request),
  optimized_for: request.optimized_for ?? skinEnhancerDefaults.optimized_for
})

/** This folder's groups, under what every endpoint shares: its handlers are built against these alone. */
const api = registryApi(ImageProxyApi, SimulatedImagesApi, ImageCallbacksApi)

const ImageProxyLive = HttpApiBuilder.group(api, "imageProxy", (handlers) =>
  Effect.map(ImageTasks, (tasks) =>
    handlers
      .handle("startStyleTransfer", ({ headers, payload }) =>
        answer(Effect.map(tasks.start("image-style-transfer", payload, headers["idempotency-key"]), toWire)))
      .handle("startSkinEnhancer", ({ headers, payload }) =>
        answer(Effect.map(tasks.start("skin-enhancer/creative", withSkinDefaults(payload), headers["idempotency-key"]), enveloped)))
      .handle("startSkinEnhancerFaithful", ({ headers, payload }) =>
        answer(Effect.map(tasks.start("skin-enhancer/faithful", withFaithfulDefaults(payload), headers["idempotency-key"]), enveloped)))
      .handle("startSkinEnhancerFlexible", ({ headers, payload }) =>
        answer(Effect.map(tasks.start("skin-enhancer/flexible", withFlexibleDefaults(payload), headers["idempotency-key"]), enveloped)))
      .handle("pollStyleTransfer", ({ params }) => answer(Effect.map(tasks.poll("image-style-transfer", params.task_id), enveloped)))
      .handle("pollSkinEnhancer", ({ params }) => answer(Effect.map(tasks.poll("skin-enhancer", params.task_id), enveloped)))))

const ImageCallbacksLive = HttpApiBuilder.group(api, "imageCallbacks", (handlers) =>
  Effect.map(ImageTasks, (tasks) =>
    handlers.handle("imageVendorCallback", ({ params, payload }) => answer(tasks.callback(params.token, payload)))))

const simulatedFile = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.png$/i

const SimulatedImagesLive = HttpApiBuilder.group(api, "simulatedImages", (handlers) =>
  Effect.gen(function*() {
    const { vendorMode } = yield* AppConfig
    const pngOf = cachedSimulatedPngs()
    return handlers.handle("simulatedImage", ({ params }) => {
      const match = simulatedFile.exec(params.file)
      return vendorMode === "simulated" && match
        ? Effect.sync(() => pngOf(match[1]!.toLowerCase()))
        : Effect.fail(new NotFound({ message: `No simulated image '${params.file}'` }))
    })
  }))

/** This folder's handlers, with the services they use (src/App.ts provides what every feature shares). */
export const ImagesHttp = Layer.mergeAll(ImageProxyLive, SimulatedImagesLive, ImageCallbacksLive).pipe(Layer.provide(ImageTasks.layer))
