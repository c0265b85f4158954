/**
 * SQL of `GET /nodes/search`: PostgreSQL full-text search over each node's `search_document`
 * (kept current by the triggers of migrations/0005_search.sql), ranked, paginated and rendered as
 * the same wire JSON as `GET /nodes`, in one statement answering one row.
 */
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { archiveBase, type NodePage, nodeJson, versionJson } from "./Repo.ts"

export interface SearchQuery {
  /** What the client typed (websearch syntax), not blank. */
  readonly text: string
  readonly page: number
  readonly limit: number
  readonly supportedOs?: string | undefined
  readonly supportedAccelerator?: string | undefined
}

/**
 * The last word of the text is matched as a prefix (search as you type) when it is a plain word:
 * it ends in a letter or digit and is not negated.
 */
export const prefixesLastWord = (text: string): boolean => {
  const last = text.trim().split(/\s+/).pop() ?? ""
  return /[\p{L}\p{N}]$/u.test(last) && !last.startsWith("-")
}

export class SearchRepo extends Context.Tag("SearchRepo")<SearchRepo, {
  readonly search: (query: SearchQuery) => Effect.Effect<NodePage>
}>() {}

// best match first; among equals, the registry's own order (search_ranking, downloads), and the
// id last, so that the order is total and pages never overlap or skip
const order = "m.rank DESC, m.search_ranking ASC NULLS LAST, m.downloads DESC, m.id ASC"

export const makeSearchRepo = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const base = yield* archiveBase

  const search = (q: SearchQuery) => {
    const filters = [
      sql`n.listed`,
      sql`n.search_document @@ query.q`,
      ...(q.supportedOs === undefined ? [] : [
        sql`(n.supported_os_lc = '{}' OR n.supported_os_lc @> ARRAY[lower(${q.supportedOs})])`
      ]),
      ...(q.supportedAccelerator === undefined ? [] : [
        sql`(n.supported_accelerators_lc = '{}' OR n.supported_accelerators_lc @> ARRAY[lower(${q.supportedAccelerator})])`
      ])
    ]
    // every match is ranked (the GIN index finds them), then only the page's nodes are rendered
    return sql<{ nodes: string; total: number }>`
      WITH query AS (SELECT node_search_query(${q.text}, ${prefixesLastWord(q.text)}) AS q),
      matches AS MATERIALIZED (
        SELECT n.id, ts_rank_cd(n.search_document, query.q) AS rank, n.search_ranking, n.downloads
        FROM nodes n, query WHERE ${sql.and(filters)}),
      page AS (SELECT * FROM matches m ORDER BY ${sql.literal(order)} LIMIT ${q.limit} OFFSET ${(q.page - 1) * q.limit})
      SELECT coalesce(string_agg(${sql.literal(nodeJson("n", "p", "lv.json"))}, ',' ORDER BY ${sql.literal(order)}), '') AS nodes,
             (SELECT count(*)::int FROM matches) AS total
      FROM page m JOIN nodes n ON n.id = m.id
      JOIN publishers p ON p.id = n.publisher_id
      LEFT JOIN LATERAL (
        SELECT ${sql.literal(versionJson("v", base))} AS json FROM node_versions v
        WHERE v.node_id = n.id AND v.status = 'NodeVersionStatusActive'
        ORDER BY v.semver_key DESC, v.version DESC LIMIT 1) lv ON true`.pipe(
      Effect.map((rows) => ({ nodes: rows[0]?.nodes ?? "", total: rows[0]?.total ?? 0 })),
      Effect.orDie
    )
  }

  return SearchRepo.of({ search })
})

export const SearchRepoLive = Layer.effect(SearchRepo, makeSearchRepo)
