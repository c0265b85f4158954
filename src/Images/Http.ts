/** The image proxy's handlers: the schemas validate, ImageTasks does the rest. */
import { HttpApiBuilder } from "effect/http-api"
import { Effect, Layer } from "effect"
import { ImageCallbacksApi, ImageProxyApi, SimulatedImagesApi } from "./Api.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
import { AppConfig } from "../Config.ts"
import { BadRequest, IdempotencyKeyInProgress, IdempotencyKeyReused, NotFound, QuotaExceeded } from "../Domain/ApiErrors.ts"
import {
  isOwnMediaUrl,
  MediaTaskEnvelope,
  type PrecisionUpscalerRequest,
  precisionUpscalerDefaults,
  relightAdvancedDefaults,
  relightDefaults,
  type RelightRequest,
  type SkinEnhancerFaithfulRequest,
  type SkinEnhancerFlexibleRequest,
  type SkinEnhancerRequest,
  skinEnhancerDefaults,
  skinImageRefusal,
  upscalerDefaults,
  type UpscalerRequest
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
  OverQuota: QuotaExceeded,
  CallbackUnknown: NotFound,
  CallbackRefused: BadRequest
})

const enveloped = (task: Parameters<typeof toWire>[0]) => new MediaTaskEnvelope({ data: toWire(task) }, { disableChecks: true })

/**
 * The skin enhancer's image, where its schema let a plain-http media URL through: kept when it is
 * this service's own media file, refused as the schema refuses any other http URL.
 */
const ownImageOnly = (publicBaseUrl: string) => (image: string): Effect.Effect<void, BadRequest> =>
  image.startsWith("http:") && !isOwnMediaUrl(image, publicBaseUrl)
    ? Effect.fail(new BadRequest({ message: `Invalid value for 'image': ${skinImageRefusal}` }))
    : Effect.void

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

// the vendor's documented defaults under the request's own fields: what is forwarded, and what a key is bound to
const withUpscalerDefaults = (request: UpscalerRequest) => ({ ...upscalerDefaults, ...request })

const withPrecisionDefaults = (request: PrecisionUpscalerRequest) => ({ ...precisionUpscalerDefaults, ...request })

const withRelightDefaults = (request: RelightRequest) => ({
  ...relightDefaults,
  ...request,
  ...(request.advanced_settings === undefined ? {} : { advanced_settings: { ...relightAdvancedDefaults, ...request.advanced_settings } })
})

/** This folder's groups, under what every endpoint shares: its handlers are built against these alone. */
const api = registryApi(ImageProxyApi, SimulatedImagesApi, ImageCallbacksApi)

const ImageProxyLive = HttpApiBuilder.group(api, "imageProxy", (handlers) =>
  Effect.gen(function*() {
    const tasks = yield* ImageTasks
    const ownImage = ownImageOnly((yield* AppConfig).publicBaseUrl)
    return handlers
      .handle("startStyleTransfer", ({ headers, payload }) =>
        answer(Effect.map(tasks.start("image-style-transfer", payload, headers["idempotency-key"]), toWire)))
      .handle("startSkinEnhancer", ({ headers, payload }) =>
        Effect.andThen(
          ownImage(payload.image),
          answer(Effect.map(tasks.start("skin-enhancer/creative", withSkinDefaults(payload), headers["idempotency-key"]), enveloped))
        ))
      .handle("startSkinEnhancerFaithful", ({ headers, payload }) =>
        Effect.andThen(
          ownImage(payload.image),
          answer(Effect.map(tasks.start("skin-enhancer/faithful", withFaithfulDefaults(payload), headers["idempotency-key"]), enveloped))
        ))
      .handle("startSkinEnhancerFlexible", ({ headers, payload }) =>
        Effect.andThen(
          ownImage(payload.image),
          answer(Effect.map(tasks.start("skin-enhancer/flexible", withFlexibleDefaults(payload), headers["idempotency-key"]), enveloped))
        ))
      .handle("startImageUpscaler", ({ headers, payload }) =>
        answer(Effect.map(tasks.start("image-upscaler", withUpscalerDefaults(payload), headers["idempotency-key"]), enveloped)))
      .handle("startImageUpscalerPrecisionV2", ({ headers, payload }) =>
        answer(Effect.map(tasks.start("image-upscaler-precision-v2", withPrecisionDefaults(payload), headers["idempotency-key"]), enveloped)))
      .handle("startImageRelight", ({ headers, payload }) =>
        answer(Effect.map(tasks.start("image-relight", withRelightDefaults(payload), headers["idempotency-key"]), enveloped)))
      .handle("pollImageUpscaler", ({ params }) => answer(Effect.map(tasks.poll("image-upscaler", params.task_id), enveloped)))
      .handle("pollImageUpscalerPrecisionV2", ({ params }) =>
        answer(Effect.map(tasks.poll("image-upscaler-precision-v2", params.task_id), enveloped)))
      .handle("pollImageRelight", ({ params }) => answer(Effect.map(tasks.poll("image-relight", params.task_id), enveloped)))
      .handle("pollStyleTransfer", ({ params }) => answer(Effect.map(tasks.poll("image-style-transfer", params.task_id), enveloped)))
      .handle("pollSkinEnhancer", ({ params }) => answer(Effect.map(tasks.poll("skin-enhancer", params.task_id), enveloped)))
  }))

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
