/**
 * The image proxy's client as the host's API nodes are: comfy_api_nodes/util/client.py.
 * - `sync_op` POSTs `model_dump(exclude_none=True)` as JSON (Python's separators), with `Accept`
 *   of any type and the user's bearer token;
 * - `poll_op` GETs with the same `Accept` and token, with no body, until the status (compared
 *   without case) is `completed`;
 * - `TaskResponse` (comfy_api_nodes/apis/magnific.py) reads `task_id`, `status` (or
 *   `task_status`) and `generated`, under `data` or flat, and the node downloads `generated[0]`.
 */
import { Effect } from "effect"
import { expect } from "vitest"
import { fetchText, parseJson } from "./Http.ts"
import type { Running } from "./Service.ts"

/** What a node uploaded its image to and sends: a download URL of the media storage. */
export const uploaded = "https://storage.example/media/4b1c0e6a/image.png"
export const uploadedReference = "https://storage.example/media/9d2f7a10/reference.png"

/** `json.dumps` as aiohttp calls it: `", "` and `": "` between the fields, in the model's order. */
export const pythonJson = (body: unknown): string =>
  Array.isArray(body)
    ? `[${body.map(pythonJson).join(", ")}]`
    : typeof body === "object" && body !== null
    ? `{${Object.entries(body).map(([key, value]) => `${JSON.stringify(key)}: ${pythonJson(value)}`).join(", ")}}`
    : JSON.stringify(body)

/** `sync_op` with a request model. */
export const syncOp = (service: Running, token: string, path: string, body: Readonly<Record<string, unknown>>, headers: Record<string, string> = {}) =>
  Effect.promise(() => fetchText(service, "POST", path, { token, raw: pythonJson(body), headers: { accept: "*/*", ...headers } }))

/** One request of `poll_op`. */
export const pollOnce = (service: Running, token: string, path: string) =>
  Effect.promise(() => fetchText(service, "GET", path, { token, headers: { accept: "*/*" } }))

export interface NodeTask {
  readonly task_id: string
  readonly status: string
  readonly generated: ReadonlyArray<string> | null
}

/** `TaskResponse.model_validate`: the task under `data` or flat, `status` or `task_status`. */
export const taskResponse = (status: number, text: string): NodeTask => {
  expect(status, text).toBe(200)
  const json = parseJson(text, "the proxy's answer") as Record<string, unknown>
  const task = (typeof json.data === "object" && json.data !== null ? json.data : json) as Record<string, unknown>
  const read = { task_id: task.task_id, status: task.status ?? task.task_status, generated: task.generated ?? null }
  expect(typeof read.task_id).toBe("string")
  expect(typeof read.status).toBe("string")
  return read as NodeTask
}

/** `poll_op` until `completed` (at most a few polls: the vendors in these tests finish fast). */
export const pollUntilCompleted = (service: Running, token: string, path: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 4; i++) {
      const answer = yield* pollOnce(service, token, path)
      const task = taskResponse(answer.status, answer.text)
      if (task.status.toLowerCase() === "completed") return task
    }
    return expect.unreachable(`${path} never answered completed`)
  })
