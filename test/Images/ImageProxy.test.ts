/**
 * The image proxy over real HTTP against a loopback fake vendor: what the vendor receives (the
 * key, the body, the defaults), the shapes of its answers normalised, polling and ownership,
 * every vendor failure mapped as CONTRACT.md says, no vendor configured, and simulated mode.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { bearerClient, clientFor } from "../support/Client.ts"
import { queryOne } from "../support/Db.ts"
import { FakeImageVendor } from "../support/FakeImageVendor.ts"
import { expectError, expectStatus, get, send } from "../support/Http.ts"
import {
  expectFlatTask,
  expectWrappedTask,
  freshStart,
  paths,
  skinBody,
  skinModes,
  styleBody,
  tokenOf,
  vendorKey,
  vendorKeyHeader,
  vendorFailureCases,
  vendorPaths,
  withFakeVendor
} from "../support/ImageProxy.ts"
import { type Running, Service } from "../support/Service.ts"

const taskCount = (service: Running) =>
  Effect.map(queryOne<{ n: number }>(service, "SELECT count(*)::int AS n FROM media_tasks"), (row) => row!.n)

const startStyle = (service: Running, token: string, body: unknown = styleBody) =>
  send(service, "POST", paths.style, { token, body })

const startSkin = (service: Running, token: string, body: unknown = skinBody) =>
  send(service, "POST", paths.skin, { token, body })

layer(withFakeVendor(), { excludeTestServices: true })("image proxy against a vendor", (it) => {
  it.effect("style transfer: the vendor gets the body and the key, the caller a flat CREATED task", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      const task = expectFlatTask(yield* startStyle(service, token))
      expect(task).toEqual({ task_id: task.task_id, status: "CREATED", generated: [] })

      const [request] = fake.requests()
      expect(fake.requests()).toHaveLength(1)
      expect(request!.method).toBe("POST")
      expect(request!.path).toBe(vendorPaths.style)
      expect(request!.headers[vendorKeyHeader]).toBe(vendorKey)
      expect(request!.headers["content-type"]).toMatch(/^application\/json/)
      // the caller's own credentials stay with us
      expect(request!.headers.authorization).toBeUndefined()
      expect(request!.body).toEqual(styleBody)

      const row = yield* queryOne(service, "SELECT owner_id, kind, status, vendor_task_id FROM media_tasks WHERE id = $1", [task.task_id])
      expect(row).toEqual({ owner_id: "ann", kind: "image-style-transfer", status: "CREATED", vendor_task_id: task.task_id })
    }))

  it.effect("skin enhancer: defaults applied before forwarding, the task answered under data", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      const task = expectWrappedTask(yield* startSkin(service, token))
      expect(task.status).toBe("CREATED")
      expect(fake.requests().map((r) => [r.method, r.path, r.body])).toEqual([
        ["POST", vendorPaths.skin, { image: skinBody.image, sharpen: 0, smart_grain: 2 }]
      ])
      fake.clearRequests()
      expectWrappedTask(yield* startSkin(service, token, { image: skinBody.image, sharpen: 100, smart_grain: 0, webhook_url: "https://hooks.example/x" }))
      // the client's webhook_url stays here; the vendor is handed this service's callback URL
      expect(fake.requests()[0]!.body).toEqual({ image: skinBody.image, sharpen: 100, smart_grain: 0 })
      expect(fake.requests()[0]!.callbackUrl).toMatch(/^http:\/\/127\.0\.0\.1\/proxy\/imagevendor\/callbacks\/[A-Za-z0-9_-]{43}$/)
    }))

  it.effect("skin enhancer faithful and flexible: their defaults too, each at its own vendor path, the task under data", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      for (const { defaults, path, vendorPath } of skinModes.filter((m) => m.mode !== "creative")) {
        fake.clearRequests()
        const task = expectWrappedTask(yield* send(service, "POST", path, { token, body: skinBody }), path)
        expect(task.status).toBe("CREATED")
        expect(fake.requests().map((r) => [r.method, r.path, r.body])).toEqual([
          ["POST", vendorPath, { image: skinBody.image, sharpen: 0, smart_grain: 2, ...defaults }]
        ])
        const row = yield* queryOne(service, "SELECT owner_id, kind, status FROM media_tasks WHERE id = $1", [task.task_id])
        expect(row).toEqual({ owner_id: "ann", kind: "skin-enhancer", status: "CREATED" })
      }
      fake.clearRequests()
      const faithful = { image: skinBody.image, sharpen: 10, smart_grain: 100, skin_detail: 0, webhook_url: "https://hooks.example/f" }
      const flexible = { image: skinBody.image, sharpen: 100, smart_grain: 0, optimized_for: "no_make_up" }
      expectWrappedTask(yield* send(service, "POST", paths.skinFaithful, { token, body: faithful }))
      expectWrappedTask(yield* send(service, "POST", paths.skinFlexible, { token, body: flexible }))
      const { webhook_url: _, ...faithfulForwarded } = faithful
      expect(fake.requests().map((r) => [r.path, r.body])).toEqual([[vendorPaths.skinFaithful, faithfulForwarded], [vendorPaths.skinFlexible, flexible]])
    }))

  it.effect("faithful and flexible tasks are polled like creative's, at skin-enhancer/{task_id}, by their owner only", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      const client = yield* bearerClient(service, token)
      const bob = yield* tokenOf(service, "bob")
      const started = [
        (yield* client.api.imageProxy.startSkinEnhancerFaithful({ payload: { ...skinBody, skin_detail: 55 }, headers: {} })).data,
        (yield* client.api.imageProxy.startSkinEnhancerFlexible({ payload: { ...skinBody, optimized_for: "improve_lighting" }, headers: {} })).data
      ]
      for (const task of started) {
        fake.clearRequests()
        fake.behave({ kind: "task" })
        fake.script(task.task_id, ["IN_PROGRESS", "COMPLETED"])
        const poll = Effect.map(client.api.imageProxy.pollSkinEnhancer({ params: { task_id: task.task_id } }), ({ data }) => data)
        expect((yield* poll).status).toBe("IN_PROGRESS")
        fake.behave({ kind: "task", generated: ["https://cdn.example/skin.png"] })
        expect(yield* poll).toEqual({ task_id: task.task_id, status: "COMPLETED", generated: ["https://cdn.example/skin.png"] })
        expect(fake.requests().map((r) => [r.method, r.path])).toEqual([
          ["GET", vendorPaths.skinPoll(task.task_id)],
          ["GET", vendorPaths.skinPoll(task.task_id)]
        ])
        expectError(yield* get(service, paths.skinPoll(task.task_id), { token: bob }), 404, "not_found")
        expectError(yield* get(service, paths.stylePoll(task.task_id), { token }), 404, "not_found")
      }
    }))

  it.effect("one Idempotency-Key names one request across the skin enhancer's modes", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      const withKey = (path: string, key: string) => send(service, "POST", path, { token, body: skinBody, headers: { "idempotency-key": key } })
      const first = expectWrappedTask(yield* withKey(paths.skinFaithful, "mode-key-1"))
      expect(expectWrappedTask(yield* withKey(paths.skinFaithful, "mode-key-1")).task_id).toBe(first.task_id)
      expectError(yield* withKey(paths.skin, "mode-key-1"), 409, "idempotency_key_reused")
      expectError(yield* withKey(paths.skinFlexible, "mode-key-1"), 409, "idempotency_key_reused")
      expect(fake.requests()).toHaveLength(1)
      expectWrappedTask(yield* withKey(paths.skinFlexible, "mode-key-2"))
      expect(fake.requests().map((r) => r.path)).toEqual([vendorPaths.skinFaithful, vendorPaths.skinFlexible])
    }))

  it.effect("the vendor's answer shapes are normalised: wrapped, flat, task_status, generated missing", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeImageVendor
      const token = yield* tokenOf(service, "ann")
      for (const shape of ["wrapped", "flat", "task_status"] as const) {
        for (const generated of [null, [], ["https://cdn.example/a.png"]]) {
          fake.reset()
          fake.behave({ kind: "task", shape, status: "CREATED", generated })
          const style = expectFlatTask(yield* startStyle(service, token), `style transfer, ${shape}`)
          expect(style.status).toBe("CREATED")
          expect(style.generated).toEqual(generated ?? [])
          const skin = expectWrappedTask(yield* startSkin(service, token), `skin enhancer, ${shape}`)
          expect(skin.status).toBe("CREATED")
          expect(skin.generated).toEqual(generated ?? [])
        }
      }
    }))

  it.effect("a vendor task id that is not a UUID gets one of ours; polls ask the vendor by its own id", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      const client = yield* bearerClient(service, token)
      fake.behave({ kind: "task", taskId: "vendor-task-42" })
      const task = yield* client.api.imageProxy.startStyleTransfer({ payload: styleBody, headers: {} })
      expect(task.task_id).not.toBe("vendor-task-42")
      fake.behave({ kind: "task", status: "COMPLETED", generated: ["https://cdn.example/out.png"] })
      fake.clearRequests()
      const { data: polled } = yield* client.api.imageProxy.pollStyleTransfer({ params: { task_id: task.task_id } })
      expect(polled).toEqual({ task_id: task.task_id, status: "COMPLETED", generated: ["https://cdn.example/out.png"] })
      expect(fake.requests().map((r) => r.path)).toEqual([vendorPaths.stylePoll("vendor-task-42")])
    }))

  it.effect("a vendor repeating a task id: the second task gets an id of ours, both stay pollable", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      fake.behave({ kind: "task", taskId: "5d1f0c2e-8a4b-4c3d-9e2f-1a2b3c4d5e6f" })
      const first = expectFlatTask(yield* startStyle(service, token))
      const second = expectFlatTask(yield* startStyle(service, token))
      expect(first.task_id).toBe("5d1f0c2e-8a4b-4c3d-9e2f-1a2b3c4d5e6f")
      expect(second.task_id).not.toBe(first.task_id)
      fake.behave({ kind: "task" })
      expectWrappedTask(yield* get(service, paths.stylePoll(first.task_id), { token }))
      expectWrappedTask(yield* get(service, paths.stylePoll(second.task_id), { token }))
    }))

  it.effect("polls follow the vendor to COMPLETED, then answer from the database without asking it", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      const client = yield* bearerClient(service, token)
      const { data: task } = yield* client.api.imageProxy.startSkinEnhancer({ payload: skinBody, headers: {} })
      const poll = Effect.map(client.api.imageProxy.pollSkinEnhancer({ params: { task_id: task.task_id } }), ({ data }) => data)
      fake.behave({ kind: "task", shape: "task_status" })
      fake.script(task.task_id, ["IN_PROGRESS", "COMPLETED"])
      const first = yield* poll
      expect(first.status).toBe("IN_PROGRESS")
      fake.behave({ kind: "task", shape: "flat", generated: ["https://cdn.example/skin.png"] })
      const second = yield* poll
      expect(second).toEqual({ task_id: task.task_id, status: "COMPLETED", generated: ["https://cdn.example/skin.png"] })
      fake.clearRequests()
      fake.behave({ kind: "status", status: 500 })
      const third = yield* poll
      expect(third).toEqual(second)
      expect(fake.requests()).toEqual([])
    }))

  it.effect("an unknown vendor status is not stored; a backwards one is not either", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      const task = expectFlatTask(yield* startStyle(service, token))
      fake.script(task.task_id, ["IN_PROGRESS", "QUEUED", "CREATED", "FAILED", "IN_PROGRESS"])
      const seen: Array<string> = []
      for (let i = 0; i < 5; i++) {
        seen.push(expectWrappedTask(yield* get(service, paths.stylePoll(task.task_id), { token })).status)
      }
      expect(seen).toEqual(["IN_PROGRESS", "IN_PROGRESS", "IN_PROGRESS", "FAILED", "FAILED"])
    }))

  it.effect("a task is its owner's alone and of its own kind: 404 otherwise, the vendor not asked", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeImageVendor
      fake.reset()
      const ann = yield* tokenOf(service, "ann")
      const bob = yield* tokenOf(service, "bob")
      const task = expectFlatTask(yield* startStyle(service, ann))
      fake.clearRequests()
      expectError(yield* get(service, paths.stylePoll(task.task_id), { token: bob }), 404, "not_found")
      expectError(yield* get(service, paths.skinPoll(task.task_id), { token: ann }), 404, "not_found")
      expectError(yield* get(service, paths.stylePoll("not-a-uuid"), { token: ann }), 404, "not_found")
      expectError(yield* get(service, paths.stylePoll("0b7c9a52-3f7e-4d2a-9c1e-5a8f3b2d1e00"), { token: ann }), 404, "not_found")
      expect(fake.requests()).toEqual([])
      expectWrappedTask(yield* get(service, paths.stylePoll(task.task_id), { token: ann }))
    }))

  it.effect("without a bearer token: 401, the vendor not called", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeImageVendor
      fake.reset()
      expectError(yield* send(service, "POST", paths.style, { body: styleBody }), 401, "unauthorized")
      for (const { path } of skinModes) expectError(yield* send(service, "POST", path, { body: skinBody }), 401, "unauthorized")
      expectError(yield* get(service, paths.stylePoll("0b7c9a52-3f7e-4d2a-9c1e-5a8f3b2d1e00")), 401, "unauthorized")
      expect(fake.requests()).toEqual([])
    }))


  for (const f of vendorFailureCases) {
    it.effect(`vendor ${f.name} -> ${f.status} ${f.code}, on start and on poll`, () =>
      Effect.gen(function*() {
        const service = yield* Service
        const fake = yield* FakeImageVendor
        fake.reset()
        const token = yield* tokenOf(service, "ann")
        const task = expectFlatTask(yield* startStyle(service, token))
        const before = yield* taskCount(service)
        fake.behave(f.behaviour)
        for (const answer of [yield* startStyle(service, token), yield* startSkin(service, token), yield* get(service, paths.stylePoll(task.task_id), { token })]) {
          const e = expectError(answer, f.status, f.code)
          if ("message" in f) expect(e.message).toBe(f.message)
          if ("retryAfter" in f) expect(answer.headers.get("retry-after")).toBe(f.retryAfter)
        }
        // the failed starts recorded nothing; the task kept its status
        expect(yield* taskCount(service)).toBe(before)
        fake.behave({ kind: "task" })
        expect(expectWrappedTask(yield* get(service, paths.stylePoll(task.task_id), { token })).status).toBe("IN_PROGRESS")
      }))
  }

  it.effect("a vendor message that echoes the key reaches the caller scrubbed", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      fake.behave({ kind: "status", status: 400, body: { message: `key ${vendorKey} may not use engine softy` } })
      const answer = yield* startStyle(service, token)
      const e = expectError(answer, 400, "bad_request")
      expect(e.message).toBe("key [redacted] may not use engine softy")
      expect(answer.text).not.toContain(vendorKey)
    }))
})

layer(withFakeVendor((c) => ({ ...c, imageVendor: { ...c.imageVendor, baseUrl: Option.none(), apiKey: Option.none() } })), {
  excludeTestServices: true
})("image proxy without a vendor configured", (it) => {
  it.effect("503 vendor_not_configured naming the settings to set; no task recorded", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeImageVendor
      const token = yield* tokenOf(service, "ann")
      for (const answer of [yield* startStyle(service, token), yield* startSkin(service, token)]) {
        const e = expectError(answer, 503, "vendor_not_configured")
        expect(e.message).toContain("IMAGEVENDOR_BASE_URL")
        expect(e.message).toContain("IMAGEVENDOR_API_KEY")
      }
      expect(fake.requests()).toEqual([])
      expect(yield* queryOne<{ n: number }>(service, "SELECT count(*)::int AS n FROM media_tasks")).toEqual({ n: 0 })
    }))
})

layer(withFakeVendor((c) => ({ ...c, vendorMode: "simulated" })), { excludeTestServices: true })("image proxy, simulated", (it) => {
  it.effect("tasks reach COMPLETED over polls with an image that opens offline; every answer says simulated", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeImageVendor
      const token = yield* tokenOf(service, "ann")
      const started = yield* startStyle(service, token)
      expect(started.headers.get("x-vendor-mode")).toBe("simulated")
      const task = expectFlatTask(started)
      expect(task.status).toBe("CREATED")
      const statuses: Array<string> = []
      let last = task
      for (let i = 0; i < 4 && last.status !== "COMPLETED"; i++) {
        const polled = yield* get(service, paths.stylePoll(task.task_id), { token })
        expect(polled.headers.get("x-vendor-mode")).toBe("simulated")
        last = expectWrappedTask(polled)
        statuses.push(last.status)
      }
      expect(statuses).toEqual(["IN_PROGRESS", "COMPLETED"])
      expect(last.generated).toHaveLength(1)
      const imagePath = new URL(last.generated[0]!).pathname
      expect(imagePath).toMatch(/^\/proxy\/imagevendor\/simulated\/[^/]+$/)
      const anyone = yield* clientFor(service)
      const [png, image] = yield* anyone.api.simulatedImages.simulatedImage({
        params: { file: imagePath.split("/").at(-1)! },
        responseMode: "decoded-and-response"
      })
      expect(image.status).toBe(200)
      expect(image.headers["content-type"]).toMatch(/^image\/png/)
      expect(image.headers["x-vendor-mode"]).toBe("simulated")
      expect(Buffer.from(png.subarray(0, 8)).toString("hex")).toBe("89504e470d0a1a0a")
      expectError(yield* get(service, imagePath.replace(/\.png$/, ".svg")), 404, "not_found")

      const skin = yield* startSkin(service, token)
      expect(skin.headers.get("x-vendor-mode")).toBe("simulated")
      expectWrappedTask(skin)
      // errors are marked too
      const bad = yield* startStyle(service, token, { image: styleBody.image })
      expect(bad.headers.get("x-vendor-mode")).toBe("simulated")
      expectError(bad, 400, "bad_request")
      expect(fake.requests()).toEqual([])
      // other routes are not the proxy's
      expect((yield* get(service, "/health")).headers.get("x-vendor-mode")).toBeNull()
    }))
})

layer(withFakeVendor(), { excludeTestServices: true })("image proxy, live", (it) => {
  it.effect("no simulated images and no simulated header in live mode", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const answer = yield* get(service, "/proxy/imagevendor/simulated/0b7c9a52-3f7e-4d2a-9c1e-5a8f3b2d1e00.png")
      expectError(answer, 404, "not_found")
      expect(answer.headers.get("x-vendor-mode")).toBeNull()
      expectStatus(yield* get(service, "/health"), 200, "health")
    }))
})
