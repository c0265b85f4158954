/**
 * The image proxy as the host's API nodes call it: comfy_api_nodes/nodes_magnific.py
 * (MagnificImageSkinEnhancerNode in its three modes, MagnificImageStyleTransferNode), with the
 * request models of comfy_api_nodes/apis/magnific.py and the transport of
 * comfy_api_nodes/util/client.py (`sync_op`, `poll_op`, `TaskResponse`: test/support/ApiNodes.ts);
 * the node downloads `generated[0]` and decodes it as an image. Each skin enhancer mode polls at
 * `skin-enhancer/{task_id}`, whichever path started it. The upscalers' and relight's nodes are in
 * ImageOperations.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { PNG } from "pngjs"
import { pollUntilCompleted, syncOp, taskResponse, uploaded, uploadedReference } from "../support/ApiNodes.ts"
import { parseJson } from "../support/Http.ts"
import { freshStart, simulatedAtPublicUrl, tokenOf, vendorPaths, withFakeVendor } from "../support/ImageProxy.ts"
import { Service } from "../support/Service.ts"

/** Each mode as the node builds its request with its widgets' defaults (`mode` picks the path). */
const skinModes = [
  { mode: "creative", body: { image: uploaded, sharpen: 0, smart_grain: 2 } },
  { mode: "faithful", body: { image: uploaded, sharpen: 0, smart_grain: 2, skin_detail: 80 } },
  { mode: "flexible", body: { image: uploaded, sharpen: 0, smart_grain: 2, optimized_for: "enhance_skin" } },
  { mode: "flexible", body: { image: uploaded, sharpen: 35, smart_grain: 0, optimized_for: "transform_to_real" } }
] as const

/** The style transfer node with its defaults, portrait mode disabled (the `None` fields left out). */
const styleTransfer = {
  image: uploaded,
  reference_image: uploadedReference,
  style_strength: 100,
  structure_strength: 50,
  is_portrait: false,
  flavor: "faithful",
  engine: "balanced",
  fixed_generation: true
}

layer(withFakeVendor(), { excludeTestServices: true })("nodes_magnific.py against a vendor", (it) => {
  it.effect("the skin enhancer node, each mode: the vendor gets the node's body as sent, polls at skin-enhancer/{task_id}", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      for (const { body, mode } of skinModes) {
        fake.reset()
        const started = yield* syncOp(service, token, `/proxy/imagevendor/v1/ai/skin-enhancer/${mode}`, body)
        const task = taskResponse(started.status, started.text)
        expect(task.status.toLowerCase()).toBe("created")
        expect(fake.requests().map((r) => [r.method, r.path, r.body])).toEqual([["POST", `/v1/ai/skin-enhancer/${mode}`, body]])

        fake.script(task.task_id, ["IN_PROGRESS", "COMPLETED"])
        fake.behave({ kind: "task", generated: ["https://cdn.example/skin.png"] })
        const done = yield* pollUntilCompleted(service, token, `/proxy/imagevendor/v1/ai/skin-enhancer/${task.task_id}`)
        expect(done).toEqual({ task_id: task.task_id, status: "COMPLETED", generated: ["https://cdn.example/skin.png"] })
        expect(fake.requests().filter((r) => r.method === "GET").map((r) => r.path)).toEqual([
          vendorPaths.skinPoll(task.task_id),
          vendorPaths.skinPoll(task.task_id)
        ])
      }
    }))

  it.effect("the style transfer node: its body as sent, the task flat, polled at image-style-transfer/{task_id}", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      const started = yield* syncOp(service, token, "/proxy/imagevendor/v1/ai/image-style-transfer", styleTransfer)
      const task = taskResponse(started.status, started.text)
      expect(parseJson(started.text, "start")).toEqual({ task_id: task.task_id, status: "CREATED", generated: [] })
      expect(fake.requests().map((r) => r.body)).toEqual([styleTransfer])
      const portrait = { ...styleTransfer, is_portrait: true, portrait_style: "super_pop", portrait_beautifier: "beautify_face_max" }
      const second = yield* syncOp(service, token, "/proxy/imagevendor/v1/ai/image-style-transfer", portrait)
      taskResponse(second.status, second.text)
      expect(fake.requests()[1]!.body).toEqual(portrait)

      fake.behave({ kind: "task", status: "COMPLETED", generated: ["https://cdn.example/style.png"] })
      const done = yield* pollUntilCompleted(service, token, `/proxy/imagevendor/v1/ai/image-style-transfer/${task.task_id}`)
      expect(done.generated).toEqual(["https://cdn.example/style.png"])
    }))
})

layer(simulatedAtPublicUrl, { excludeTestServices: true })("nodes_magnific.py against the simulated vendor", (it) => {
  it.effect("every node finishes: generated[0] downloads without credentials and decodes as an image", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* tokenOf(service, "ann")
      const runs = [
        ...skinModes.map(({ body, mode }) => ({ start: `/proxy/imagevendor/v1/ai/skin-enhancer/${mode}`, poll: "/proxy/imagevendor/v1/ai/skin-enhancer/", body })),
        { start: "/proxy/imagevendor/v1/ai/image-style-transfer", poll: "/proxy/imagevendor/v1/ai/image-style-transfer/", body: styleTransfer }
      ]
      for (const run of runs) {
        const started = yield* syncOp(service, token, run.start, run.body)
        const { task_id } = taskResponse(started.status, started.text)
        const done = yield* pollUntilCompleted(service, token, run.poll + task_id)
        const bytes = yield* Effect.promise(() => fetch(done.generated![0]!).then((r) => r.arrayBuffer()))
        const image = PNG.sync.read(Buffer.from(bytes))
        expect(image.width * image.height, run.start).toBeGreaterThan(0)
      }
    }))
})
