/**
 * The image proxy as the host's API nodes call it: comfy_api_nodes/nodes_magnific.py
 * (MagnificImageSkinEnhancerNode in its three modes, MagnificImageStyleTransferNode), with the
 * request models of comfy_api_nodes/apis/magnific.py and the transport of
 * comfy_api_nodes/util/client.py:
 * - `sync_op` POSTs `model_dump(exclude_none=True)` as JSON (Python's separators), with
 *   `Accept` of any type and the user's bearer token;
 * - `poll_op` GETs with the same `Accept` and token, with no body, until the status (compared
 *   without case) is `completed`;
 * - `TaskResponse` reads `task_id`, `status` (or `task_status`) and `generated`, under `data` or
 *   flat, and the node downloads `generated[0]` and decodes it as an image.
 * Each mode polls at `skin-enhancer/{task_id}`, whichever path started it.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { PNG } from "pngjs"
import { fetchText, parseJson } from "../support/Http.ts"
import { freshStart, simulatedAtPublicUrl, tokenOf, vendorPaths, withFakeVendor } from "../support/ImageProxy.ts"
import { type Running, Service } from "../support/Service.ts"

/** What the node uploaded its image to and sends: a download URL of the media storage. */
const uploaded = "https://storage.example/media/4b1c0e6a/image.png"
const uploadedReference = "https://storage.example/media/9d2f7a10/reference.png"

/** `json.dumps` as aiohttp calls it: `", "` and `": "` between the fields, in the model's order. */
const pythonJson = (body: Readonly<Record<string, unknown>>) =>
  `{${Object.entries(body).map(([key, value]) => `${JSON.stringify(key)}: ${JSON.stringify(value)}`).join(", ")}}`

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

/** `sync_op` with a request model. */
const syncOp = (service: Running, token: string, path: string, body: Readonly<Record<string, unknown>>) =>
  Effect.promise(() => fetchText(service, "POST", path, { token, raw: pythonJson(body), headers: { accept: "*/*" } }))

/** One request of `poll_op`. */
const pollOnce = (service: Running, token: string, path: string) =>
  Effect.promise(() => fetchText(service, "GET", path, { token, headers: { accept: "*/*" } }))

/** `TaskResponse.model_validate`: the task under `data` or flat, `status` or `task_status`. */
const taskResponse = (status: number, text: string) => {
  expect(status, text).toBe(200)
  const json = parseJson(text, "the proxy's answer") as Record<string, unknown>
  const task = (typeof json.data === "object" && json.data !== null ? json.data : json) as Record<string, unknown>
  const read = { task_id: task.task_id, status: task.status ?? task.task_status, generated: task.generated ?? null }
  expect(typeof read.task_id).toBe("string")
  expect(typeof read.status).toBe("string")
  return read as { task_id: string; status: string; generated: ReadonlyArray<string> | null }
}

/** `poll_op` until `completed` (at most a few polls here: the vendors in these tests finish fast). */
const pollUntilCompleted = (service: Running, token: string, path: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 4; i++) {
      const answer = yield* pollOnce(service, token, path)
      const task = taskResponse(answer.status, answer.text)
      if (task.status.toLowerCase() === "completed") return task
    }
    return expect.unreachable(`${path} never answered completed`)
  })

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
