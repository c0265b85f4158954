/**
 * A delivery is never lost across a crash: the service (as `npm start` runs it) takes the vendor's
 * callback, its first delivery attempt fails (the client's target is down), and it is SIGKILLed.
 * Started again on the same database, it delivers: the retry was queued in PostgreSQL in the
 * transaction that recorded the failed attempt.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { createHmac } from "node:crypto"
import { Webhook } from "standardwebhooks"
import { queryOne } from "../support/Db.ts"
import { startFakeImageVendor } from "../support/FakeImageVendor.ts"
import { vendorKey, vendorKeyHeader } from "../support/ImageProxy.ts"
import { type ServiceProcess, spawnService } from "../support/Process.ts"
import { freshDatabase, testJwtSecret } from "../support/Service.ts"
import { startReceiver } from "../support/WebhookReceiver.ts"

/** An HS256 token of `sub`, as the service verifies it with AUTH_JWT_SECRET. */
const tokenOf = (sub: string) => {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url")
  const now = Math.floor(Date.now() / 1000)
  const unsigned = `${part({ alg: "HS256", typ: "JWT" })}.${part({ sub, iat: now, exp: now + 3600 })}`
  return `${unsigned}.${createHmac("sha256", testJwtSecret).update(unsigned).digest("base64url")}`
}

const waitFor = async <A>(read: () => Promise<A>, holds: (a: A) => boolean, withinMillis: number, what: string) => {
  const deadline = Date.now() + withinMillis
  for (;;) {
    const value = await read()
    if (holds(value)) return value
    if (Date.now() > deadline) throw new Error(`${what}: not within ${withinMillis} ms (last: ${JSON.stringify(value)})`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe("webhook deliveries across a crash", () => {
  it.effect("SIGKILL between the vendor's callback and the delivery: the restarted service delivers", () =>
    Effect.gen(function*() {
      const { url: databaseUrl } = yield* freshDatabase
      const fake = yield* Effect.acquireRelease(Effect.promise(() => startFakeImageVendor()), (f) => Effect.promise(f.close))
      const receiver = yield* Effect.acquireRelease(Effect.promise(() => startReceiver()), (r) => Effect.promise(r.close))
      receiver.answer(503)
      const env = {
        DATABASE_URL: databaseUrl,
        AUTH_JWT_SECRET: testJwtSecret,
        VENDOR_MODE: "live",
        IMAGEVENDOR_BASE_URL: fake.url,
        IMAGEVENDOR_API_KEY: vendorKey,
        IMAGEVENDOR_API_KEY_HEADER: vendorKeyHeader,
        WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
        WEBHOOK_RETRY_BASE_SECONDS: "1"
      }
      const spawn = Effect.acquireRelease(
        Effect.promise(() => spawnService({ env })),
        (s) => Effect.sync(() => s.child.exitCode === null && s.child.kill("SIGKILL"))
      )
      const first: ServiceProcess = yield* spawn
      const token = tokenOf("crash-user")
      const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" }
      const started = yield* Effect.promise(() =>
        fetch(`${first.baseUrl}/proxy/imagevendor/v1/ai/skin-enhancer/creative`, {
          method: "POST",
          headers: auth,
          body: JSON.stringify({ image: "https://images.example/face.png", webhook_url: `${receiver.url}/after-crash` })
        }).then((r) => r.json() as Promise<{ data: { task_id: string } }>)
      )
      const vendorId = [...fake.callbackUrlOfAll()][0]!
      const callbackPath = new URL(fake.callbackUrlOf(vendorId)!).pathname
      expect(yield* Effect.promise(() => fake.callBack(vendorId, { url: first.baseUrl + callbackPath }))).toBe(204)
      // the first attempt failed and is recorded (its retry queued with it): now the crash
      yield* Effect.promise(() =>
        waitFor(() => queryOne<{ attempts: number }>({ databaseUrl }, "SELECT attempts FROM webhook_deliveries").pipe(Effect.runPromise), (row) => (row?.attempts ?? 0) >= 1, 15_000, "the first attempt")
      )
      first.child.kill("SIGKILL")
      yield* Effect.promise(() => new Promise((resolve) => first.child.once("exit", resolve)))
      receiver.answer(200)
      const second = yield* spawn
      const hooks = yield* Effect.promise(() =>
        waitFor(async () => receiver.received(), (r) => r.length >= 2, 30_000, "the delivery after the restart")
      )
      const secret = yield* Effect.promise(() =>
        fetch(`${second.baseUrl}/customers/webhooks/secret`, { headers: auth }).then((r) => r.json() as Promise<{ secret: string }>)
      )
      const last = hooks[hooks.length - 1]!
      const verified = new Webhook(secret.secret).verify(last.body, last.headers) as { type: string; data: { task_id: string; status: string } }
      expect(verified.data).toMatchObject({ task_id: started.data.task_id, status: "COMPLETED" })
      const row = yield* Effect.promise(() =>
        waitFor(() => queryOne<{ status: string }>({ databaseUrl }, "SELECT status FROM webhook_deliveries").pipe(Effect.runPromise), (r) => r?.status === "succeeded", 10_000, "the delivery recorded")
      )
      expect(row?.status).toBe("succeeded")
    }).pipe(Effect.scoped), { timeout: 180_000 })
})
