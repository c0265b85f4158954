/**
 * Webhooks through the proxy, over real HTTP on real PostgreSQL with the job runner: the vendor
 * (the loopback fake) is handed a callback URL of this service and calls it as the vendor would;
 * the client's webhook_url (a loopback receiver, WEBHOOK_ALLOW_PRIVATE_TARGETS on) gets our
 * payload, signed, verified here with the `standardwebhooks` package, the reference. In simulated
 * mode the simulated vendor calls back by itself.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Webhook } from "standardwebhooks"
import { query, queryOne } from "../support/Db.ts"
import { eventually } from "../support/Eventually.ts"
import type { FakeVendor } from "../support/FakeImageVendor.ts"
import { expectError, expectStatus, get, send } from "../support/Http.ts"
import { expectWrappedTask, freshStart, paths, skinBody, withFakeVendor } from "../support/ImageProxy.ts"
import { tcpForwarder } from "../support/Forwarder.ts"
import { type Running, Service, serviceOnFreshDatabase } from "../support/Service.ts"
import { WebhookReceiver } from "../support/WebhookReceiver.ts"

/** Short retries and a quick look for due jobs, so that a retried delivery lands within a test. */
const fastRetries = withFakeVendor((c) => ({
  ...c,
  jobs: { ...c.jobs, pollIntervalMillis: 50 },
  webhooks: { ...c.webhooks, allowPrivateTargets: true, retryBaseMillis: 150 }
}))

/** The fake's callback for `taskId`, sent to this service (the URL it was given has PUBLIC_BASE_URL's origin, without the port). */
const callBack = (service: Running, fake: FakeVendor, taskId: string, options: { body?: unknown; generated?: ReadonlyArray<string> } = {}) =>
  Effect.promise(() => fake.callBack(taskId, { ...options, url: service.baseUrl + new URL(fake.callbackUrlOf(taskId)!).pathname }))

const vendorTaskIdOf = (fake: FakeVendor) => {
  const started = [...fake.callbackUrlOfAll()]
  return started[started.length - 1]!
}

const taskRow = (service: Running, id: string) =>
  queryOne<{ status: string; generated: Array<string> }>(service, "SELECT status, generated FROM media_tasks WHERE id = $1", [id])

const secretOf = (service: Running, token: string) =>
  Effect.map(get(service, "/customers/webhooks/secret", { token }), (a) => (expectStatus(a, 200, "secret").body as { secret: string }).secret)

const deliveriesOf = (service: Running, token: string, query = "") =>
  Effect.map(get(service, `/customers/webhooks/deliveries${query}`, { token }), (a) =>
    expectStatus(a, 200, "deliveries").body as {
      total: number
      page: number
      pageSize: number
      totalPages: number
      deliveries: Array<{ id: string; task_id: string; status: string; event_type: string; target_url: string; attempts: Array<{ attempt: number; attempted_at: string; status_code?: number; error?: string; duration_ms: number }> }>
    })

const layers = Layer.merge(fastRetries, WebhookReceiver.layer)

layer(layers, { excludeTestServices: true, timeout: 60_000 })("webhooks through the proxy", (it) => {
  it.effect("a callback with an unknown token, of another task, or without a task is refused and changes nothing", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      const receiver = yield* WebhookReceiver
      receiver.reset()
      const mine = expectWrappedTask(yield* send(service, "POST", paths.skin, { token, body: { ...skinBody, webhook_url: `${receiver.url}/hook` } }))
      const vendorId = vendorTaskIdOf(fake)
      const other = expectWrappedTask(yield* send(service, "POST", paths.skin, { token, body: skinBody }))
      const otherVendorId = vendorTaskIdOf(fake)
      expect(otherVendorId).not.toBe(vendorId)
      // the refusals are ErrorResponses, as every answer of the service's
      const callbackPath = new URL(fake.callbackUrlOf(vendorId)!).pathname
      const completed = (taskId: string) => ({ data: { task_id: taskId, status: "COMPLETED", generated: ["https://x.example/1.png"] } })
      // a guessed token
      expectError(yield* send(service, "POST", callbackPath.replace(/[^/]+$/, "A".repeat(43)), { body: completed(vendorId) }), 404)
      // the right URL, another task's payload
      expectError(yield* send(service, "POST", callbackPath, { body: completed(otherVendorId) }), 400)
      // the right URL, no task at all
      expectError(yield* send(service, "POST", callbackPath, { body: { status: "COMPLETED" } }), 400)
      for (const id of [mine.task_id, other.task_id]) expect(yield* taskRow(service, id)).toEqual({ status: "CREATED", generated: [] })
      expect(yield* query(service, "SELECT 1 FROM webhook_deliveries WHERE task_id = ANY($1::uuid[])", [[mine.task_id, other.task_id]])).toEqual([])
      yield* Effect.sleep(200)
      expect(receiver.received()).toEqual([])
    }))

  it.effect("a valid callback finishes the task, as a poll would, and the client's webhook gets our signed payload", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart("bea")
      const receiver = yield* WebhookReceiver
      receiver.reset()
      const task = expectWrappedTask(yield* send(service, "POST", paths.skin, { token, body: { ...skinBody, webhook_url: `${receiver.url}/hook?x=1` } }))
      const generated = ["https://cdn.imagevendor.example/a.png"]
      expect(yield* callBack(service, fake, vendorTaskIdOf(fake), { generated })).toBe(204)
      expect(yield* taskRow(service, task.task_id)).toEqual({ status: "COMPLETED", generated })
      const { value: hooks } = yield* eventually(Effect.sync(() => receiver.received()), (r) => r.length === 1, 5000)
      const hook = hooks[0]!
      expect(hook.path).toBe("/hook?x=1")
      // verified by the reference implementation with the secret the customer reads
      const secret = yield* secretOf(service, token)
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
      const verified = new Webhook(secret).verify(hook.body, hook.headers) as { type: string; timestamp: string; data: unknown }
      expect(verified.type).toBe("task.completed")
      expect(Date.parse(verified.timestamp)).toBeGreaterThan(Date.now() - 60_000)
      // the data is the task as its poll answers it
      const polled = expectStatus(yield* get(service, paths.skinPoll(task.task_id), { token }), 200, "poll").body as { data: unknown }
      expect(verified.data).toEqual(polled.data)
      expect(polled.data).toEqual({ task_id: task.task_id, status: "COMPLETED", generated })
      // a wrong secret does not verify
      expect(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString("base64")}`).verify(hook.body, hook.headers)).toThrow()
      // a repeated callback changes nothing and sends nothing more
      expect(yield* callBack(service, fake, vendorTaskIdOf(fake), { generated })).toBe(204)
      yield* Effect.sleep(300)
      expect(receiver.received().length).toBe(1)
      const page = yield* deliveriesOf(service, token)
      expect(page).toMatchObject({ total: 1, page: 1, totalPages: 1 })
      expect(page.deliveries[0]).toMatchObject({ id: hook.headers["webhook-id"], task_id: task.task_id, status: "succeeded", event_type: "task.completed", target_url: `${receiver.url}/hook?x=1` })
      expect(page.deliveries[0]!.attempts).toMatchObject([{ attempt: 1, status_code: 204 }])
      // another user sees none of it
      expect((yield* deliveriesOf(service, yield* Effect.promise(() => service.token({ sub: "cid" })))).total).toBe(0)
    }))

  it.effect("the job runner's connections cut by PostgreSQL are survived: the next delivery arrives", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart("cyd")
      const receiver = yield* WebhookReceiver
      receiver.reset()
      // every connection of the runner (its LISTEN and its pool's), as an administrator or a
      // restart would end them: a lost connection in use must not be an uncaught exception
      const cut = yield* query(
        service,
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()
           AND (query LIKE 'LISTEN "jobs%' OR query ILIKE '%graphile_worker%')`
      )
      expect(cut.length).toBeGreaterThan(0)
      const task = expectWrappedTask(yield* send(service, "POST", paths.skin, { token, body: { ...skinBody, webhook_url: `${receiver.url}/after-cut` } }))
      expect(yield* callBack(service, fake, vendorTaskIdOf(fake), { generated: ["https://cdn.imagevendor.example/c.png"] })).toBe(204)
      const { value: hooks } = yield* eventually(Effect.sync(() => receiver.received()), (r) => r.length === 1, 15_000)
      expect(hooks[0]!.path).toBe("/after-cut")
      expect(JSON.parse(hooks[0]!.body).data.task_id).toBe(task.task_id)
    }))

  it.effect("a task's result is the same whether the vendor's word came by poll or by callback", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      const generated = ["https://cdn.imagevendor.example/same.png"]
      const byPoll = expectWrappedTask(yield* send(service, "POST", paths.skin, { token, body: skinBody }))
      fake.behave({ kind: "task", status: "COMPLETED", generated, shape: "flat" })
      const polled = expectWrappedTask(yield* get(service, paths.skinPoll(byPoll.task_id), { token }))
      fake.reset()
      const byCallback = expectWrappedTask(yield* send(service, "POST", paths.skin, { token, body: skinBody }))
      expect(yield* callBack(service, fake, vendorTaskIdOf(fake), { body: { task_id: vendorTaskIdOf(fake), status: "completed", generated } })).toBe(204)
      const called = expectWrappedTask(yield* get(service, paths.skinPoll(byCallback.task_id), { token }))
      expect({ ...called, task_id: "x" }).toEqual({ ...polled, task_id: "x" })
      // no webhook_url, no delivery
      expect(yield* query(service, "SELECT 1 FROM webhook_deliveries WHERE task_id = ANY($1::uuid[])", [[byPoll.task_id, byCallback.task_id]])).toEqual([])
    }))

  it.effect("a failing target is retried with growing delays until it answers 2xx; every attempt is listed; redirects are not followed", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart("dan")
      const receiver = yield* WebhookReceiver
      receiver.reset()
      receiver.answer(500, 302, 503, 200)
      expectWrappedTask(yield* send(service, "POST", paths.skin, { token, body: { ...skinBody, webhook_url: `${receiver.url}/flaky` } }))
      expect(yield* callBack(service, fake, vendorTaskIdOf(fake))).toBe(204)
      const { value: hooks } = yield* eventually(Effect.sync(() => receiver.received()), (r) => r.length === 4, 15_000, 25)
      expect(hooks.length).toBe(4)
      // the same message each time (id and body), signed anew
      expect(new Set(hooks.map((h) => h.headers["webhook-id"])).size).toBe(1)
      expect(new Set(hooks.map((h) => h.body)).size).toBe(1)
      const secret = yield* secretOf(service, token)
      for (const hook of hooks) new Webhook(secret).verify(hook.body, hook.headers)
      const gaps = hooks.slice(1).map((h, i) => h.at - hooks[i]!.at)
      // at least 150, 300, 600 ms apart (plus the time to find a due job): the delay doubles
      gaps.forEach((gap, i) => expect(gap, `gap ${i}: ${gaps.join(", ")}`).toBeGreaterThanOrEqual(150 * 2 ** i - 15))
      const { value: page } = yield* eventually(deliveriesOf(service, token), (p) => p.deliveries[0]?.status === "succeeded", 3000)
      expect(page.deliveries[0]!.attempts.map((a) => [a.attempt, a.status_code, a.error])).toEqual([
        [1, 500, undefined],
        [2, 302, "redirect not followed"],
        [3, 503, undefined],
        [4, 200, undefined]
      ])
      for (const a of page.deliveries[0]!.attempts) expect(a.duration_ms).toBeGreaterThanOrEqual(0)
    }))

  it.effect("a user's first secret is made once, however many ask for it at the same moment", () =>
    Effect.gen(function*() {
      const { service, token } = yield* freshStart("fay")
      const secrets = yield* Effect.all(Array.from({ length: 20 }, () => secretOf(service, token)), { concurrency: "unbounded" })
      expect(new Set(secrets).size).toBe(1)
    }))

  it.effect("rotation: the new secret signs at once, and the previous one still verifies during the grace period", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart("eve")
      const receiver = yield* WebhookReceiver
      receiver.reset()
      const before = yield* secretOf(service, token)
      expect(yield* secretOf(service, token)).toBe(before)
      const rotated = expectStatus(yield* send(service, "POST", "/customers/webhooks/secret/rotate", { token }), 200, "rotate").body as { secret: string; previous_valid_until: string }
      expect(rotated.secret).not.toBe(before)
      expect(Date.parse(rotated.previous_valid_until)).toBeGreaterThan(Date.now() + 23 * 3600_000)
      expect(yield* secretOf(service, token)).toBe(rotated.secret)
      expectWrappedTask(yield* send(service, "POST", paths.skin, { token, body: { ...skinBody, webhook_url: `${receiver.url}/r` } }))
      expect(yield* callBack(service, fake, vendorTaskIdOf(fake), { body: { task_id: vendorTaskIdOf(fake), status: "FAILED" } })).toBe(204)
      const { value: hooks } = yield* eventually(Effect.sync(() => receiver.received()), (r) => r.length === 1, 5000)
      const hook = hooks[0]!
      expect(hook.headers["webhook-signature"]!.split(" ")).toHaveLength(2)
      expect((new Webhook(rotated.secret).verify(hook.body, hook.headers) as { type: string }).type).toBe("task.failed")
      new Webhook(before).verify(hook.body, hook.headers)
      // the secret endpoints need a signed-in caller
      expectError(yield* get(service, "/customers/webhooks/secret"), 401)
    }))
})

/** The same service without the setting: a private target is refused at delivery time. */
const refusing = withFakeVendor((c) => ({
  ...c,
  jobs: { ...c.jobs, pollIntervalMillis: 50 },
  webhooks: { ...c.webhooks, allowPrivateTargets: false, retryBaseMillis: 60_000 }
}))

layer(Layer.merge(refusing, WebhookReceiver.layer), { excludeTestServices: true, timeout: 60_000 })("webhook targets", (it) => {
  it.effect("a target resolving to a loopback address is refused, recorded as a failed attempt with the reason, and never reached", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      const receiver = yield* WebhookReceiver
      receiver.reset()
      // `localhost` resolves to a loopback address: the name is not what is checked, the address is
      const target = receiver.url.replace("127.0.0.1", "localhost")
      expectWrappedTask(yield* send(service, "POST", paths.skin, { token, body: { ...skinBody, webhook_url: `${target}/x` } }))
      expect(yield* callBack(service, fake, vendorTaskIdOf(fake))).toBe(204)
      const { value: page } = yield* eventually(deliveriesOf(service, token), (p) => (p.deliveries[0]?.attempts.length ?? 0) > 0, 5000)
      const delivery = page.deliveries[0]!
      expect(delivery.status).toBe("pending")
      expect(delivery.attempts[0]!.status_code).toBeUndefined()
      expect(delivery.attempts[0]!.error).toMatch(/resolves to (127\.0\.0\.1|::1), a loopback address: refused \(WEBHOOK_ALLOW_PRIVATE_TARGETS is off\)/)
      expect(receiver.received()).toEqual([])
    }))
})


/** The simulated vendor at a PUBLIC_BASE_URL that reaches the service: its callbacks come back here. */
const simulated = Layer.effect(
  Service,
  Effect.gen(function*() {
    const forwarder = yield* tcpForwarder
    const running = yield* serviceOnFreshDatabase((c) => ({
      ...c,
      vendorMode: "simulated",
      publicBaseUrl: forwarder.url,
      jobs: { ...c.jobs, pollIntervalMillis: 50 },
      webhooks: { ...c.webhooks, allowPrivateTargets: true }
    }))
    forwarder.target.port = Number(new URL(running.baseUrl).port)
    return running
  })
)

layer(Layer.merge(simulated, WebhookReceiver.layer), { excludeTestServices: true, timeout: 60_000 })("webhooks in simulated mode", (it) => {
  it.effect("the simulated vendor calls back, so the client's webhook gets the finished task without a poll", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const receiver = yield* WebhookReceiver
      const token = yield* Effect.promise(() => service.token({ sub: "demo" }))
      const task = expectWrappedTask(yield* send(service, "POST", paths.skin, { token, body: { ...skinBody, webhook_url: `${receiver.url}/demo` } }))
      const { value: hooks } = yield* eventually(Effect.sync(() => receiver.received()), (r) => r.length === 1, 10_000, 50)
      const verified = new Webhook(yield* secretOf(service, token)).verify(hooks[0]!.body, hooks[0]!.headers) as { type: string; data: { task_id: string; status: string; generated: Array<string> } }
      expect(verified.type).toBe("task.completed")
      expect(verified.data.task_id).toBe(task.task_id)
      expect(verified.data.generated).toEqual([`${service.config.publicBaseUrl}/proxy/imagevendor/simulated/${task.task_id}.png`])
      // the poll answers the same task
      const polled = expectStatus(yield* get(service, paths.skinPoll(task.task_id), { token }), 200, "poll").body as { data: unknown }
      expect(polled.data).toEqual(verified.data)
    }))
})
