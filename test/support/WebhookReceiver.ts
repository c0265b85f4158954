/**
 * A loopback webhook target for tests and the bench: it records every request (headers, body,
 * arrival time) and answers the statuses it is told, in order (the last one repeats).
 */
import { Context, Effect, Layer } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { closeServer } from "./Loopback.ts"

export interface ReceivedHook {
  readonly path: string
  readonly headers: Record<string, string>
  readonly body: string
  readonly at: number
}

export interface Receiver {
  readonly url: string
  readonly received: () => ReadonlyArray<ReceivedHook>
  /** The statuses answered from now on, in order; the last one repeats. */
  readonly answer: (...statuses: ReadonlyArray<number>) => void
  /** Called at each arrival (the bench measures with it). */
  readonly onHook: (listener: (hook: ReceivedHook) => void) => void
  readonly reset: () => void
  readonly close: () => Promise<void>
}

export const startReceiver = (options: { readonly record?: boolean } = {}) =>
  new Promise<Receiver>((resolve) => {
    const record = options.record ?? true
    const hooks: Array<ReceivedHook> = []
    let statuses: Array<number> = [204]
    let listener: ((hook: ReceivedHook) => void) | undefined
    const server = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const hook: ReceivedHook = {
          path: req.url ?? "/",
          headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
          body: Buffer.concat(chunks).toString("utf8"),
          at: Date.now()
        }
        if (record) hooks.push(hook)
        listener?.(hook)
        const status = statuses.length > 1 ? statuses.shift()! : statuses[0]!
        res.writeHead(status, status >= 300 && status < 400 ? { location: "http://127.0.0.1:1/elsewhere" } : {})
        res.end()
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({
        url: `http://127.0.0.1:${port}`,
        received: () => [...hooks],
        answer: (...given) => void (statuses = [...given]),
        onHook: (l) => void (listener = l),
        reset: () => {
          hooks.length = 0
          statuses = [204]
        },
        close: () => closeServer(server)
      })
    })
  })

export class WebhookReceiver extends Context.Service<WebhookReceiver, Receiver>()("test/WebhookReceiver") {
  static readonly layer = Layer.effect(
    WebhookReceiver,
    Effect.acquireRelease(Effect.promise(() => startReceiver()), (r) => Effect.promise(r.close))
  )
}
