/**
 * The image vendor's other operations over real HTTP: the creative upscaler, the precision
 * upscaler (v2) and relight, each started and polled as the host's API nodes do it
 * (comfy_api_nodes/nodes_magnific.py: MagnificImageUpscalerCreativeNode,
 * MagnificImageUpscalerPreciseV2Node, MagnificImageRelightNode; request models in
 * comfy_api_nodes/apis/magnific.py; transport in comfy_api_nodes/util/client.py), against the
 * loopback fake vendor and against the simulated one; the vendor's documented defaults filled in,
 * each task polled only at its own path by its owner, Idempotency-Key, and every vendor failure
 * mapped as the existing operations map it.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { PNG } from "pngjs"
import { queryOne } from "../support/Db.ts"
import { FakeImageVendor } from "../support/FakeImageVendor.ts"
import { expectBadRequest, expectError, get, parseJson, send } from "../support/Http.ts"
import {
  expectWrappedTask,
  freshStart,
  pngBase64,
  simulatedAtPublicUrl,
  tokenOf,
  vendorFailureCases,
  withFakeVendor
} from "../support/ImageProxy.ts"
import { pollUntilCompleted, syncOp, taskResponse } from "../support/ApiNodes.ts"
import { operations, relight, relightAdvanced, upscaler } from "../support/ImageOperations.ts"
import { type Running, Service } from "../support/Service.ts"

const taskCount = (service: Running) =>
  Effect.map(queryOne<{ n: number }>(service, "SELECT count(*)::int AS n FROM media_tasks"), (row) => row!.n)

const statusAndText = (reply: { readonly status: number; readonly text: string }) => [reply.status, reply.text] as const

/** Each node's request: its widgets' defaults, and relight with everything enabled. */
const nodeRuns = [
  ...operations.map((op) => ({ op, body: op.nodeBody })),
  { op: relight, body: relightAdvanced }
]

layer(withFakeVendor(), { excludeTestServices: true })("the image vendor's other operations against a vendor", (it) => {
  it.effect("each node's request reaches the vendor as sent; {data: CREATED}; polled at its own path to COMPLETED", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      for (const { body, op } of nodeRuns) {
        fake.reset()
        const started = yield* syncOp(service, token, op.path, body)
        // the answer is the envelope the vendor's contract gives: {data: task}
        const envelope = parseJson(started.text, op.path) as { data: unknown }
        expect(Object.keys(envelope)).toEqual(["data"])
        const task = taskResponse(started.status, started.text)
        expect(task.status).toBe("CREATED")
        expect(fake.requests().map((r) => [r.method, r.path, r.body])).toEqual([["POST", op.vendorPath, body]])

        fake.script(task.task_id, ["IN_PROGRESS", "COMPLETED"])
        fake.behave({ kind: "task", generated: [`https://cdn.example/${op.name}.png`] })
        const done = yield* pollUntilCompleted(service, token, op.poll(task.task_id))
        expect(done).toEqual({ task_id: task.task_id, status: "COMPLETED", generated: [`https://cdn.example/${op.name}.png`] })
        expect(fake.requests().filter((r) => r.method === "GET").map((r) => r.path)).toEqual([
          op.vendorPoll(task.task_id),
          op.vendorPoll(task.task_id)
        ])
        // finished: answered from the record, the vendor not asked again
        expect(expectWrappedTask(yield* get(service, op.poll(task.task_id), { token })).status).toBe("COMPLETED")
        expect(fake.requests().filter((r) => r.method === "GET")).toHaveLength(2)
      }
    }))

  it.effect("a body of `image` alone reaches the vendor with the documented defaults", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      for (const op of operations) {
        fake.reset()
        expectWrappedTask(yield* send(service, "POST", op.path, { token, body: { image: pngBase64 } }))
        expect(fake.requests().map((r) => r.body)).toEqual([{ ...op.defaults, image: pngBase64 }])
      }
      // relight's advanced settings, partly given, get the rest of theirs
      fake.reset()
      expectWrappedTask(yield* send(service, "POST", relight.path, { token, body: { image: pngBase64, advanced_settings: { contrast: 80, engine: "fairy" } } }))
      expect(fake.requests()[0]!.body).toEqual({
        ...relight.defaults,
        image: pngBase64,
        advanced_settings: {
          whites: 50,
          blacks: 50,
          brightness: 50,
          contrast: 80,
          saturation: 50,
          engine: "fairy",
          transfer_light_a: "automatic",
          transfer_light_b: "automatic",
          fixed_generation: false
        }
      })
    }))

  it.effect("relight takes a reference image or a lightmap, not both: 400 naming both, the vendor not called", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      const both = { image: pngBase64, transfer_light_from_reference_image: pngBase64, transfer_light_from_lightmap: "https://maps.example/l.png" }
      const answer = yield* send(service, "POST", relight.path, { token, body: both })
      expectBadRequest(answer, "transfer_light_from_reference_image")
      expectBadRequest(answer, "transfer_light_from_lightmap")
      const { transfer_light_from_reference_image: _, ...lightmapOnly } = both
      expectWrappedTask(yield* send(service, "POST", relight.path, { token, body: lightmapOnly }))
      expect(fake.requests().map((r) => r.path)).toEqual([relight.vendorPath])
    }))

  it.effect("the precision upscaler takes https URLs and base64 only, as the vendor documents; the others take http too", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      const plain = "http://images.example/photo.png"
      const [precisionOp, ...others] = [operations[1], operations[0], operations[2]]
      expectBadRequest(yield* send(service, "POST", precisionOp.path, { token, body: { image: plain } }), "image")
      for (const op of others) expectWrappedTask(yield* send(service, "POST", op.path, { token, body: { image: plain } }))
      expect(fake.requests()).toHaveLength(2)
    }))

  it.effect("a task is polled only at its own operation's path and by its owner: 404 otherwise, the vendor not asked", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      const other = yield* tokenOf(service, "bob")
      for (const op of operations) {
        const task = expectWrappedTask(yield* send(service, "POST", op.path, { token, body: op.nodeBody }))
        fake.clearRequests()
        for (const elsewhere of operations.filter((o) => o !== op)) {
          expectError(yield* get(service, elsewhere.poll(task.task_id), { token }), 404, "not_found")
        }
        expectError(yield* get(service, `/proxy/imagevendor/v1/ai/image-style-transfer/${task.task_id}`, { token }), 404, "not_found")
        expectError(yield* get(service, op.poll(task.task_id), { token: other }), 404, "not_found")
        expect(fake.requests()).toEqual([])
        expect(expectWrappedTask(yield* get(service, op.poll(task.task_id), { token })).task_id).toBe(task.task_id)
      }
    }))

  it.effect("Idempotency-Key: a repeat answers the same task with one vendor call; another body is 409; keys are per operation", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      for (const op of operations) {
        fake.reset()
        const headers = { "idempotency-key": "render-42" }
        const first = taskResponse(...statusAndText(yield* syncOp(service, token, op.path, op.nodeBody, headers)))
        const again = taskResponse(...statusAndText(yield* syncOp(service, token, op.path, op.nodeBody, headers)))
        expect(again.task_id).toBe(first.task_id)
        expect(fake.requests().filter((r) => r.method === "POST")).toHaveLength(1)
        const changed = { ...op.nodeBody, image: pngBase64 }
        expectError(yield* send(service, "POST", op.path, { token, body: changed, headers }), 409, "idempotency_key_reused")
      }
    }))

  for (const f of vendorFailureCases) {
    it.effect(`vendor ${f.name} -> ${f.status} ${f.code}, on every operation's start and poll`, () =>
      Effect.gen(function*() {
        const service = yield* Service
        const fake = yield* FakeImageVendor
        fake.reset()
        const token = yield* tokenOf(service, "ann")
        const tasks = yield* Effect.forEach(operations, (op) =>
          Effect.map(send(service, "POST", op.path, { token, body: op.nodeBody }), (answer) => expectWrappedTask(answer)))
        const before = yield* taskCount(service)
        fake.behave(f.behaviour)
        // all at once: a hanging vendor costs one timeout, not six
        const answers = yield* Effect.all(
          operations.flatMap((op, i) => [
            send(service, "POST", op.path, { token, body: op.nodeBody }),
            get(service, op.poll(tasks[i]!.task_id), { token })
          ]),
          { concurrency: "unbounded" }
        )
        for (const answer of answers) {
          const e = expectError(answer, f.status, f.code)
          if ("message" in f) expect(e.message).toBe(f.message)
          if ("retryAfter" in f) expect(answer.headers.get("retry-after")).toBe(f.retryAfter)
        }
        // the failed starts recorded nothing; the tasks kept their status
        expect(yield* taskCount(service)).toBe(before)
        fake.behave({ kind: "task" })
        for (const [i, op] of operations.entries()) {
          expect(expectWrappedTask(yield* get(service, op.poll(tasks[i]!.task_id), { token })).status).toBe("IN_PROGRESS")
        }
      }))
  }
})

layer(simulatedAtPublicUrl, { excludeTestServices: true })("the image vendor's other operations, simulated", (it) => {
  it.effect("each node finishes: CREATED, then COMPLETED, and generated[0] downloads without credentials as a PNG", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* tokenOf(service, "ann")
      for (const { body, op } of nodeRuns) {
        const started = yield* syncOp(service, token, op.path, body)
        expect(started.headers.get("x-vendor-mode")).toBe("simulated")
        const task = taskResponse(started.status, started.text)
        expect(task.status).toBe("CREATED")
        const done = yield* pollUntilCompleted(service, token, op.poll(task.task_id))
        expect(done.generated).toHaveLength(1)
        const response = yield* Effect.promise(() => fetch(done.generated![0]!))
        expect(response.status).toBe(200)
        expect(response.headers.get("content-type")).toMatch(/^image\/png/)
        const image = PNG.sync.read(Buffer.from(yield* Effect.promise(() => response.arrayBuffer())))
        expect(image.width * image.height, op.name).toBeGreaterThan(0)
      }
      // bad input is refused in simulated mode too
      expectBadRequest(yield* send(service, "POST", upscaler.path, { token, body: { ...upscaler.nodeBody, scale_factor: "3x" } }), "scale_factor")
    }))
})
