import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import {
  IdempotencyKeyInProgress,
  IdempotencyKeyReused,
  NotFound,
  QuotaExceeded,
  RateLimited,
  UpstreamError,
  UpstreamTimeout,
  VendorNotConfigured
} from "../Domain/ApiErrors.ts"
import { KeyOrBearerAuthentication } from "../Domain/Auth.ts"
import {
  IdempotencyKey,
  MediaTask,
  MediaTaskEnvelope,
  PrecisionUpscalerRequest,
  precisionUpscalerDefaults,
  relightAdvancedDefaults,
  relightDefaults,
  RelightRequest,
  SkinEnhancerFaithfulRequest,
  SkinEnhancerFlexibleRequest,
  type SkinEnhancerMode,
  SkinEnhancerRequest,
  simulatedImageSize,
  skinEnhancerDefaults,
  StyleTransferRequest,
  upscalerDefaults,
  UpscalerRequest
} from "../Domain/Media.ts"
import { field, JsonObject, optionalField, PathParam, refusingBody } from "../Domain/Schemas.ts"

/** `Idempotency-Key` on the POSTs: the same key and body within 24 hours answer the same task. */
const IdempotencyHeaders = Schema.Struct({
  "idempotency-key": optionalField(
    IdempotencyKey,
    "Key of the request, 1 to 255 printable ASCII characters: repeated with the same body within 24 hours, it answers the same task"
  )
})

const TaskPath = Schema.Struct({ task_id: field(PathParam, "Identifier of the task") })

const vendorFailures = "Vendor failures: its 400/422 is 400 with its message, 401/403 and 5xx are 502 upstream_error, 404 is 404, 429 is 429 with Retry-After, no answer in time is 504 upstream_timeout; no vendor configured is 503 vendor_not_configured."

const quota = "Over a quota of the caller (operations per day, tasks in flight) it is 429 quota_exceeded with Retry-After, RateLimit-Policy and RateLimit, before the vendor is called; a start takes one operation of the day (given back if the vendor call fails) and holds one task in flight until the task is COMPLETED or FAILED."

const idempotency = "With `Idempotency-Key` (1 to 255 printable characters), the same caller repeating the same key and body within 24 hours gets the same task and the vendor is called once; the same key with another body is 409 idempotency_key_reused; a repeat while the first request is still waiting for the vendor waits for it (409 idempotency_key_in_progress if it takes longer than the vendor timeout)."

/** How every image operation may fail, as the vendor does (its refusal is BadRequest, which every endpoint declares). */
const vendorErrors = [NotFound, RateLimited, UpstreamError, VendorNotConfigured, UpstreamTimeout] as const

/** A start of a skin enhancer mode: the same contract for the three, each with its own body. */
const skinEnhancerStart = <const Name extends string, Payload extends Schema.Top>(
  name: Name,
  mode: SkinEnhancerMode,
  payload: Payload,
  fields: string
) =>
  HttpApiEndpoint.post(name, `/proxy/imagevendor/v1/ai/skin-enhancer/${mode}`, {
    headers: IdempotencyHeaders,
    payload,
    success: MediaTaskEnvelope,
    error: [IdempotencyKeyReused, IdempotencyKeyInProgress, QuotaExceeded, ...vendorErrors]
  })
    .annotate(HttpApi.PayloadParseOptions, refusingBody)
    .annotate(OpenApi.Summary, `Skin enhancer (${mode})`)
    .annotate(OpenApi.Description, `Starts a task at the image vendor (defaults ${fields} applied before forwarding) and answers {data: task}; poll it at /proxy/imagevendor/v1/ai/skin-enhancer/{task_id}. ${idempotency} ${quota} ${vendorFailures}`)

/** A start of one of the vendor's other operations: answered `{data: task}`, as the skin enhancer is. */
const operationStart = <const Name extends string, Payload extends Schema.Top>(
  name: Name,
  operation: string,
  payload: Payload,
  summary: string,
  defaults: string
) =>
  HttpApiEndpoint.post(name, `/proxy/imagevendor/v1/ai/${operation}`, {
    headers: IdempotencyHeaders,
    payload,
    success: MediaTaskEnvelope,
    error: [IdempotencyKeyReused, IdempotencyKeyInProgress, QuotaExceeded, ...vendorErrors]
  })
    .annotate(HttpApi.PayloadParseOptions, refusingBody)
    .annotate(OpenApi.Summary, summary)
    .annotate(OpenApi.Description, `Starts a task at the image vendor (${defaults}) and answers {data: task}; poll it at /proxy/imagevendor/v1/ai/${operation}/{task_id}. ${idempotency} ${quota} ${vendorFailures}`)

/** `{a: 1, b: "x"}` as `a 1, b x`, for the documents. */
const listed = (defaults: Readonly<Record<string, unknown>>) =>
  Object.entries(defaults).map(([key, value]) => `${key} ${String(value)}`).join(", ")

const sharedSkinDefaults = `sharpen ${skinEnhancerDefaults.sharpen}, smart_grain ${skinEnhancerDefaults.smart_grain}`

/** A status poll: the same contract for both kinds of task. */
const pollEndpoint = <const Name extends string>(name: Name, path: `/${string}`, summary: string) =>
  HttpApiEndpoint.get(name, path, { params: TaskPath, success: MediaTaskEnvelope, error: vendorErrors })
    .annotate(OpenApi.Summary, summary)
    .annotate(OpenApi.Description, `The caller's own task only (404 otherwise). The vendor is asked until the task is COMPLETED or FAILED; the status answered never moves backwards. ${vendorFailures}`)

/**
 * The image operations of the media proxy; tasks are visible to whoever started them only. Each
 * may fail as the vendor does (`vendorErrors`); starts with a key also as idempotency does.
 */
export class ImageProxyApi extends HttpApiGroup.make("imageProxy")
  .add(
    HttpApiEndpoint.post("startStyleTransfer", "/proxy/imagevendor/v1/ai/image-style-transfer", {
      headers: IdempotencyHeaders,
      payload: StyleTransferRequest,
      success: MediaTask,
      error: [IdempotencyKeyReused, IdempotencyKeyInProgress, QuotaExceeded, ...vendorErrors]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Image style transfer")
      .annotate(OpenApi.Description, `Starts a task at the image vendor and answers it flat: {task_id, status: CREATED, generated}. \`image\` and \`reference_image\` are required. ${idempotency} ${quota} ${vendorFailures}`)
  )
  .add(skinEnhancerStart("startSkinEnhancer", "creative", SkinEnhancerRequest, sharedSkinDefaults))
  .add(skinEnhancerStart(
    "startSkinEnhancerFaithful",
    "faithful",
    SkinEnhancerFaithfulRequest,
    `${sharedSkinDefaults}, skin_detail ${skinEnhancerDefaults.skin_detail}`
  ))
  .add(skinEnhancerStart(
    "startSkinEnhancerFlexible",
    "flexible",
    SkinEnhancerFlexibleRequest,
    `${sharedSkinDefaults}, optimized_for ${skinEnhancerDefaults.optimized_for}`
  ))
  .add(operationStart(
    "startImageUpscaler",
    "image-upscaler",
    UpscalerRequest,
    "Image upscaler (creative)",
    `\`image\` required; defaults ${listed(upscalerDefaults)} applied before forwarding`
  ))
  .add(operationStart(
    "startImageUpscalerPrecisionV2",
    "image-upscaler-precision-v2",
    PrecisionUpscalerRequest,
    "Image upscaler (precision, v2)",
    `\`image\` required; defaults ${listed(precisionUpscalerDefaults)} applied before forwarding, \`flavor\` and \`scale_factor\` left to the vendor`
  ))
  .add(operationStart(
    "startImageRelight",
    "image-relight",
    RelightRequest,
    "Image relight",
    `\`image\` required, at most one of \`transfer_light_from_reference_image\` and \`transfer_light_from_lightmap\`; defaults ${listed(relightDefaults)} applied before forwarding, and in \`advanced_settings\`, when given, ${listed(relightAdvancedDefaults)}`
  ))
  .add(pollEndpoint("pollStyleTransfer", "/proxy/imagevendor/v1/ai/image-style-transfer/:task_id", "Status of a style transfer task"))
  .add(pollEndpoint("pollSkinEnhancer", "/proxy/imagevendor/v1/ai/skin-enhancer/:task_id", "Status of a skin enhancer task, of any mode"))
  .add(pollEndpoint("pollImageUpscaler", "/proxy/imagevendor/v1/ai/image-upscaler/:task_id", "Status of a creative upscaler task"))
  .add(pollEndpoint(
    "pollImageUpscalerPrecisionV2",
    "/proxy/imagevendor/v1/ai/image-upscaler-precision-v2/:task_id",
    "Status of a precision upscaler (v2) task"
  ))
  .add(pollEndpoint("pollImageRelight", "/proxy/imagevendor/v1/ai/image-relight/:task_id", "Status of a relight task"))
  .middleware(KeyOrBearerAuthentication)
  .annotate(OpenApi.Title, "Media proxy")
{}

/** The images of the simulated vendor (VENDOR_MODE=simulated): public, so that their URLs open anywhere. */
export class SimulatedImagesApi extends HttpApiGroup.make("simulatedImages")
  .add(
    HttpApiEndpoint.get("simulatedImage", "/proxy/imagevendor/simulated/:file", {
      params: { file: field(PathParam, "Name of the image file: {task_id}.png") },
      success: Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array({ contentType: "image/png" })),
      error: [NotFound]
    })
      .annotate(OpenApi.Summary, "An image generated by the simulated image vendor")
      .annotate(OpenApi.Description, `Only with VENDOR_MODE=simulated (404 otherwise): \`{task_id}.png\`, a ${simulatedImageSize}x${simulatedImageSize} RGB PNG drawn from the task id (the same bytes for the same id).`)
  )
  .annotate(OpenApi.Title, "Media proxy")
{}

/**
 * Where the image vendor reports a task's progress: the URL it was handed for that task alone
 * (`PUBLIC_BASE_URL/proxy/imagevendor/callbacks/{token}`). No authentication: the unguessable
 * token is the proof, and the payload must name the token's task.
 */
export class ImageCallbacksApi extends HttpApiGroup.make("imageCallbacks")
  .add(
    HttpApiEndpoint.post("imageVendorCallback", "/proxy/imagevendor/callbacks/:token", {
      params: { token: field(PathParam, "The task's callback token, as handed to the vendor") },
      payload: JsonObject,
      success: HttpApiSchema.NoContent,
      error: [NotFound]
    })
      .annotate(OpenApi.Summary, "The image vendor's callback of one task")
      .annotate(OpenApi.Description, "For the vendor only: the task as its poll answers it (flat or under `data`). It updates the task exactly as a poll would; when the task has finished and was started with a `webhook_url`, a signed delivery to it is queued in the same transaction. An unknown token is 404; a payload naming another task is 400 and changes nothing.")
  )
  .annotate(OpenApi.Title, "Media proxy")
{}
