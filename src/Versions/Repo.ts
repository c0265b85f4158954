/**
 * SQL of versions across nodes: a page of the moderation queue, and the resolution of many
 * `{node_id, version}` pairs in one statement.
 */
import { SqlClient, SqlSchema } from "effect/sql"
import { Context, Effect, Layer, Schema } from "effect"
import { archiveBase, versionRecord } from "../Catalog/Records.ts"
import { NodeStatus, NodeVersion, NodeVersionStatus } from "../Domain/Node.ts"
import { PublisherStatus } from "../Domain/Publisher.ts"
import type { NodeVersionIdentifier } from "../Domain/Versions.ts"
import { traced } from "../Tracing.ts"

/** What a page of the queue holds: the statuses and node asked for, and whether only listed nodes count. */
export interface QueueQuery {
  readonly page: number
  readonly pageSize: number
  /** Every status when absent. */
  readonly statuses: ReadonlyArray<NodeVersionStatus> | undefined
  readonly nodeId: string | undefined
  /** Text the version's status_reason contains, ignoring case. */
  readonly statusReason: string | undefined
  /** Only versions of nodes that public listings show (the node and its publisher active). */
  readonly listedOnly: boolean
}

/** One requested pair, with what the database holds of it: each column NULL when there is no such record. */
export const ResolvedPair = Schema.Struct({
  node_status: Schema.NullOr(NodeStatus),
  publisher_status: Schema.NullOr(PublisherStatus),
  version: Schema.NullOr(NodeVersion)
})
export type ResolvedPair = typeof ResolvedPair.Type

export class VersionsRepo extends Context.Service<VersionsRepo>()("VersionsRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const base = yield* archiveBase

    const conditions = (q: QueueQuery) => [
      ...(q.statuses === undefined ? [] : [sql`v.status = ANY(${q.statuses as Array<string>})`]),
      ...(q.nodeId === undefined ? [] : [sql`v.node_id = ${q.nodeId}`]),
      // strpos rather than ILIKE: the text is matched as it is, with no wildcard to escape
      ...(q.statusReason === undefined ? [] : [sql`strpos(lower(v.status_reason), lower(${q.statusReason})) > 0`]),
      ...(q.listedOnly ? [sql`v.node_id IN (SELECT id FROM nodes WHERE listed)`] : [])
    ]

    const queuePage = SqlSchema.findOne({
      Request: Schema.Any,
      Result: Schema.Struct({ total: Schema.Int, versions: Schema.Array(NodeVersion) }),
      // the total and the page in one statement; the page follows the index (created_at DESC, id)
      execute: (q: QueueQuery) => {
        const where = sql.and(conditions(q))
        return sql`SELECT
            (SELECT count(*)::int FROM node_versions v WHERE ${where}) AS total,
            coalesce((SELECT json_agg(x.version ORDER BY x.created_at DESC, x.id) FROM (
              SELECT v.created_at, v.id, ${sql.literal(versionRecord("v", base))} AS version
              FROM node_versions v WHERE ${where}
              ORDER BY v.created_at DESC, v.id
              LIMIT ${q.pageSize} OFFSET ${(q.page - 1) * q.pageSize}) x), '[]'::json) AS versions`
      }
    })

    const resolvePairs = SqlSchema.findAll({
      Request: Schema.Array(Schema.Struct({ node_id: Schema.String, version: Schema.String })),
      Result: ResolvedPair,
      // Every pair in one statement, answered in the request's order (duplicates included). Each
      // pair is two index lookups (the node by id, the version by the unique (node_id, version)):
      // the LIMITs keep the planner from hashing whole tables, so the cost follows the pairs, not
      // the catalogue's size.
      execute: (pairs) =>
        sql`SELECT n.status AS node_status, n.publisher_status,
                   CASE WHEN v.id IS NOT NULL THEN ${sql.literal(versionRecord("v", base))} END AS version
            FROM unnest(${pairs.map((p) => p.node_id)}::text[], ${pairs.map((p) => p.version)}::text[])
                 WITH ORDINALITY AS r(node_id, version, i)
            LEFT JOIN LATERAL (
              SELECT n.id, n.status, p.status AS publisher_status FROM nodes n JOIN publishers p ON p.id = n.publisher_id
              WHERE n.id = r.node_id LIMIT 1) n ON true
            LEFT JOIN LATERAL (
              SELECT * FROM node_versions v WHERE v.node_id = n.id AND v.version = r.version LIMIT 1) v ON true
            ORDER BY r.i`
    })

    return {
      /** A page of versions, newest first, and how many match in all. */
      queuePage: traced("VersionsRepo.queuePage")(function*(query: QueueQuery) {
        return yield* Effect.orDie(queuePage(query))
      }),

      /** For each pair, in order: its node's and publisher's statuses and the version, in any status. */
      resolve: traced("VersionsRepo.resolve")(function*(pairs: ReadonlyArray<NodeVersionIdentifier>) {
        if (pairs.length === 0) return []
        return yield* Effect.orDie(resolvePairs(pairs))
      })
    }
  })
}) {
  static readonly layer = Layer.effect(VersionsRepo, VersionsRepo.make)
}
