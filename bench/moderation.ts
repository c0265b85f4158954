/**
 * `concurrent moderation` in `npm run bench`: site admins' changes released together on one
 * publisher, as the fault run of issue 22 sent them. Each round sends 6 `PUT /admin/publishers/{id}`
 * (banned and active alternately) and 6 `PUT /admin/nodes/{id}` (a status and its detail) at
 * once, on a publisher of 34 nodes; 30 rounds, one after another. Before the lock order
 * (src/Catalog/Changes.ts) 76–94 of these 360 changes deadlocked and answered 500, with a p99 of
 * 3–4 s; the target is no 5xx and a p99 under 500 ms.
 */
import * as jose from "jose"
import type pg from "pg"

const log = (line: string) => console.error(`[bench:moderation] ${line}`)

export const moderationScenario = "concurrent moderation"

export interface ModerationResult {
  readonly changes: number
  readonly serverErrors: number
  readonly statuses: Readonly<Record<string, number>>
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly max: number }
  readonly section: string
}

const settings = { nodes: 34, rounds: 30, publisherChanges: 6, nodeChanges: 6 }

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!

/** Creates the publisher with its nodes (handed to it in SQL, as `publisher update` does), then runs the rounds. */
export const benchModeration = async (base: string, client: pg.Client, jwtSecret: string): Promise<ModerationResult> => {
  const publisherId = "bench-moderation"
  const admin = await new jose.SignJWT({ admin: true })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject("bench-site-admin")
    .setIssuedAt()
    .setExpirationTime("1h")
    .sign(new TextEncoder().encode(jwtSecret))
  const headers = { authorization: `Bearer ${admin}`, "content-type": "application/json" }
  const created = await fetch(`${base}/publishers`, { method: "POST", headers, body: JSON.stringify({ id: publisherId, name: "Bench moderation" }) })
  if (created.status !== 201) throw new Error(`creating ${publisherId}: ${created.status} ${await created.text()}`)
  const nodes = (await client.query<{ id: string }>(
    `UPDATE nodes SET publisher_id = $1
     WHERE id IN (SELECT id FROM nodes WHERE listed AND publisher_id <> 'bench-writes' ORDER BY id DESC LIMIT $2) RETURNING id`,
    [publisherId, settings.nodes]
  )).rows.map((r) => r.id)
  if (nodes.length !== settings.nodes) throw new Error(`${publisherId} holds ${nodes.length} nodes, not ${settings.nodes}`)

  const latencies: Array<number> = []
  const statuses: Record<string, number> = {}
  const timed = async (path: string, body: unknown) => {
    const started = performance.now()
    const answer = await fetch(`${base}${path}`, { method: "PUT", headers, body: JSON.stringify(body) })
    await answer.arrayBuffer()
    latencies.push(performance.now() - started)
    statuses[answer.status] = (statuses[answer.status] ?? 0) + 1
  }
  for (let round = 0; round < settings.rounds; round++) {
    await Promise.all([
      ...Array.from({ length: settings.publisherChanges }, (_, i) =>
        timed(`/admin/publishers/${publisherId}`, { status: (round + i) % 2 === 0 ? "PublisherStatusBanned" : "PublisherStatusActive" })),
      ...Array.from({ length: settings.nodeChanges }, (_, i) =>
        timed(`/admin/nodes/${encodeURIComponent(nodes[(round * settings.nodeChanges + i) % nodes.length]!)}`, {
          status: (round + i) % 3 === 0 ? "NodeStatusBanned" : "NodeStatusActive",
          status_detail: `round ${round}`
        }))
    ])
  }
  // leave the catalogue as the read scenarios found it
  await client.query("UPDATE publishers SET status = 'PublisherStatusActive' WHERE id = $1", [publisherId])

  const sorted = [...latencies].sort((a, b) => a - b)
  const latencyMs = { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), max: sorted.at(-1)! }
  const serverErrors = Object.entries(statuses).filter(([s]) => Number(s) >= 500).reduce((n, [, c]) => n + c, 0)
  const round1 = (x: number) => Math.round(x * 10) / 10
  log(`${latencies.length} changes: statuses ${JSON.stringify(statuses)}, p50 ${round1(latencyMs.p50)} ms, p99 ${round1(latencyMs.p99)} ms, max ${round1(latencyMs.max)} ms`)
  const section = [
    `## Concurrent moderation`,
    ``,
    `${settings.rounds} rounds of ${settings.publisherChanges} publisher and ${settings.nodeChanges} node changes released together ` +
    `on a publisher of ${settings.nodes} nodes (bench/moderation.ts).`,
    ``,
    `| changes | answers | 5xx (target 0) | p50 ms | p99 ms (target < 500) | max ms |`,
    `|---:|---|---:|---:|---:|---:|`,
    `| ${latencies.length} | ${Object.entries(statuses).map(([s, c]) => `${c}× ${s}`).join(", ")} | ${serverErrors} | ${round1(latencyMs.p50)} | ${round1(latencyMs.p99)} | ${round1(latencyMs.max)} |`
  ].join("\n")
  return { changes: latencies.length, serverErrors, statuses, latencyMs, section }
}
