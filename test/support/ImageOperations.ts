/**
 * The image vendor's other operations (upscaler, precision upscaler v2, relight) for the tests:
 * their paths, the bodies the host's API nodes send (comfy_api_nodes/nodes_magnific.py with the
 * request models of comfy_api_nodes/apis/magnific.py) and the defaults the proxy fills in. The
 * host's transport is in ApiNodes.ts.
 */
import { uploaded, uploadedReference } from "./ApiNodes.ts"

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
