/**
 * Customers over real HTTP against the loopback fake image vendor: the host's sign-in requests
 * (POST /customers, GET /customers/balance), quotas refused with 429 and the RateLimit fields
 * before the vendor is called, tasks in flight released when a task finishes or its start fails,
 * usage events and their listing, a site admin's overrides, and (fast-check) concurrent starts
 * that never pass a quota.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { expectError, expectStatus, get, send } from "../support/Http.ts"
import { expectFlatTask, freshStart, paths, styleBody, tokenOf, vendorPaths, withFakeVendor } from "../support/ImageProxy.ts"
import { forAll } from "../support/Property.ts"
import { eventually } from "../support/Eventually.ts"
import { query } from "../support/Db.ts"
import type { Running } from "../support/Service.ts"

interface Balance {
  readonly amount_micros: number
  readonly currency: string
  readonly operations_per_day: ReadonlyArray<{ operation: string; unit: string; limit: number | null; used: number; remaining: number | null; resets_at: string }>
  readonly tasks_in_flight: { limit: number | null; used: number; remaining: number | null }
}

interface UsagePage {
  readonly events: ReadonlyArray<{ operation: string; outcome: string; api_key_id: string | null; units: number; unit: string; bytes_in: number; bytes_out: number }>
  readonly page: number
  readonly limit: number
  readonly total: number
  readonly totalPages: number
}

/** As the host's sign-in sends them (ComfyUI_frontend src/stores/firebaseAuthStore.ts, createCustomer and fetchBalance): a JSON content type, no body. */
const createCustomer = (service: Running, token: string) =>
  send<{ id: string; createdAt: string }>(service, "POST", "/customers", { token, headers: { "content-type": "application/json" } })
const balanceOf = (service: Running, token: string) =>
  get(service, "/customers/balance", { token, headers: { "content-type": "application/json" } }).pipe(
    Effect.map((answer) => expectStatus(answer, 200, "balance").body as Balance)
  )
const dayQuota = (balance: Balance, operation: string) => balance.operations_per_day.find((q) => q.operation === operation)!

const startStyle = (service: Running, token: string) => send(service, "POST", paths.style, { token, body: styleBody })

/** A site admin's PUT of `customer`'s overrides; the customer signs in first (a user is known once seen), unless `known` is false. */
const setQuotas = (service: Running, customer: string, overrides: unknown, known = true) =>
  Effect.gen(function*() {
    if (known) yield* createCustomer(service, yield* tokenOf(service, customer))
    const admin = yield* Effect.promise(() => service.token({ sub: "site-admin", admin: true }))
    return yield* send(service, "PUT", `/admin/customers/${customer}/quotas`, { token: admin, body: overrides })
  })

const vendorStarts = (fake: { requests: () => ReadonlyArray<{ method: string; path: string }> }) =>
  fake.requests().filter((r) => r.method === "POST" && r.path === vendorPaths.style).length

layer(withFakeVendor(), { excludeTestServices: true })("customers", (it) => {
  it.effect("POST /customers as the host's sign-in: 201 with the user's id, then 200 with the same record", () =>
    Effect.gen(function*() {
      const { service, token } = yield* freshStart("carla")
      expectError(yield* get(service, "/customers/me", { token }), 404, "not_found")
      const first = yield* createCustomer(service, token)
      expect(first.status).toBe(201)
      expect(first.body.id).toBe("carla")
      const again = yield* createCustomer(service, token)
      expect(again.status).toBe(200)
      expect(again.body).toEqual(first.body)
      const me = yield* get(service, "/customers/me", { token })
      expect(expectStatus(me, 200, "me").body).toEqual(first.body)
      expectError(yield* send(service, "POST", "/customers", {}), 401, "unauthorized")
    }))

  it.effect("POST /customers sent many times at once for a new user: one 201, the rest 200 with the same record", () =>
    Effect.gen(function*() {
      // the host's sign-in may fire it from several tabs at once; the fuzzer found a 500 here (a
      // call that waited on another's insert saw no row): a few users, twenty calls each at once
      for (const user of ["dora", "emil", "fern", "gus", "hana"]) {
        const { service, token } = yield* freshStart(user)
        const answers = yield* Effect.all(Array.from({ length: 20 }, () => createCustomer(service, token)), { concurrency: "unbounded" })
        expect(answers.map((a) => a.status).sort(), user).toEqual([...Array.from({ length: 19 }, () => 200), 201])
        for (const answer of answers) expect(answer.body).toEqual(answers.find((a) => a.status === 201)!.body)
      }
    }))

  it.effect("the balance: the anchor's fields, then each quota with what is left", () =>
    Effect.gen(function*() {
      const { service, token } = yield* freshStart("bea")
      yield* setQuotas(service, "bea", { operations_per_day: { "image-style-transfer": 3 }, tasks_in_flight: 5 })
      expectFlatTask(yield* startStyle(service, token))
      const balance = yield* balanceOf(service, token)
      expect(balance.amount_micros).toBe(0)
      expect(balance.currency).toBe("usd")
      expect(dayQuota(balance, "image-style-transfer")).toMatchObject({ unit: "task", limit: 3, used: 1, remaining: 2 })
      expect(dayQuota(balance, "media-upload")).toMatchObject({ unit: "byte", limit: null, remaining: null })
      expect(balance.tasks_in_flight).toEqual({ limit: 5, used: 1, remaining: 4 })
    }))

  it.effect("over the day's quota: 429 quota_exceeded with Retry-After and the RateLimit fields, and no vendor call", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart("dora")
      yield* setQuotas(service, "dora", { operations_per_day: { "*": 2 } })
      expectFlatTask(yield* startStyle(service, token))
      expectFlatTask(yield* startStyle(service, token))
      const refused = yield* startStyle(service, token)
      expectError(refused, 429, "quota_exceeded")
      const retryAfter = Number(refused.headers.get("retry-after"))
      expect(retryAfter).toBeGreaterThan(0)
      expect(retryAfter).toBeLessThanOrEqual(86_400)
      expect(refused.headers.get("ratelimit-policy")).toBe(`"operations-day";q=2;qu="requests";w=86400`)
      expect(refused.headers.get("ratelimit")).toBe(`"operations-day";r=0;t=${retryAfter}`)
      expect(vendorStarts(fake)).toBe(2)
      expect(dayQuota(yield* balanceOf(service, token), "image-style-transfer").remaining).toBe(0)
      // another operation has its own count
      expect((yield* send(service, "POST", paths.skin, { token, body: { image: "https://images.example/face.png" } })).status).toBe(200)
    }))

  it.effect("tasks in flight: held until the task is COMPLETED (seen by a poll), and a failed start gives its quota back", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart("eva")
      yield* setQuotas(service, "eva", { tasks_in_flight: 1, operations_per_day: { "*": 10 } })
      const task = expectFlatTask(yield* startStyle(service, token))
      const refused = yield* startStyle(service, token)
      expectError(refused, 429, "quota_exceeded")
      expect(refused.headers.get("ratelimit-policy")).toBe(`"tasks-in-flight";q=1;qu="concurrent-requests"`)
      expect(refused.headers.get("ratelimit")).toBe(`"tasks-in-flight";r=0;t=10`)
      fake.script(task.task_id, ["COMPLETED"])
      expect(expectStatus(yield* get(service, paths.stylePoll(task.task_id), { token }), 200, "poll").body).toMatchObject({ data: { status: "COMPLETED" } })
      // the hold is bound to its task in the background, just after the start's answer
      expect((yield* eventually(balanceOf(service, token), (b) => b.tasks_in_flight.used === 0)).value.tasks_in_flight.used).toBe(0)

      // the vendor fails: nothing held, nothing counted
      fake.behave({ kind: "status", status: 500, body: { error: "down" } })
      expectError(yield* startStyle(service, token), 502, "upstream_error")
      const balance = yield* balanceOf(service, token)
      expect(balance.tasks_in_flight.used).toBe(0)
      expect(dayQuota(balance, "image-style-transfer").used).toBe(1)
      fake.reset()
      expectFlatTask(yield* startStyle(service, token))
    }))

  it.effect("a task nobody sees finish stops counting when its hold expires, and its hold is dropped", () =>
    Effect.gen(function*() {
      const { service, token } = yield* freshStart("ines")
      yield* setQuotas(service, "ines", { tasks_in_flight: 1, operations_per_day: { "*": 10 } })
      expectFlatTask(yield* startStyle(service, token))
      expectError(yield* startStyle(service, token), 429, "quota_exceeded")
      // the hold's horizon passes (no poll, no callback): as if it had been taken long ago
      yield* eventually(query(service, "SELECT 1 FROM quota_holds WHERE customer_id = 'ines' AND task_id IS NOT NULL"), (rows) => rows.length === 1)
      yield* query(service, "UPDATE quota_holds SET expires_at = now() - interval '1 second' WHERE customer_id = 'ines'")
      expect((yield* balanceOf(service, token)).tasks_in_flight.used).toBe(0)
      expectFlatTask(yield* startStyle(service, token))
      // the expired hold is gone; the new start's hold is the only one
      expect(yield* query(service, "SELECT expires_at > now() AS live FROM quota_holds WHERE customer_id = 'ines'")).toEqual([{ live: true }])
    }))

  it.effect("usage: one event per start with its outcome, key and units; filtered by operation and time, paginated", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart("fay")
      yield* setQuotas(service, "fay", { operations_per_day: { "image-style-transfer": 2 } })
      const key = expectStatus(yield* send<{ api_key: { id: string; plaintext_key: string } }>(service, "POST", "/users/api-keys", { token, body: { name: "nodes" } }), 201, "key").body.api_key
      expectFlatTask(yield* send(service, "POST", paths.style, { body: styleBody, headers: { "x-api-key": key.plaintext_key } }))
      expectFlatTask(yield* startStyle(service, token))
      expectError(yield* startStyle(service, token), 429, "quota_exceeded")
      fake.behave({ kind: "status", status: 500, body: {} })
      expectError(yield* send(service, "POST", paths.skin, { token, body: { image: "https://images.example/face.png" } }), 502)

      const all = expectStatus(yield* get(service, "/customers/usage", { token }), 200, "usage").body as UsagePage
      expect(all.total).toBe(4)
      expect(all.events.map((e) => [e.operation, e.outcome, e.units])).toEqual([
        ["skin-enhancer/creative", "failed", 0],
        ["image-style-transfer", "refused", 0],
        ["image-style-transfer", "succeeded", 1],
        ["image-style-transfer", "succeeded", 1]
      ])
      expect(all.events[3]!.api_key_id).toBe(key.id)
      expect(all.events[2]!.api_key_id).toBeNull()
      expect(all.events[3]!.bytes_in).toBe(Buffer.byteLength(JSON.stringify(styleBody)))
      expect(all.events[3]!.bytes_out).toBeGreaterThan(0)
      expect(all.events.every((e) => e.unit === "task")).toBe(true)

      const styles = expectStatus(yield* get(service, "/customers/usage?operation=image-style-transfer&limit=2&page=2", { token }), 200, "page").body as UsagePage
      expect(styles).toMatchObject({ page: 2, limit: 2, total: 3, totalPages: 2 })
      expect(styles.events).toHaveLength(1)
      const future = expectStatus(yield* get(service, `/customers/usage?from=${new Date(Date.now() + 60_000).toISOString()}`, { token }), 200, "future").body as UsagePage
      expect(future.total).toBe(0)
      // another customer sees none of them
      const other = yield* tokenOf(service, "gus")
      expect((expectStatus(yield* get(service, "/customers/usage", { token: other }), 200, "other").body as UsagePage).total).toBe(0)
      expectError(yield* get(service, "/customers/usage?from=yesterday", { token }), 400, "bad_request")
    }))

  it.effect("overrides: site admins only, known users only, null is the default again", () =>
    Effect.gen(function*() {
      const { service, token } = yield* freshStart("hal")
      expectError(yield* send(service, "PUT", "/admin/customers/hal/quotas", { token, body: { tasks_in_flight: 100 } }), 403, "forbidden")
      expectError(yield* setQuotas(service, "nobody-here", { tasks_in_flight: 1 }, false), 404, "not_found")
      const set = yield* setQuotas(service, "hal", { tasks_in_flight: 0 })
      expect(expectStatus(set, 200, "set").body).toEqual({ customer_id: "hal", operations_per_day: null, tasks_in_flight: 0, upload_bytes_per_day: null })
      expectError(yield* startStyle(service, token), 429, "quota_exceeded")
      yield* setQuotas(service, "hal", { tasks_in_flight: null })
      expectFlatTask(yield* startStyle(service, token))
      expectError(yield* setQuotas(service, "hal", { tasks_in_flight: -1 }), 400, "bad_request")
    }))

  it.effect("concurrent starts never pass a quota, and the balance answers what is left", () =>
    Effect.gen(function*() {
      const { service, fake } = yield* freshStart()
      let run = 0
      yield* forAll(
        { quota: fc.integer({ min: 0, max: 6 }), starts: fc.integer({ min: 1, max: 12 }), kind: fc.constantFrom("day", "flight") },
        ({ quota, starts, kind }) =>
          Effect.gen(function*() {
            const sub = `prop-${run++}`
            const token = yield* tokenOf(service, sub)
            yield* setQuotas(service, sub, kind === "day" ? { operations_per_day: { "*": quota } } : { tasks_in_flight: quota })
            fake.clearRequests()
            const answers = yield* Effect.forEach(Array.from({ length: starts }), () => startStyle(service, token), { concurrency: "unbounded" })
            const ok = answers.filter((a) => a.status === 200).length
            expect(answers.every((a) => a.status === 200 || a.status === 429)).toBe(true)
            expect(ok).toBe(Math.min(quota, starts))
            expect(vendorStarts(fake)).toBe(ok)
            const balance = yield* balanceOf(service, token)
            if (kind === "day") expect(dayQuota(balance, "image-style-transfer").remaining).toBe(quota - ok)
            else expect(balance.tasks_in_flight.remaining).toBe(quota - ok)
          }),
        { numRuns: 25 }
      )
    }), { timeout: 120_000 })
})
