/** The image proxy's handlers: the schemas validate, ImageTasks does the rest. */
import { HttpApiBuilder, HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.ts"
import { AppConfig } from "../Config.ts"
import { NotFound } from "../Domain/ApiErrors.ts"
import { MediaTaskEnvelope, type SkinEnhancerRequest, skinEnhancerDefaults } from "../Domain/Media.ts"
import { answer } from "../Errors.ts"
import { ImageTasks, toWire } from "./Service.ts"

const enveloped = (task: Parameters<typeof toWire>[0]) => new MediaTaskEnvelope({ data: toWire(task) }, true)

/** The request as forwarded, and as an Idempotency-Key is bound to it: the defaults applied. */
const withSkinDefaults = (request: SkinEnhancerRequest) => ({
  ...request,
  sharpen: request.sharpen ?? skinEnhancerDefaults.sharpen,
  smart_grain: request.smart_grain ?? skinEnhancerDefaults.smart_grain
})

export const ImageProxyLive = HttpApiBuilder.group(Api, "imageProxy", (handlers) =>
  Effect.map(ImageTasks, (tasks) =>
    handlers
      .handle("startStyleTransfer", ({ headers, payload }) =>
        answer(Effect.map(tasks.start("image-style-transfer", payload, headers["idempotency-key"]), toWire)))
      .handle("startSkinEnhancer", ({ headers, payload }) =>
        answer(Effect.map(tasks.start("skin-enhancer", withSkinDefaults(payload), headers["idempotency-key"]), enveloped)))
      .handle("pollStyleTransfer", ({ path }) => answer(Effect.map(tasks.poll("image-style-transfer", path.task_id), enveloped)))
      .handle("pollSkinEnhancer", ({ path }) => answer(Effect.map(tasks.poll("skin-enhancer", path.task_id), enveloped)))))

const simulatedFile = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.svg$/i

/** A small picture, its colours taken from the task id, so that each task shows its own. */
const simulatedSvg = (taskId: string) => {
  const hue = parseInt(taskId.slice(0, 6), 16) % 360
  return `<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512" viewBox="0 0 512 512">
<defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1">
<stop offset="0" stop-color="hsl(${hue},70%,60%)"/><stop offset="1" stop-color="hsl(${(hue + 140) % 360},70%,40%)"/>
</linearGradient></defs>
<rect width="512" height="512" fill="url(#g)"/>
<text x="256" y="240" font-family="sans-serif" font-size="40" text-anchor="middle" fill="#fff">simulated</text>
<text x="256" y="290" font-family="monospace" font-size="16" text-anchor="middle" fill="#fff">${taskId}</text>
</svg>
`
}

export const SimulatedImagesLive = HttpApiBuilder.group(Api, "simulatedImages", (handlers) =>
  Effect.gen(function*() {
    const { vendorMode } = yield* AppConfig
    return handlers.handle("simulatedImage", ({ path }) => {
      const match = simulatedFile.exec(path.file)
      return vendorMode === "simulated" && match
        ? Effect.succeed(simulatedSvg(match[1]!.toLowerCase()))
        : Effect.fail(new NotFound({ message: `No simulated image '${path.file}'` }))
    })
  }))

/**
 * With VENDOR_MODE=simulated every answer of the image proxy, errors included, carries
 * `x-vendor-mode: simulated`, so that nobody mistakes its images for a vendor's.
 */
export const SimulatedModeHeader = HttpApiBuilder.middleware(
  Effect.map(AppConfig, (config) => (app) =>
    config.vendorMode !== "simulated"
      ? app
      : Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        request.url.startsWith("/proxy/imagevendor/")
          ? Effect.zipRight(
            HttpApp.appendPreResponseHandler((_request, response) =>
              Effect.succeed(HttpServerResponse.setHeader(response, "x-vendor-mode", "simulated"))
            ),
            app
          )
          : app))
)
