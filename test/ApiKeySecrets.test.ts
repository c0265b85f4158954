/**
 * An API key is shown once, in its creation answer, and nowhere else: not in any other answer,
 * not in the logs (captured at debug level for the whole life of the service), whether it is
 * used, wrong, or revoked.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { format } from "node:util"
import { afterAll, vi } from "vitest"
import { type Reply, sendText } from "./support/Http.ts"
import { Service } from "./support/Service.ts"

// everything the service logs, at every level, from before it starts
process.env.TEST_LOG_LEVEL = "debug"
const logged: Array<string> = []
const spies = (["log", "info", "warn", "error", "debug", "trace", "group", "groupCollapsed"] as const).map((method) =>
  vi.spyOn(console, method).mockImplementation((...args: Array<unknown>) => void logged.push(format(...args)))
)
afterAll(() => spies.forEach((spy) => spy.mockRestore()))

layer(Service.layer((c) => ({ ...c, vendorMode: "simulated" })), { excludeTestServices: true })("API key secrecy", (it) => {
  it.effect("a key appears in its creation answer only: never in another answer, never in a log", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwt = yield* Effect.promise(() => service.token({ sub: "sly" }))
      const created = yield* sendText(service, "POST", "/users/api-keys", { token: jwt, body: { name: "host" } })
      const { api_key } = JSON.parse(created.text) as { api_key: { id: string; plaintext_key: string } }
      const key = api_key.plaintext_key
      const secret = key.slice("rgak_".length)

      const answers: Array<Reply> = []
      const withKey = { headers: { "X-API-KEY": key } }
      answers.push(yield* sendText(service, "POST", "/customers/storage", { ...withKey, body: { file_name: "a.png" } }))
      answers.push(yield* sendText(service, "POST", "/proxy/imagevendor/v1/ai/image-style-transfer", {
        ...withKey,
        body: { image: "https://images.example/a.png", reference_image: "https://images.example/b.png" }
      }))
      answers.push(yield* sendText(service, "POST", "/customers/storage", { headers: { "X-API-KEY": `${key}x` }, body: { file_name: "a.png" } }))
      answers.push(yield* sendText(service, "GET", "/users/api-keys", { token: jwt }))
      answers.push(yield* sendText(service, "DELETE", `/users/api-keys/${api_key.id}`, { token: jwt }))
      answers.push(yield* sendText(service, "POST", "/customers/storage", { ...withKey, body: { file_name: "a.png" } }))
      expect(answers.map((a) => a.status)).toEqual([200, 200, 401, 200, 204, 401])

      for (const answer of answers) {
        expect(answer.text).not.toContain(secret)
        expect(JSON.stringify([...answer.headers])).not.toContain(secret)
      }
      // the logs said something (the capture works), and never the key
      expect(logged.length).toBeGreaterThan(0)
      expect(logged.filter((line) => line.includes(secret))).toEqual([])
    }))
})
