/**
 * The image vendor's other operations (upscaler, precision upscaler v2, relight) for the tests:
 * their paths, the bodies the host's API nodes send (comfy_api_nodes/nodes_magnific.py with the
 * request models of comfy_api_nodes/apis/magnific.py), the defaults the proxy fills in, and the
 * host's transport (comfy_api_nodes/util/client.py: `sync_op` POSTs
 * `model_dump(exclude_none=True)` as JSON with Python's separators and `Accept: *\/*`; `poll_op`
 * GETs until the status, compared without case, is `completed`; `TaskResponse` reads the task
 * flat or under `data`, `status` or `task_status`).
 */
import { Effect } from "effect"
import { expect } from "vitest"
import { fetchText, parseJson } from "./Http.ts"
import type { Running } from "./Service.ts"

/** What the node uploaded its image to and sends: a download URL of the media storage. */
export const uploaded = "https://storage.example/media/4b1c0e6a/image.png"
export const uploadedReference = "https://storage.example/media/9d2f7a10/reference.png"

export type OperationName = "image-upscaler" | "image-upscaler-precision-v2" | "image-relight"

export interface Operation {
  readonly name: OperationName
  readonly path: string
  readonly vendorPath: string
  readonly poll: (taskId: string) => string
  readonly vendorPoll: (taskId: string) => string
  /** The body the host's node sends with its widgets' defaults. */
  readonly nodeBody: Readonly<Record<string, unknown>>
  /** What the proxy sends the vendor for `{image}` alone. */
  readonly defaults: Readonly<Record<string, unknown>>
}

const operation = (
  name: OperationName,
  nodeBody: Readonly<Record<string, unknown>>,
  defaults: Readonly<Record<string, unknown>>
): Operation => ({
  name,
  path: `/proxy/imagevendor/v1/ai/${name}`,
  vendorPath: `/v1/ai/${name}`,
  poll: (taskId) => `/proxy/imagevendor/v1/ai/${name}/${taskId}`,
  vendorPoll: (taskId) => `/v1/ai/${name}/${taskId}`,
  nodeBody,
  defaults
})

/** MagnificImageUpscalerCreativeNode with its defaults, the prompt empty (so left out). */
export const upscaler = operation("image-upscaler", {
  image: uploaded,
  scale_factor: "2x",
  optimized_for: "standard",
  creativity: 0,
  hdr: 0,
  resemblance: 0,
  fractality: 0,
  engine: "automatic"
}, { scale_factor: "2x", optimized_for: "standard", creativity: 0, hdr: 0, resemblance: 0, fractality: 0, engine: "automatic" })

/** MagnificImageUpscalerPreciseV2Node with its defaults: `scale_factor` an integer here. */
export const precision = operation("image-upscaler-precision-v2", {
  image: uploaded,
  sharpen: 7,
  smart_grain: 7,
  ultra_detail: 30,
  flavor: "sublime",
  scale_factor: 2
}, { sharpen: 7, smart_grain: 7, ultra_detail: 30 })

/** MagnificImageRelightNode with its defaults: advanced settings disabled, no reference, empty prompt. */
export const relight = operation("image-relight", {
  image: uploaded,
  light_transfer_strength: 100,
  interpolate_from_original: false,
  change_background: true,
  style: "standard",
  preserve_details: true
}, { light_transfer_strength: 100, interpolate_from_original: false, change_background: true, style: "standard", preserve_details: true })

/** MagnificImageRelightNode with advanced settings enabled (their widget defaults), a prompt and a reference image. */
export const relightAdvanced = {
  image: uploaded,
  prompt: "(golden hour:1.3), warm rim light",
  transfer_light_from_reference_image: uploadedReference,
  light_transfer_strength: 60,
  interpolate_from_original: true,
  change_background: false,
  style: "contrasted_n_hdr",
  preserve_details: true,
  advanced_settings: {
    whites: 50,
    blacks: 50,
    brightness: 50,
    contrast: 50,
    saturation: 50,
    engine: "automatic",
    transfer_light_a: "automatic",
    transfer_light_b: "automatic",
    fixed_generation: true
  }
}

export const operations = [upscaler, precision, relight] as const

/** `json.dumps` as aiohttp calls it: `", "` and `": "` between the fields, in the model's order. */
export const pythonJson = (body: unknown): string =>
  Array.isArray(body)
    ? `[${body.map(pythonJson).join(", ")}]`
    : typeof body === "object" && body !== null
    ? `{${Object.entries(body).map(([key, value]) => `${JSON.stringify(key)}: ${pythonJson(value)}`).join(", ")}}`
    : JSON.stringify(body)

/** `sync_op` with a request model. */
export const syncOp = (service: Running, token: string, path: string, body: Readonly<Record<string, unknown>>, headers: Record<string, string> = {}) =>
  Effect.promise(() => fetchText(service, "POST", path, { token, raw: pythonJson(body), headers: { accept: "*/*", ...headers } }))

/** One request of `poll_op`. */
export const pollOnce = (service: Running, token: string, path: string) =>
  Effect.promise(() => fetchText(service, "GET", path, { token, headers: { accept: "*/*" } }))

export interface NodeTask {
  readonly task_id: string
  readonly status: string
  readonly generated: ReadonlyArray<string> | null
}

/** `TaskResponse.model_validate`: the task under `data` or flat, `status` or `task_status`. */
export const taskResponse = (status: number, text: string): NodeTask => {
  expect(status, text).toBe(200)
  const json = parseJson(text, "the proxy's answer") as Record<string, unknown>
  const task = (typeof json.data === "object" && json.data !== null ? json.data : json) as Record<string, unknown>
  const read = { task_id: task.task_id, status: task.status ?? task.task_status, generated: task.generated ?? null }
  expect(typeof read.task_id).toBe("string")
  expect(typeof read.status).toBe("string")
  return read as NodeTask
}

/** `poll_op` until `completed` (at most a few polls: the vendors in these tests finish fast). */
export const pollUntilCompleted = (service: Running, token: string, path: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 4; i++) {
      const answer = yield* pollOnce(service, token, path)
      const task = taskResponse(answer.status, answer.text)
      if (task.status.toLowerCase() === "completed") return task
    }
    return expect.unreachable(`${path} never answered completed`)
  })
