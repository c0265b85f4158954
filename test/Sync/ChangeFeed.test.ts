/**
 * The change feed over real HTTP (`GET /catalogue/changes`, src/Sync/Feed.ts): what a publish and
 * an upload write to it, the cursor's refusals, and the property the feed exists for: a follower
 * that reads it while many writers commit concurrently and out of order ends with a copy equal to
 * the database, having seen every change once.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import pg from "pg"
import { CatalogueChanges } from "../../src/Domain/Sync.ts"
import { decodeExact } from "../support/Catalogue.ts"
import { query, statements } from "../support/Db.ts"
import { eventually } from "../support/Eventually.ts"
import { expectError, expectStatus, get } from "../support/Http.ts"
import { forAll } from "../support/Property.ts"
import { type Running, Service } from "../support/Service.ts"
import { zipOf } from "../support/Zip.ts"
import { makePublisher, type Publisher, published, upload } from "../Publishing/Flow.ts"

const decodeChanges = decodeExact(CatalogueChanges)
type Changes = ReturnType<typeof decodeChanges>

const changesAfter = (service: Running, cursor: string, limit = 500) =>
  Effect.map(get(service, `/catalogue/changes?cursor=${encodeURIComponent(cursor)}&limit=${limit}`), (answer) =>
    decodeChanges(expectStatus(answer, 200, `changes after ${cursor}`).body))

/** Every change after `cursor` until the feed has no more: the changes and the last cursor. */
const drain = (service: Running, cursor: string, limit = 500) =>
  Effect.gen(function*() {
    const all: Array<Changes["changes"][number]> = []
    let at = cursor
    for (;;) {
      const page = yield* changesAfter(service, at, limit)
      all.push(...page.changes)
      at = page.next_cursor
      if (!page.has_more) return { changes: all, cursor: at }
    }
  })

/** One writer's step, in a transaction of its own on its own connection. */
type Step =
  | { readonly op: "createNode" | "describeNode" | "banNode" | "restoreNode" | "deleteNode"; readonly node: number; readonly pause: number }
  | { readonly op: "publish" | "activate" | "flag" | "yank" | "unyank"; readonly node: number; readonly version: number; readonly pause: number }

const nodes = 4
const versions = 3
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    op: fc.constantFrom("createNode", "describeNode", "banNode", "restoreNode", "deleteNode"),
    node: fc.nat(nodes - 1),
    pause: fc.nat(15)
  }),
  fc.record({ op: fc.constantFrom("publish", "activate", "flag", "yank", "unyank"), node: fc.nat(nodes - 1), version: fc.nat(versions - 1), pause: fc.nat(15) })
) as fc.Arbitrary<Step>

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Runs a step: the transaction takes its id with its first write, waits, and writes again before
 * committing, so that transactions begun in one order commit in another.
 */
const run = async (client: pg.Client, prefix: string, publisher: string, s: Step) => {
  const node = `${prefix}-${s.node}`
  await client.query("BEGIN")
  try {
    await client.query("SELECT pg_current_xact_id()")
    await sleep(s.pause)
    switch (s.op) {
      case "createNode":
        await client.query("INSERT INTO nodes (id, publisher_id, name) VALUES ($1, $2, $1) ON CONFLICT DO NOTHING", [node, publisher])
        break
      case "describeNode":
        await client.query("UPDATE nodes SET description = md5(random()::text) WHERE id = $1", [node])
        break
      case "banNode":
        await client.query("UPDATE nodes SET status = 'NodeStatusBanned', listed = false WHERE id = $1", [node])
        break
      case "restoreNode":
        await client.query("UPDATE nodes SET status = 'NodeStatusActive', listed = true WHERE id = $1", [node])
        break
      case "deleteNode":
        await client.query("DELETE FROM nodes WHERE id = $1", [node])
        break
      case "publish":
        await client.query(
          `INSERT INTO node_versions (node_id, version, semver_key) SELECT $1, $2, $2 WHERE EXISTS (SELECT 1 FROM nodes WHERE id = $1)
           ON CONFLICT DO NOTHING`,
          [node, `1.0.${s.version}`]
        )
        break
      case "activate":
      case "flag":
        await client.query("UPDATE node_versions SET status = $3 WHERE node_id = $1 AND version = $2", [
          node,
          `1.0.${s.version}`,
          s.op === "activate" ? "NodeVersionStatusActive" : "NodeVersionStatusFlagged"
        ])
        break
      case "yank":
      case "unyank":
        await client.query("UPDATE node_versions SET yanked = $3, yanked_reason = $4 WHERE node_id = $1 AND version = $2", [
          node,
          `1.0.${s.version}`,
          s.op === "yank",
          s.op === "yank" ? "broken" : null
        ])
        break
    }
    await sleep(s.pause)
    await client.query("COMMIT")
  } catch (e) {
    await client.query("ROLLBACK")
    // two writers inserting one node or version: the loser's change is not made, nor recorded
    if (!/duplicate key|deadlock|foreign key/.test(String(e))) throw e
  }
}

/** A copy of the catalogue as the feed tells it: each node's status and listing, each version's status and yank. */
interface Copy {
  readonly nodes: Map<string, { status: string; listed: boolean }>
  readonly versions: Map<string, { status: string; yanked: boolean }>
}

const apply = (copy: Copy, change: Changes["changes"][number]) => {
  if (change.version === undefined) {
    if (change.kind === "node_deleted" && change.status === "NodeStatusDeleted" && change.listed === false) {
      copy.nodes.delete(change.node_id)
      for (const key of [...copy.versions.keys()]) if (key.startsWith(`${change.node_id}@`)) copy.versions.delete(key)
    } else copy.nodes.set(change.node_id, { status: change.status, listed: change.listed! })
  } else if (change.kind === "version_deleted") copy.versions.delete(`${change.node_id}@${change.version}`)
  else copy.versions.set(`${change.node_id}@${change.version}`, { status: change.status, yanked: change.yanked! })
}

layer(Service.layer(), { excludeTestServices: true })("the change feed", (it) => {
  let acme: Publisher

  it.effect("setup: a publisher", () =>
    Effect.gen(function*() {
      acme = yield* makePublisher(yield* Service, "acme")
    }))

  it.effect("a publish and an upload are changes, in order, with the status after each", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const before = yield* drain(service, "0.0")
      const { signedUrl } = yield* published(service, acme, "feed-a", "1.0.0")
      yield* upload(service, signedUrl, yield* Effect.promise(() => zipOf({ "__init__.py": "NODE_CLASS_MAPPINGS = {}\n" })))
      const after = yield* drain(service, before.cursor)
      expect(after.changes.map((c) => [c.kind, c.node_id, c.version, c.status])).toEqual([
        ["node_created", "feed-a", undefined, "NodeStatusActive"],
        ["version_published", "feed-a", "1.0.0", "NodeVersionStatusPending"],
        ["version_status_changed", "feed-a", "1.0.0", "NodeVersionStatusActive"]
      ])
      // nothing new: the same cursor, no changes
      const idle = yield* changesAfter(service, after.cursor)
      expect(idle).toEqual({ changes: [], next_cursor: after.cursor, has_more: false })
    }))

  it.effect("pages: a small limit walks the same changes, has_more until the end", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const whole = yield* drain(service, "0.0")
      const paged = yield* drain(service, "0.0", 1)
      expect(paged).toEqual(whole)
    }))

  it.effect("a download is not a change", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const { cursor } = yield* drain(service, "0.0")
      expectStatus(yield* get(service, "/nodes/feed-a/install"), 200, "install")
      expect((yield* changesAfter(service, cursor)).changes).toEqual([])
    }))

  // migrations/0029: each change's check at commit read every change the transaction had numbered,
  // through the partial index of unnumbered ones (n² in all); it now reads its own row by its key
  it.effect("a transaction of 2,000 changes is numbered once, in time linear in them", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const count = 2_000
      const { cursor } = yield* drain(service, "0.0")
      // the index's reads, as this connection's statistics, flushed, show them
      const indexReads = statements(
        service,
        "SELECT pg_stat_force_next_flush()",
        "SELECT pg_stat_clear_snapshot()",
        "SELECT coalesce(sum(idx_tup_read), 0)::int AS reads FROM pg_stat_user_indexes WHERE indexrelname = 'catalogue_changes_unnumbered'"
      ).pipe(Effect.map((rows) => Number(rows[0]!.reads)))
      const before = yield* indexReads
      yield* statements(
        service,
        "BEGIN",
        `INSERT INTO nodes (id, publisher_id, name) VALUES ('feed-bulk', '${acme.id}', 'feed-bulk')`,
        `INSERT INTO node_versions (node_id, version, semver_key)
           SELECT 'feed-bulk', '1.0.' || i, '1.0.' || i FROM generate_series(1, ${count - 1}) AS i`,
        "COMMIT",
        "SELECT pg_stat_force_next_flush()"
      )
      const { value: reads } = yield* eventually(indexReads, (n) => n - before >= count)
      // one walk of the transaction's changes to number them, not one per change (2,000,000)
      expect(reads - before).toBeGreaterThanOrEqual(count)
      expect(reads - before).toBeLessThan(3 * count)
      const after = yield* drain(service, cursor)
      expect(after.changes.filter((c) => c.node_id === "feed-bulk")).toHaveLength(count)
      const seqs = yield* query<{ n: number }>(service, "SELECT count(DISTINCT seq)::int AS n FROM catalogue_changes WHERE node_id = 'feed-bulk'")
      expect(seqs[0]!.n).toBe(1)
    }))

  it.effect("a malformed cursor, or one never issued, is a 400 naming the cursor", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const bad of ["", "abc", "1", "1.2.3", "-1.0", "99999999999999999999.0", "1.99999999999999999999"]) {
        const answer = yield* get(service, `/catalogue/changes?cursor=${encodeURIComponent(bad)}`)
        expectError(answer, 400, "bad_request")
        expect(JSON.stringify(answer.body)).toContain("cursor")
      }
      const never = yield* get(service, "/catalogue/changes?cursor=12345.67890")
      expectError(never, 400, "bad_request")
      expect((never.body as { message: string }).message).toMatch(/^cursor: 12345\.67890 was never issued/)
    }))

  it.effect("a follower of concurrent writers that commit out of order sees every change once, and its copy equals the database", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const writers = 4
      let round = 0
      yield* forAll([fc.array(fc.array(step, { minLength: 5, maxLength: 25 }), { minLength: writers, maxLength: writers })], ([plans]) =>
        Effect.gen(function*() {
          const prefix = `w${round++}`
          const start = (yield* drain(service, "0.0")).cursor
          const copy: Copy = { nodes: new Map(), versions: new Map() }
          let seen = 0
          let cursor = start
          let writing = true
          const follow = Effect.gen(function*() {
            while (writing) {
              const page = yield* changesAfter(service, cursor, 7)
              for (const change of page.changes) if (change.node_id.startsWith(`${prefix}-`)) apply(copy, change)
              seen += page.changes.length
              cursor = page.next_cursor
              if (!page.has_more) yield* Effect.sleep(5)
            }
            const rest = yield* drain(service, cursor, 7)
            for (const change of rest.changes) if (change.node_id.startsWith(`${prefix}-`)) apply(copy, change)
            seen += rest.changes.length
            cursor = rest.cursor
          })
          const write = Effect.promise(async () => {
            const clients = plans.map(() => new pg.Client({ connectionString: service.databaseUrl }))
            await Promise.all(clients.map((c) => c.connect()))
            try {
              await Promise.all(plans.map(async (plan, w) => {
                for (const s of plan) await run(clients[w]!, prefix, "acme", s)
              }))
            } finally {
              await Promise.all(clients.map((c) => c.end()))
              writing = false
            }
          })
          yield* Effect.all([follow, write], { concurrency: 2 })

          const dbNodes = yield* query<{ id: string; status: string; listed: boolean }>(service, "SELECT id, status, listed FROM nodes WHERE id LIKE $1", [`${prefix}-%`])
          const dbVersions = yield* query<{ key: string; status: string; yanked: boolean }>(
            service,
            "SELECT node_id || '@' || version AS key, status, yanked FROM node_versions WHERE node_id LIKE $1",
            [`${prefix}-%`]
          )
          expect(Object.fromEntries(copy.nodes)).toEqual(Object.fromEntries(dbNodes.map((n) => [n.id, { status: n.status, listed: n.listed }])))
          expect(Object.fromEntries(copy.versions)).toEqual(
            Object.fromEntries(dbVersions.map((v) => [v.key, { status: v.status, yanked: v.yanked }]))
          )
          // every change once: as many as the feed holds after the start
          const [written] = yield* query<{ n: number }>(
            service,
            "SELECT count(*)::int AS n FROM catalogue_changes WHERE seq IS NOT NULL AND (seq, id) > ($1::bigint, $2::bigint)",
            start.split(".")
          )
          expect(seen).toBe(written!.n)
        }), { numRuns: 15, endOnFailure: true })
    }), { timeout: 120_000 })
})
