/**
 * The change feed (issue 30, `ListCatalogueChanges`): the catalogue's changes after a cursor, in an
 * order a follower can neither miss one in nor see one twice.
 *
 * Triggers write a change in the transaction that makes it, and number the transaction's changes
 * at its commit, under a lock held until the commit is visible (migration 0027): the numbers
 * become visible in commit order, with no gap a later commit could fill. A cursor is the key of
 * the last change a follower holds, `<seq>.<id>`; `0.0`, before every change, is the snapshot's
 * cursor while the feed is empty.
 *
 * Pruning (CHANGE_FEED_RETENTION_DAYS) deletes a prefix of the feed in key order and remembers
 * where it ended: a cursor before that is answered 410 (take the snapshot); the newest change
 * served is never pruned, so a follower that is up to date stays valid however quiet the catalogue.
 */
import { SqlClient } from "effect/sql"
import { Context, Data, Effect, Layer } from "effect"
import { orDieOnDatabase } from "../Db/Rows.ts"
import { CatalogueChange, CatalogueChanges, type changeKinds } from "../Domain/Sync.ts"
import { traced } from "../Tracing.ts"

/** The feed's origin: before every change. */
export const origin = "0.0"

/** A syntactically valid cursor that the feed never handed out. */
export class CursorNeverIssued extends Data.TaggedError("CursorNeverIssued")<{ readonly cursor: string }> {
  override get message() {
    return `cursor: ${this.cursor} was never issued by this feed; start from the snapshot's cursor (GET /catalogue/snapshot)`
  }
}

/** A cursor older than what the feed keeps. */
export class CursorTooOld extends Data.TaggedError("CursorTooOld")<{ readonly cursor: string; readonly retentionDays: number }> {
  override get message() {
    return `cursor: ${this.cursor} is older than the change feed keeps (${this.retentionDays} days): ` +
      "take the catalogue snapshot (GET /catalogue/snapshot) and follow its cursor"
  }
}

const maxBigint = 2n ** 63n - 1n

/** The cursor's two parts, when both are in range (the pattern is checked by the contract). */
const partsOf = (cursor: string) => {
  const [seq, id] = cursor.split(".").map((part) => BigInt(part)) as [bigint, bigint]
  return seq <= maxBigint && id <= maxBigint ? { seq: seq.toString(), id: id.toString() } : undefined
}

interface ChangeRow {
  readonly issued: boolean
  readonly expired: boolean
  readonly seq: string | null
  readonly id: string | null
  readonly kind: (typeof changeKinds)[number] | null
  readonly node_id: string | null
  readonly version: string | null
  readonly status: string | null
  readonly listed: boolean | null
  readonly yanked: boolean | null
  readonly at: Date | null
}

export class ChangeFeed extends Context.Service<ChangeFeed>()("ChangeFeed", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    return {
      /**
       * Up to `limit` changes after `cursor`, oldest first, with the cursor to ask with next.
       * One statement: the cursor's check and the page are of one snapshot.
       */
      after: traced("ChangeFeed.after")(function*(cursor: string, limit: number, retentionDays: number) {
        const key = partsOf(cursor)
        if (key === undefined) return yield* new CursorNeverIssued({ cursor })
        const rows = yield* sql<ChangeRow>`WITH state AS (
            SELECT coalesce((${key.seq}::bigint, ${key.id}::bigint) < (p.seq, p.id), false) AS expired,
                   EXISTS (SELECT 1 FROM catalogue_changes c WHERE c.seq = ${key.seq}::bigint AND c.id = ${key.id}::bigint)
                     OR coalesce((p.seq, p.id) = (${key.seq}::bigint, ${key.id}::bigint), false)
                     OR (${key.seq}::bigint = 0 AND ${key.id}::bigint = 0 AND p.seq IS NULL) AS issued
            FROM (SELECT 1) one LEFT JOIN catalogue_changes_pruned p ON true),
          page AS (
            SELECT c.seq::text, c.id::text, c.kind, c.node_id, c.version, c.status, c.listed, c.yanked, c.at
            FROM catalogue_changes c
            WHERE c.seq IS NOT NULL AND (c.seq, c.id) > (${key.seq}::bigint, ${key.id}::bigint)
            ORDER BY c.seq, c.id LIMIT ${limit + 1})
          SELECT s.issued, s.expired, page.* FROM state s LEFT JOIN page ON s.issued AND NOT s.expired
          ORDER BY page.seq::bigint, page.id::bigint`.pipe(orDieOnDatabase)
        const state = rows[0]!
        if (state.expired) return yield* new CursorTooOld({ cursor, retentionDays })
        if (!state.issued) return yield* new CursorNeverIssued({ cursor })
        const found = rows.filter((r) => r.seq !== null).slice(0, limit)
        const last = found.at(-1)
        return new CatalogueChanges({
          changes: found.map((r) =>
            new CatalogueChange({
              kind: r.kind!,
              node_id: r.node_id!,
              status: r.status!,
              at: r.at!,
              ...(r.version === null ? {} : { version: r.version }),
              ...(r.listed === null ? {} : { listed: r.listed }),
              ...(r.yanked === null ? {} : { yanked: r.yanked })
            })
          ),
          next_cursor: last === undefined ? cursor : `${last.seq}.${last.id}`,
          has_more: rows.filter((r) => r.seq !== null).length > limit
        })
      }),

      /** The cursor of the newest change served now: what a snapshot cut now carries. Run inside the snapshot's transaction. */
      newest: Effect.map(
        sql<{ cursor: string }>`SELECT coalesce(
            (SELECT c.seq::text || '.' || c.id::text FROM catalogue_changes c WHERE c.seq IS NOT NULL ORDER BY c.seq DESC, c.id DESC LIMIT 1),
            (SELECT p.seq::text || '.' || p.id::text FROM catalogue_changes_pruned p),
            ${origin}) AS cursor`,
        (rows) => rows[0]!.cursor
      ),

      /**
       * Deletes the changes older than `retentionDays`, as a prefix of the feed that stops before
       * the newest change served; answers how many went.
       */
      prune: traced("ChangeFeed.prune")(function*(retentionDays: number) {
        const rows = yield* sql<{ pruned: number }>`WITH newest AS (
            SELECT c.seq, c.id FROM catalogue_changes c WHERE c.seq IS NOT NULL ORDER BY c.seq DESC, c.id DESC LIMIT 1),
          through AS (
            SELECT c.seq, c.id FROM catalogue_changes c, newest n
            WHERE c.seq IS NOT NULL AND c.at < now() - make_interval(days => ${retentionDays}) AND (c.seq, c.id) < (n.seq, n.id)
            ORDER BY c.seq DESC, c.id DESC LIMIT 1),
          gone AS (
            DELETE FROM catalogue_changes c USING through t WHERE c.seq IS NOT NULL AND (c.seq, c.id) <= (t.seq, t.id) RETURNING 1),
          mark AS (
            INSERT INTO catalogue_changes_pruned (seq, id) SELECT seq, id FROM through
            ON CONFLICT (only_row) DO UPDATE SET seq = excluded.seq, id = excluded.id)
          SELECT count(*)::int AS pruned FROM gone`.pipe(orDieOnDatabase)
        return rows[0]?.pruned ?? 0
      })
    }
  })
}) {
  static readonly layer = Layer.effect(ChangeFeed, ChangeFeed.make)
}
