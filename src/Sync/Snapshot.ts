/**
 * The catalogue snapshot (issue 30, `GetCatalogueSnapshot`): every listed node with its latest
 * version in one answer, as `GET /nodes` renders them (NodePages, in the answer vocabulary
 * ANSWER_ALIASES chooses), cut at a change-feed cursor, so that a follower takes it once and
 * then follows the feed from its cursor.
 *
 * Built in the background, never on a request: each instance looks every `checkMillis` whether
 * the feed moved past the newest snapshot and, if so, queues the build job under one key and one
 * queue (one waits at most, one runs at a time). Each node is kept rendered in a table; a build
 * renders again only the nodes the feed names since the last one (every node at least every
 * `renderAllEveryMinutes`, since download counts and publishers' names are not in the feed), then
 * reads them all, in one REPEATABLE READ transaction: the snapshot holds exactly the changes up to
 * its cursor. It stores the JSON compressed (br and gzip) in the database, so that every instance
 * serves the same bytes for the same cursor, keeps the newest two, and prunes the feed past its
 * retention.
 *
 * Each instance keeps the newest snapshot it served in memory (its JSON, br and gzip), loaded once
 * per cursor; the edge answers 304 to its ETag and picks the coding (Http/Representation.ts).
 */
import { SqlClient } from "effect/sql"
import { Context, Data, Effect, Layer, Schedule, Schema } from "effect"
import { promisify } from "node:util"
import * as zlib from "node:zlib"
import { NodePages } from "../Catalog/NodePages.ts"
import { AppConfig } from "../Config.ts"
import { orDieOnDatabase } from "../Db/Rows.ts"
import { represent } from "../Http/Representation.ts"
import { defineTask, type JobTask } from "../Jobs/Task.ts"
import { traced } from "../Tracing.ts"
import { ChangeFeed } from "./Feed.ts"

/** The stored bytes of a coding are cut in parts this long: a row the client reads is at most 16 MiB. */
const partBytes = 4 * 1024 * 1024

const partsOf = (bytes: Uint8Array): Array<Uint8Array> =>
  Array.from({ length: Math.ceil(bytes.byteLength / partBytes) }, (_, i) => bytes.subarray(i * partBytes, (i + 1) * partBytes))

const gzip = promisify(zlib.gzip)
const brotli = promisify(zlib.brotliCompress)
const gunzip = promisify(zlib.gunzip)

/** Compressed once per cut for every follower: smaller than a page's coding on the fly, still a few seconds for 100,000 nodes. */
const compressed = (json: Buffer) =>
  Promise.all([
    gzip(json, { level: 6 }),
    brotli(json, {
      params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: json.byteLength }
    })
  ])

/** The snapshot's JSON: its cursor and time, then the listed nodes as GET /nodes answers them, by id. */
const snapshotJson = (cursor: string, builtAt: Date, total: number, pages: ReadonlyArray<string>) =>
  Buffer.from(
    `{"built_at":${JSON.stringify(builtAt.toISOString())},"cursor":${JSON.stringify(cursor)},` +
      `"nodes":[${pages.filter((p) => p.length > 0).join(",")}],"total":${total}}`
  )

/** Every node is rendered again at least this often: download counts and publishers' names are not in the feed. */
export const renderAllEveryMinutes = 10

/** More nodes changed than this since the last build: rendering them all is as quick. */
const mostChanged = 20_000

/**
 * The nodes the feed names since the snapshot's nodes were rendered, or undefined when every node
 * is to be rendered: none rendered yet, the last full rendering too old, the feed pruned past
 * them, or too many changed. Inside the build's transaction.
 */
const changedSinceRendered = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [state] = yield* sql<{ seq: string; id: string; stale: boolean; pruned: boolean }>`SELECT
      split_part(s.cursor, '.', 1) AS seq, split_part(s.cursor, '.', 2) AS id,
      s.rendered_at < now() - make_interval(mins => ${renderAllEveryMinutes}) AS stale,
      coalesce((split_part(s.cursor, '.', 1)::bigint, split_part(s.cursor, '.', 2)::bigint) < (p.seq, p.id), false) AS pruned
    FROM catalogue_snapshot_state s LEFT JOIN catalogue_changes_pruned p ON true`
  if (state === undefined || state.stale || state.pruned) return undefined
  const rows = yield* sql<{ node_id: string }>`SELECT DISTINCT node_id FROM catalogue_changes
    WHERE seq IS NOT NULL AND (seq, id) > (${state.seq}::bigint, ${state.id}::bigint) LIMIT ${mostChanged + 1}`
  return rows.length > mostChanged ? undefined : rows.map((r) => r.node_id)
})

/** Builds the snapshot at the feed's newest cursor, unless there is one already; prunes the feed. */
const build = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const pages = yield* NodePages
  const feed = yield* ChangeFeed
  const { changeFeedRetentionDays } = yield* AppConfig
  const started = Date.now()
  const cut = yield* sql.withTransaction(Effect.gen(function*() {
    // the cursor, the nodes rendered again and every node read from one snapshot of the database
    yield* sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ`
    const cursor = yield* feed.newest
    const [built] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM catalogue_snapshots WHERE cursor = ${cursor}`
    if (built!.n > 0) return undefined
    const changed = yield* changedSinceRendered
    if (changed === undefined) {
      yield* sql`DELETE FROM catalogue_snapshot_nodes`
      yield* pages.storeRendered(undefined)
    } else if (changed.length > 0) {
      yield* sql`DELETE FROM catalogue_snapshot_nodes WHERE node_id = ANY(${changed})`
      yield* pages.storeRendered(changed)
    }
    yield* sql`INSERT INTO catalogue_snapshot_state (cursor, rendered_at) VALUES (${cursor}, now())
      ON CONFLICT (only_row) DO UPDATE SET cursor = excluded.cursor
        ${changed === undefined ? sql`, rendered_at = excluded.rendered_at` : sql``}`
    const nodes = (yield* sql<{ json: string }>`SELECT json FROM catalogue_snapshot_nodes ORDER BY node_id`).map((r) => r.json)
    return { cursor, total: nodes.length, parts: nodes, full: changed === undefined, rendered: changed?.length }
  })).pipe(orDieOnDatabase)
  if (cut !== undefined) {
    const builtAt = new Date()
    const json = snapshotJson(cut.cursor, builtAt, cut.total, cut.parts)
    const [gz, br] = yield* Effect.promise(() => compressed(json))
    const millis = Date.now() - started
    yield* sql.withTransaction(Effect.gen(function*() {
      const inserted = yield* sql`INSERT INTO catalogue_snapshots ${
        sql.insert({
          cursor: cut.cursor,
          built_at: builtAt,
          nodes: cut.total,
          bytes: json.byteLength,
          gzip_bytes: gz.byteLength,
          br_bytes: br.byteLength,
          build_millis: millis
        })
      } ON CONFLICT (cursor) DO NOTHING RETURNING 1`
      if (inserted.length > 0) {
        for (const [coding, bytes] of [["gzip", gz], ["br", br]] as const) {
          for (const [part, piece] of partsOf(bytes).entries()) {
            yield* sql`INSERT INTO catalogue_snapshot_parts ${sql.insert({ cursor: cut.cursor, coding, part, bytes: piece })}`
          }
        }
      }
      yield* sql`DELETE FROM catalogue_snapshots WHERE cursor NOT IN
        (SELECT cursor FROM catalogue_snapshots ORDER BY built_at DESC LIMIT 2)`
    })).pipe(orDieOnDatabase)
    yield* Effect.logInfo(
      `catalogue snapshot at ${cut.cursor}: ${cut.total} nodes (${cut.full ? "all" : cut.rendered} rendered), ` +
        `${json.byteLength} bytes (gzip ${gz.byteLength}, br ${br.byteLength}) in ${millis} ms`
    )
  }
  const pruned = yield* feed.prune(changeFeedRetentionDays)
  if (pruned > 0) yield* Effect.logInfo(`change feed: ${pruned} changes older than ${changeFeedRetentionDays} days pruned`)
})

const Build = Schema.Struct({})

export const snapshotTask: JobTask<typeof Build.Type, SqlClient.SqlClient | NodePages | ChangeFeed | AppConfig> = defineTask(
  "catalogue-snapshot",
  Build,
  () => build
)

/** Whether the feed moved past the newest snapshot (or there is none). */
const behind = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const feed = yield* ChangeFeed
  const newest = yield* feed.newest
  const [row] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM catalogue_snapshots WHERE cursor = ${newest}`
  return row!.n === 0
}).pipe(orDieOnDatabase)

/**
 * Every `snapshotCheckMillis`, queues a build when the feed moved past the newest snapshot: forked
 * into the job runner's scope once its schema is in place (its `atStart`), ended with it. A
 * failed check (the database away) is logged and tried again.
 */
export const checkSnapshots = Effect.gen(function*() {
  const { snapshotCheckMillis } = yield* AppConfig
  const check = Effect.gen(function*() {
    // one build at a time across instances: they share the rendered nodes
    if (yield* behind) yield* snapshotTask.enqueue({}, { jobKey: snapshotTask.identifier, queueName: snapshotTask.identifier })
  }).pipe(Effect.catchCause((cause) => Effect.logWarning("catalogue snapshot check failed", cause)))
  yield* Effect.forkScoped(Effect.repeat(check, Schedule.spaced(snapshotCheckMillis)))
})

/** No snapshot was built yet (a catalogue just created, its first build on its way). */
export class SnapshotNotReady extends Data.TaggedError("SnapshotNotReady")<{}> {
  override get message() {
    return "The catalogue snapshot is being built: try again in a few seconds"
  }
}

interface Loaded {
  readonly cursor: string
  readonly body: Uint8Array
  readonly gzip: Uint8Array
  readonly br: Uint8Array
}

export class Snapshots extends Context.Service<Snapshots>()("Snapshots", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // the newest snapshot this instance loaded; a new cursor is loaded once, its askers share the load
    let loaded: { readonly cursor: string; readonly load: Promise<Loaded> } | undefined

    const load = (cursor: string) =>
      Effect.runPromise(
        Effect.gen(function*() {
          const coded = (coding: "gzip" | "br") =>
            Effect.map(
              sql<{ bytes: Uint8Array }>`SELECT bytes FROM catalogue_snapshot_parts WHERE cursor = ${cursor} AND coding = ${coding} ORDER BY part`,
              (rows) => Buffer.concat(rows.map((r) => r.bytes))
            )
          const [gz, br] = yield* Effect.all([coded("gzip"), coded("br")])
          const body = yield* Effect.promise(() => gunzip(gz))
          return { cursor, body, gzip: gz, br }
        }).pipe(Effect.orDie)
      )

    return {
      /** The newest snapshot as an answer the edge makes 304 or codes. */
      newest: traced("Snapshots.newest")(function*() {
        const [row] = yield* sql<{ cursor: string }>`SELECT cursor FROM catalogue_snapshots ORDER BY built_at DESC LIMIT 1`.pipe(
          orDieOnDatabase
        )
        if (row === undefined) return yield* new SnapshotNotReady()
        if (loaded?.cursor !== row.cursor) {
          const next = { cursor: row.cursor, load: load(row.cursor) }
          // a failed load is not kept: the next request loads again
          next.load.catch(() => loaded === next && (loaded = undefined))
          loaded = next
        }
        const current = loaded.load
        const snapshot = yield* Effect.promise(() => current)
        return represent({
          body: snapshot.body,
          contentType: "application/json",
          etag: `"snapshot-${snapshot.cursor}"`,
          // revalidated on every use: the ETag makes that a 304 while nothing changed
          cacheControl: "public, no-cache",
          forms: { br: Effect.succeed(snapshot.br), gzip: Effect.succeed(snapshot.gzip) },
          headers: { "x-catalogue-cursor": snapshot.cursor }
        })
      })
    }
  })
}) {
  static readonly layer = Layer.effect(Snapshots, Snapshots.make)
}
