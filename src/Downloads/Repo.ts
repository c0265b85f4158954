/**
 * What download statistics keep (migration 0025): the install counts of completed hours folded
 * into one row per node, version and UTC day (`download_days`), and the raw rows of
 * `install_counts` (one per client address, node, version and hour, written by the install
 * itself, Catalog/Repo.ts) until they are folded.
 */
import { SqlClient, SqlSchema } from "effect/sql"
import { Context, Effect, Layer, Schema } from "effect"
import { orDieOnDatabase } from "../Db/Rows.ts"
import { traced } from "../Tracing.ts"

/**
 * How long after an hour ends its rows wait before they are folded: an install is one statement
 * of milliseconds, so none started in the hour is still writing to it by then, and the dedupe of
 * that hour no longer has a row to compare with only once no install can fall in it.
 */
export const foldGraceMinutes = 5

const SeriesDay = Schema.Struct({ date: Schema.String, downloads: Schema.Int })

export class DownloadRepo extends Context.Service<DownloadRepo>()("DownloadRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const series = SqlSchema.findAll({
      Request: Schema.Struct({ nodeId: Schema.String, from: Schema.String, to: Schema.String, version: Schema.UndefinedOr(Schema.String) }),
      Result: SeriesDay,
      // One statement, so one snapshot: a fold commits its deletes and its sums together, and
      // this read sees either both or neither. Days are UTC days.
      execute: ({ nodeId, from, to, version }) => {
        const ofVersion = version === undefined ? sql`` : sql`AND version = ${version}`
        return sql`WITH counted AS (
            SELECT day, downloads FROM download_days
            WHERE node_id = ${nodeId} AND day BETWEEN ${from}::date AND ${to}::date ${ofVersion}
            UNION ALL
            SELECT (hour AT TIME ZONE 'UTC')::date, 1 FROM install_counts
            WHERE node_id = ${nodeId} ${ofVersion}
              AND hour >= ${from}::date::timestamp AT TIME ZONE 'UTC'
              AND hour < (${to}::date + 1)::timestamp AT TIME ZONE 'UTC'),
          per_day AS (SELECT day, sum(downloads) AS downloads FROM counted GROUP BY day)
          SELECT to_char(d, 'YYYY-MM-DD') AS date, coalesce(p.downloads, 0)::int AS downloads
          FROM generate_series(${from}::date, ${to}::date, interval '1 day') d
          LEFT JOIN per_day p ON p.day = d::date
          ORDER BY d`
      }
    })

    return {
      /** The node's installs on each day from `from` to `to` (both included, every day present), of one version or all. */
      series: traced("DownloadRepo.series")(function*(nodeId: string, from: string, to: string, version: string | undefined) {
        return yield* orDieOnDatabase(series({ nodeId, from, to, version }))
      }),

      /** Whether the node has, or had, this version (in any status: a deleted version was downloaded too). */
      hadVersion: traced("DownloadRepo.hadVersion")(function*(nodeId: string, version: string) {
        const rows = yield* orDieOnDatabase(sql`SELECT 1 FROM node_versions WHERE node_id = ${nodeId} AND version = ${version}`)
        return rows.length > 0
      }),

      /**
       * Folds the rows of the hours that ended `foldGraceMinutes` ago or earlier into their days,
       * and deletes them: one statement, so a crash folds all of them or none, and a second fold
       * (another instance, a retry) finds them gone and adds nothing. Answers how many rows it folded.
       */
      fold: traced("DownloadRepo.fold")(function*() {
        const rows = yield* orDieOnDatabase(sql<{ readonly folded: number }>`WITH gone AS (
            DELETE FROM install_counts
            WHERE hour < date_trunc('hour', now() - make_interval(mins => ${foldGraceMinutes}))
            RETURNING node_id, version, (hour AT TIME ZONE 'UTC')::date AS day),
          sums AS (SELECT node_id, version, day, count(*) AS downloads FROM gone GROUP BY node_id, version, day),
          added AS (
            INSERT INTO download_days (node_id, version, day, downloads)
            SELECT node_id, version, day, downloads FROM sums
            ON CONFLICT (node_id, day, version) DO UPDATE SET downloads = download_days.downloads + EXCLUDED.downloads
            RETURNING 1)
          SELECT (SELECT count(*) FROM gone)::int AS folded`)
        return rows[0]?.folded ?? 0
      })
    }
  })
}) {
  static readonly layer = Layer.effect(DownloadRepo, DownloadRepo.make)
}
