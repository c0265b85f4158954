/**
 * The vendor key reaches the vendor and nobody else: not a client (bodies and headers of every
 * kind of answer, a vendor message that echoes it included), not the logs (captured at debug
 * level for the whole life of the service, start-up included).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { format } from "node:util"
import { afterAll, vi } from "vitest"
import { FakeImageVendor, type Behaviour } from "../support/FakeImageVendor.ts"
import { type Reply, sendText } from "../support/Http.ts"
import { paths, skinBody, styleBody, vendorKey, vendorKeyHeader, withFakeVendor } from "../support/ImageProxy.ts"
import { Service } from "../support/Service.ts"

// everything the service logs, at every level, from before it starts
process.env.TEST_LOG_LEVEL = "debug"
const logged: Array<string> = []
const spies = (["log", "info", "warn", "error", "debug", "trace", "group", "groupCollapsed"] as const).map((method) =>
  vi.spyOn(console, method).mockImplementation((...args: Array<unknown>) => void logged.push(format(...args)))
)
afterAll(() => spies.forEach((spy) => spy.mockRestore()))

const behaviours: ReadonlyArray<Behaviour> = [
  { kind: "task" },
  { kind: "status", status: 400, body: { message: `bad key ${vendorKey}` } },
  { kind: "status", status: 401, body: { message: `key ${vendorKey} revoked` } },
  { kind: "status", status: 429, headers: { "retry-after": "3" } },
  { kind: "status", status: 500, text: `internal error for ${vendorKey}` },
  { kind: "reset" },
  { kind: "hang" }
]

layer(withFakeVendor(), { excludeTestServices: true })("the image vendor key", (it) => {
  it.effect("goes to the vendor only: never in an answer, never in a log", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake = yield* FakeImageVendor
      const token = yield* Effect.promise(() => service.token({ sub: "ann" }))
      fake.reset()
      const started = yield* sendText(service, "POST", paths.style, { token, body: styleBody })
      const taskId = (JSON.parse(started.text) as { task_id: string }).task_id
      const replies: Array<Reply> = [started]
      for (const behaviour of behaviours) {
        fake.behave(behaviour)
        replies.push(yield* sendText(service, "POST", paths.style, { token, body: styleBody, headers: { "idempotency-key": `k-${replies.length}` } }))
        replies.push(yield* sendText(service, "POST", paths.skin, { token, body: skinBody }))
        replies.push(yield* sendText(service, "GET", paths.stylePoll(taskId), { token }))
      }
      replies.push(yield* sendText(service, "GET", "/openapi.json"))

      // the vendor did get it, every time
      expect(fake.requests().length).toBeGreaterThan(behaviours.length)
      for (const r of fake.requests()) expect(r.headers[vendorKeyHeader]).toBe(vendorKey)
      // a spread of answers, none holding the key
      expect(new Set(replies.map((r) => r.status))).toEqual(new Set([200, 400, 429, 502, 504]))
      for (const reply of replies) {
        expect(reply.text).not.toContain(vendorKey)
        for (const [name, value] of reply.headers) expect(`${name}: ${value}`).not.toContain(vendorKey)
      }
      // the logs said something (the capture works), and never the key
      expect(logged.some((line) => line.includes("image vendor"))).toBe(true)
      expect(logged.filter((line) => line.includes(vendorKey))).toEqual([])
    }))
})
