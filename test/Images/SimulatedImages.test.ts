/**
 * The simulated image vendor finishes as a real one: every operation's task reaches COMPLETED with
 * one absolute URL, and that URL, opened as it is and without credentials (as the host's API
 * nodes download `generated[0]` in comfy_api_nodes/nodes_magnific.py), answers a PNG that an
 * ordinary decoder (pngjs) reads at the announced size, with a picture of its own.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { PNG } from "pngjs"
import { simulatedImageSize } from "../../src/Domain/Media.ts"
import { get, send } from "../support/Http.ts"
import { expectWrappedTask, paths, simulatedAtPublicUrl, skinBody, styleBody, tokenOf } from "../support/ImageProxy.ts"
import { type Running, Service } from "../support/Service.ts"

/** Each operation: where it starts, where its tasks are polled, what it is sent. */
const operations = [
  { name: "style transfer", path: paths.style, poll: paths.stylePoll, body: styleBody },
  { name: "skin enhancer (creative)", path: paths.skin, poll: paths.skinPoll, body: skinBody },
  { name: "skin enhancer (faithful)", path: paths.skinFaithful, poll: paths.skinPoll, body: skinBody },
  { name: "skin enhancer (flexible)", path: paths.skinFlexible, poll: paths.skinPoll, body: skinBody }
] as const

/** Starts a task and polls it until it is COMPLETED (the simulated vendor takes two polls). */
const completedTask = (service: Running, token: string, operation: typeof operations[number]) =>
  Effect.gen(function*() {
    const started = yield* send<{ task_id?: string; data?: { task_id: string } }>(service, "POST", operation.path, { token, body: operation.body })
    expect(started.status, operation.name).toBe(200)
    const taskId = started.body.task_id ?? started.body.data!.task_id
    for (let i = 0; i < 3; i++) {
      const task = expectWrappedTask(yield* get(service, operation.poll(taskId), { token }), operation.name)
      if (task.status === "COMPLETED") return task
    }
    return expect.unreachable(`the ${operation.name} task did not complete in three polls`)
  })

const download = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url)
    return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) }
  })

const distinctColours = (decoded: PNG) => {
  const colours = new Set<number>()
  for (let i = 0; i < decoded.data.length; i += 4) colours.add(decoded.data.readUIntBE(i, 3))
  return colours.size
}

layer(simulatedAtPublicUrl, { excludeTestServices: true })("the simulated image vendor's results", (it) => {
  it.effect("each operation's result downloads from the URL the task answers and decodes as a PNG", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* tokenOf(service, "ann")
      const seen = new Set<string>()
      for (const operation of operations) {
        const task = yield* completedTask(service, token, operation)
        expect(task.generated).toHaveLength(1)
        const url = task.generated[0]!
        expect(url).toBe(`${service.config.publicBaseUrl}/proxy/imagevendor/simulated/${task.task_id}.png`)

        const image = yield* download(url)
        expect(image.status, operation.name).toBe(200)
        expect(image.headers.get("content-type")).toMatch(/^image\/png/)
        const decoded = PNG.sync.read(image.bytes)
        expect([decoded.width, decoded.height]).toEqual([simulatedImageSize, simulatedImageSize])
        expect(distinctColours(decoded)).toBeGreaterThan(100)
        // the same picture again for the same task, another for each other task
        expect((yield* download(url)).bytes.equals(image.bytes)).toBe(true)
        seen.add(image.bytes.toString("base64"))
      }
      expect(seen.size).toBe(operations.length)
    }))
})
