/**
 * `npx tsx bench/webhooks.ts [--quick]`: how long after the vendor's callback the client's webhook
 * arrives, at 50 callbacks a second (issue 27: within 1 s at p99).
 *
 * The service (dist/main.js on a throw-away embedded PostgreSQL) starts tasks at the loopback
 * fake vendor, each with its own webhook_url on a loopback receiver (WEBHOOK_ALLOW_PRIVATE_TARGETS
 * on). Then the fake's callbacks are sent at a steady 50 a second (bench/paced.ts); each one's
 * latency runs from the moment its callback was sent to the moment its signed delivery reached
 * the receiver: the callback's transaction, the job's NOTIFY, the job runner, the signing and the
 * POST. `benchWebhooks` answers a Markdown section for bench/run.ts.
 */
import * as os from "node:os"
import * as jose from "jose"
import { startReceiver } from "../test/support/WebhookReceiver.ts"
import { paced } from "./paced.ts"
import { benchJwtSecret, imageVendorStage } from "./processes.ts"
import { runAlone } from "./standalone.ts"

const log = (line: string) => console.error(`[bench:webhooks] ${line}`)
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits
const jwtSecret = benchJwtSecret
const rate = 50
const targetP99Ms = 1000

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

export const benchWebhooks = async (options: { readonly quick: boolean }): Promise<string> => {
  const seconds = options.quick ? 6 : 20
  const count = rate * seconds
  const cleanups: Array<() => Promise<unknown>> = []
  try {
    const { fake, startService } = await imageVendorStage("webhook", { record: false, log, cleanups })
    const receiver = await startReceiver({ record: false })
    cleanups.push(() => receiver.close())
    const { base: service } = await startService("service", { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" })
    const token = await new jose.SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("bench-user")
      .setIssuedAt().setExpirationTime("1h").sign(new TextEncoder().encode(jwtSecret))

    log(`starting ${count} tasks, each with its own webhook_url`)
    const taskIds: Array<string> = []
    for (let i = 0; i < count; i += 8) {
      const batch = await Promise.all(Array.from({ length: Math.min(8, count - i) }, (_, j) =>
        fetch(`${service}/proxy/imagevendor/v1/ai/skin-enhancer/creative`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
          body: JSON.stringify({ image: "https://images.example/face.png", webhook_url: `${receiver.url}/hook/${i + j}` })
        }).then(async (r) => (await r.json() as { data: { task_id: string } }).data.task_id)))
      taskIds.push(...batch)
    }
    const callbackPaths = taskIds.map((id) => new URL(fake.callbackUrlOf(id)!).pathname)

    const sentAt: Array<number> = []
    const latencies: Array<number> = []
    let arrived = 0
    const allArrived = new Promise<void>((resolve) =>
      receiver.onHook((hook) => {
        const i = Number(/\/hook\/(\d+)$/.exec(hook.path)?.[1])
        latencies.push(hook.at - sentAt[i]!)
        if (++arrived === count) resolve()
      }))
    log(`${count} callbacks at ${rate}/s`)
    const callbacks = await paced({
      base: service,
      rate,
      connections: 16,
      seconds,
      request: (i) => {
        sentAt[i] = Date.now()
        return {
          method: "POST",
          path: callbackPaths[i]!,
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ data: { task_id: taskIds[i], status: "COMPLETED", generated: [`https://cdn.example/${i}.png`] } })
        }
      }
    })
    await Promise.race([allArrived, new Promise((resolve) => setTimeout(resolve, 30_000))])
    const sorted = [...latencies].sort((a, b) => a - b)
    const p99 = percentile(sorted, 99)
    const load = os.loadavg()[0]!
    return [
      `## Webhooks${options.quick ? " (quick)" : ""}`,
      "",
      `${count} image tasks finished by the fake vendor's callback at a steady ${rate}/s for ${seconds} s (16 connections); ` +
      `each delivery timed from its callback's sending to its arrival at a loopback receiver (the job runner's NOTIFY, signing, one POST). ` +
      `${os.cpus().length} CPUs, Node ${process.version}.`,
      "",
      "| measure | p50 ms | p99 ms | max ms | count |",
      "|---|---|---|---|---|",
      `| callback answered (204) | ${round(callbacks.latency.p50)} | ${round(callbacks.latency.p99)} | ${round(callbacks.latency.max)} | ${callbacks.requests.total} (${callbacks.non2xx + callbacks.errors + callbacks.timeouts} failed) |`,
      `| callback to delivery | ${round(percentile(sorted, 50))} | ${round(p99)} | ${round(sorted[sorted.length - 1] ?? NaN)} | ${arrived} of ${count} |`,
      "",
      `- webhook delivered within ${targetP99Ms} ms p99 of the vendor's callback at ${rate} tasks/s: ${arrived === count && p99 <= targetP99Ms ? "met" : "NOT met"} (p99 ${round(p99)} ms, ${arrived}/${count} arrived)`,
      `- 1-minute load average at the end: ${round(load, 2)} on ${os.cpus().length} CPUs${load > os.cpus().length ? " — the machine was busy with other work: latencies are inflated" : ""}`,
      ""
    ].join("\n")
  } finally {
    for (const f of cleanups.reverse()) await f().catch((e: unknown) => log(`clean-up: ${String(e)}`))
  }
}

runAlone(import.meta.url, benchWebhooks)
