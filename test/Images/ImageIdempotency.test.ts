/**
 * Idempotency-Key on the image proxy's POSTs: a repeat answers the same task and the vendor is
 * called once, also when ten repeats race; another body is 409; keys are per user and per
 * endpoint; a failed vendor call frees the key; a key lasts 24 hours; a claim lost before its
 * task is recorded is bound again; malformed keys are 400.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { bearerClient } from "../support/Client.ts"
import { query } from "../support/Db.ts"
import { FakeImageVendor } from "../support/FakeImageVendor.ts"
import { expectBadRequest, expectError, send } from "../support/Http.ts"
import { requestHash } from "../../src/Images/Service.ts"
import {
  expectFlatTask,
  expectWrappedTask,
  freshStart,
  paths,
  skinBody,
  styleBody,
  tokenOf,
  vendorPaths,
  vendorTimeoutMillis,
  withFakeVendor
} from "../support/ImageProxy.ts"
import { type Running, Service } from "../support/Service.ts"

const post = (service: Running, path: string, token: string, key: string | undefined, body: unknown) =>
  send(service, "POST", path, { token, body, headers: key === undefined ? {} : { "idempotency-key": key } })

layer(withFakeVendor(), { excludeTestServices: true })("Idempotency-Key", (it) => {
  it.effect("a repeat with the same key and body answers the same task; the vendor is called once", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      const client = yield* bearerClient(service, token)
      const start = (key: string | undefined) =>
        client.api.imageProxy.startStyleTransfer({ payload: { ...styleBody }, headers: key === undefined ? {} : { "idempotency-key": key } })
      const first = yield* start("order-1")
      const again = yield* start("order-1")
      expect(again.task_id).toBe(first.task_id)
      expect(fake.requests().filter((r) => r.method === "POST")).toHaveLength(1)
      // without a key every request is a new task
      const other = yield* start(undefined)
      expect(other.task_id).not.toBe(first.task_id)
    }))

  it.effect("ten concurrent requests with one key: one vendor call, one task for all", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeImageVendor
      fake.reset()
      fake.setDelay(300)
      const token = yield* tokenOf(service, "ann")
      const answers = yield* Effect.all(
        Array.from({ length: 10 }, () => post(service, paths.skin, token, "race-1", skinBody)),
        { concurrency: "unbounded" }
      )
      const ids = answers.map((a) => expectWrappedTask(a).task_id)
      expect(new Set(ids).size).toBe(1)
      expect(fake.requests().filter((r) => r.method === "POST" && r.path === vendorPaths.skin)).toHaveLength(1)
    }))

  it.effect("the same key with another body is 409 idempotency_key_reused; defaults make equal bodies", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      const first = expectWrappedTask(yield* post(service, paths.skin, token, "k-body", skinBody))
      // the same meaning: the defaults spelled out
      const same = expectWrappedTask(yield* post(service, paths.skin, token, "k-body", { ...skinBody, sharpen: 0, smart_grain: 2 }))
      expect(same.task_id).toBe(first.task_id)
      expectError(yield* post(service, paths.skin, token, "k-body", { ...skinBody, sharpen: 5 }), 409, "idempotency_key_reused")
      expect(fake.requests()).toHaveLength(1)
    }))

  it.effect("keys are per user and per endpoint", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeImageVendor
      fake.reset()
      const ann = yield* tokenOf(service, "ann")
      const bob = yield* tokenOf(service, "bob")
      const a = expectFlatTask(yield* post(service, paths.style, ann, "shared", styleBody))
      const b = expectFlatTask(yield* post(service, paths.style, bob, "shared", styleBody))
      expect(b.task_id).not.toBe(a.task_id)
      const c = expectWrappedTask(yield* post(service, paths.skin, ann, "shared", skinBody))
      expect(c.task_id).not.toBe(a.task_id)
      expect(fake.requests()).toHaveLength(3)
      // bob's task is his: ann cannot see it
      expectError(yield* send(service, "GET", paths.stylePoll(b.task_id), { token: ann }), 404, "not_found")
    }))

  it.effect("a failed vendor call frees the key: the retry reaches the vendor", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      fake.behave({ kind: "status", status: 500 })
      expectError(yield* post(service, paths.style, token, "retry-me", styleBody), 502, "upstream_error")
      fake.behave({ kind: "hang" })
      expectError(yield* post(service, paths.style, token, "retry-me", styleBody), 504, "upstream_timeout")
      fake.behave({ kind: "task" })
      const task = expectFlatTask(yield* post(service, paths.style, token, "retry-me", styleBody))
      expect(fake.requests()).toHaveLength(3)
      expect(expectFlatTask(yield* post(service, paths.style, token, "retry-me", styleBody)).task_id).toBe(task.task_id)
      expect(fake.requests()).toHaveLength(3)
    }))

  it.effect("a key binds for 24 hours", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      const first = expectFlatTask(yield* post(service, paths.style, token, "daily", styleBody))
      yield* query(service, "UPDATE media_idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'daily'")
      const later = expectFlatTask(yield* post(service, paths.style, token, "daily", { ...styleBody, style_strength: 1 }))
      expect(later.task_id).not.toBe(first.task_id)
      expect(fake.requests()).toHaveLength(2)
    }))

  it.effect("a claim the first request still holds makes a repeat wait, then 409 idempotency_key_in_progress", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      // as a request still at the vendor leaves it: claimed, no task yet
      yield* query(service, "INSERT INTO users (id) VALUES ('ann') ON CONFLICT DO NOTHING")
      yield* query(service, "INSERT INTO media_idempotency_keys (owner_id, kind, key, request_hash) VALUES ('ann', 'image-style-transfer', 'held', $1)", [
        requestHash("image-style-transfer", styleBody)
      ])
      const started = Date.now()
      expectError(yield* post(service, paths.style, token, "held", styleBody), 409, "idempotency_key_in_progress")
      expect(Date.now() - started).toBeGreaterThanOrEqual(vendorTimeoutMillis)
      expect(fake.requests()).toEqual([])
    }))

  it.effect("a claim abandoned without a task (its request died) is taken over", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      yield* query(service, "INSERT INTO users (id) VALUES ('ann') ON CONFLICT DO NOTHING")
      yield* query(service, `INSERT INTO media_idempotency_keys (owner_id, kind, key, request_hash, created_at)
        VALUES ('ann', 'image-style-transfer', 'abandoned', '\\x00', now() - interval '5 minutes')`)
      const task = expectFlatTask(yield* post(service, paths.style, token, "abandoned", styleBody))
      expect(fake.requests()).toHaveLength(1)
      expect(expectFlatTask(yield* post(service, paths.style, token, "abandoned", styleBody)).task_id).toBe(task.task_id)
      expect(fake.requests()).toHaveLength(1)
    }))

  it.effect("a claim lost while its request is at the vendor is bound again when the task is recorded", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      fake.setDelay(500)
      const first = yield* Effect.forkChild(post(service, paths.style, token, "lost", styleBody))
      // as a crash of PostgreSQL before the claim's commit reached the disk leaves it: no claim
      yield* Effect.sleep("250 millis")
      yield* query(service, "DELETE FROM media_idempotency_keys WHERE key = 'lost'")
      const task = expectFlatTask(yield* Fiber.join(first))
      fake.setDelay(0)
      expect(expectFlatTask(yield* post(service, paths.style, token, "lost", styleBody)).task_id).toBe(task.task_id)
      expect(fake.requests()).toHaveLength(1)
    }))

  it.effect("a key that is empty, too long or not printable ASCII is 400 naming the header", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      for (const key of ["", "x".repeat(256), "caf\u00e9"]) {
        expectBadRequest(yield* post(service, paths.style, token, key, styleBody), "idempotency-key")
        expectBadRequest(yield* post(service, paths.skin, token, key, skinBody), "idempotency-key")
      }
      expectFlatTask(yield* post(service, paths.style, token, "x".repeat(255), styleBody))
      expectFlatTask(yield* post(service, paths.style, token, " ~!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}", styleBody))
      expect(fake.requests()).toHaveLength(2)
    }))
})
