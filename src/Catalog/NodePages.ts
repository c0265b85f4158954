/**
 * The one fast path: pages of nodes rendered as JSON by PostgreSQL. `GET /nodes`, search and the
 * publisher listings answer many records at once, and the benchmark shows that building their
 * JSON in the statement (one row: the page's nodes joined, and the total) pays. Everything else
 * returns typed records (Records.ts) that HttpApi encodes; a property test holds the JSON built
 * here equal to the Schema encoding of the same records (test/Catalog/FastPath.prop.test.ts).
 *
 * `json_strip_nulls` drops absent fields, as the Domain's optional fields are absent, not null.
 */
import { SqlClient, type Statement } from "effect/sql"
import { Context, Effect, Layer } from "effect"
import type { Beside } from "../Compat/Answers.ts"
import type { SortKey } from "../Domain/Node.ts"
import { traced } from "../Tracing.ts"
import { answerAliasesOf, archiveBase, besidePairs, displayName, heldVersionJson, latestCandidate, nodeDescription, versionObject } from "./Records.ts"

/** A page of `GET /nodes` (or of a publisher's listing, or of search), already validated. */
export interface NodeQuery {
  readonly page: number
  readonly limit: number
  readonly sort: ReadonlyArray<SortKey>
  readonly supportedOs?: string | undefined
  readonly supportedAccelerator?: string | undefined
  readonly updatedAfter?: Date | undefined
  readonly nodeIds?: ReadonlyArray<string> | undefined
  /** semver key of the host application's version: only nodes with an installable version admitting it, or none installable. */
  readonly hostVersionKey?: string | undefined
  /** A publisher's own listing: its nodes (none while the publisher is banned, unless `includeBanned`). */
  readonly publisherId?: string | undefined
  /** Active and banned nodes whatever their publisher's status, rather than the listed ones. */
  readonly includeBanned?: boolean | undefined
}

/** A search: its criteria (each trimmed, not blank; at least one) and the filters search takes. */
export interface SearchQuery {
  /** Full text, websearch syntax. */
  readonly text?: string | undefined
  /** A part of a host-node name. */
  readonly hostNode?: string | undefined
  /** A part of a repository URL. */
  readonly repository?: string | undefined
  readonly includeBanned: boolean
  readonly page: number
  readonly limit: number
  readonly supportedOs?: string | undefined
  readonly supportedAccelerator?: string | undefined
}

/** One page: its nodes as JSON objects separated by commas, and how many match in all. */
export interface NodePage {
  readonly nodes: string
  readonly total: number
}

/** The publisher row `p` as wire JSON, without members (a SQL expression). */
const publisherJson = (p: string) =>
  `json_build_object(
    'createdAt', iso_time(${p}.created_at), 'description', ${p}.description, 'id', ${p}.id,
    'logo', ${p}.logo, 'name', ${displayName(p)}, 'source_code_repo', ${p}.source_code_repo,
    'status', ${p}.status, 'support', ${p}.support, 'website', ${p}.website)`

/**
 * The node `n` of publisher `p` with latest version JSON `latest`, as wire JSON text, with the
 * clients' names `beside` (a SQL expression).
 */
const nodeJson = (n: string, p: string, latest: string, beside: Beside) =>
  `json_strip_nulls(json_build_object(${besidePairs(n, beside)}
    'author', ${n}.author, 'banner_url', ${n}.banner_url, 'category', ${n}.category,
    'created_at', iso_time(${n}.created_at), 'description', ${nodeDescription(n)},
    'downloads', ${n}.downloads, 'repohost_stars', ${n}.repohost_stars, 'icon', ${n}.icon,
    'id', ${n}.id, 'latest_version', ${latest}, 'held_version', ${heldVersionJson(n)}, 'license', ${n}.license, 'name', ${displayName(n)},
    'preempted_host_node_names', ${n}.preempted_host_node_names, 'publisher', ${publisherJson(p)},
    'rating', ${n}.rating, 'repository', ${n}.repository, 'search_ranking', ${n}.search_ranking,
    'status', ${n}.status, 'status_detail', ${n}.status_detail,
    'supported_accelerators', ${n}.supported_accelerators,
    'supported_host_frontend_version', ${n}.supported_host_frontend_version,
    'supported_host_version', ${n}.supported_host_version, 'supported_os', ${n}.supported_os,
    'tags', ${n}.tags, 'tags_admin', ${n}.tags_admin, 'translations', ${n}.translations))::text`

const orderSql = (sort: ReadonlyArray<SortKey>, alias: string): string => {
  const keys = sort.length > 0
    ? sort.map(({ column, desc }) => `${alias}.${column} ${desc ? "DESC" : "ASC"} NULLS LAST`)
    // default: lower search ranking first (unset last), then the most downloaded
    : [`${alias}.search_ranking ASC NULLS LAST`, `${alias}.downloads DESC`]
  // the id makes the order total, so pages never overlap or skip
  return [...keys, `${alias}.id ASC`].join(", ")
}

/**
 * The search text with each run of negations (`--a`, `- - -a`, or 33 hyphens alone) reduced to
 * what it means: one `-` when the run is odd, none when it is even. PostgreSQL's websearch parser
 * stacks every `-` as a NOT operator and fails past 32 in a row (`tsquery stack too small`); the
 * characters between them are those it skips while waiting for a word.
 */
export const reducedNegations = (text: string): string =>
  text.replace(/-(?:[\s!&|()<]*-)+/g, (run) => (run.split("-").length % 2 === 0 ? "-" : " "))

/**
 * The last word of a search is matched as a prefix (search as you type) when it is a plain word:
 * it ends in a letter or digit and is not negated.
 */
export const prefixesLastWord = (text: string): boolean => {
  const last = text.trim().split(/\s+/).pop() ?? ""
  return /[\p{L}\p{N}]$/u.test(last) && !last.startsWith("-")
}

// best text match first, then the closest host-node name and repository; among equals, the
// registry's own order (search_ranking, downloads), and the id last, so that the order is total
// and pages never overlap or skip
const searchOrder =
  "m.rank DESC, m.host_node_closeness, m.repository_closeness, m.search_ranking ASC NULLS LAST, m.downloads DESC, m.id ASC"

export class NodePages extends Context.Service<NodePages>()("NodePages", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const base = yield* archiveBase
    // the clients' names in the pages too when answers carry them (ANSWER_ALIASES)
    const aliases = yield* answerAliasesOf

    /** The version `v` admits the host version whose key is the given parameter. */
    const admitsHost = (hostKey: string): Statement.Fragment =>
      sql`(v.admits_any_host OR EXISTS (
        SELECT 1 FROM node_version_host_ranges r
        WHERE r.version_id = v.id
          AND (r.lo IS NULL OR r.lo < ${hostKey} OR (r.lo_incl AND r.lo = ${hostKey}))
          AND (r.hi IS NULL OR ${hostKey} < r.hi OR (r.hi_incl AND r.hi = ${hostKey}))))`

    // a yanked version is never the latest one
    const latestVersionCandidate = sql.literal(latestCandidate("v"))

    const osFilter = (os: string) => sql`(n.supported_os_lc = '{}' OR n.supported_os_lc @> ARRAY[lower(${os})])`
    const acceleratorFilter = (accelerator: string) =>
      sql`(n.supported_accelerators_lc = '{}' OR n.supported_accelerators_lc @> ARRAY[lower(${accelerator})])`

    /** The listed nodes, or with `includeBanned` the active and banned ones whatever their publisher's status. */
    const visible = (includeBanned: boolean | undefined) =>
      includeBanned ? sql`n.status IN ('NodeStatusActive', 'NodeStatusBanned')` : sql`n.listed`

    /**
     * The node or its publisher (part of its JSON) changed after `at`. The publishers changed since
     * are few (their `updated_at` index finds them): one array, then the nodes' index by publisher.
     */
    const updatedAfter = (at: Date) =>
      sql`(n.updated_at > ${at}
           OR n.publisher_id = ANY(ARRAY(SELECT id FROM publishers WHERE updated_at > ${at})))`

    const filters = (q: NodeQuery): Statement.Fragment => {
      const clauses: Array<Statement.Fragment> = [visible(q.includeBanned)]
      if (q.publisherId !== undefined) clauses.push(sql`n.publisher_id = ${q.publisherId}`)
      if (q.supportedOs !== undefined) clauses.push(osFilter(q.supportedOs))
      if (q.supportedAccelerator !== undefined) clauses.push(acceleratorFilter(q.supportedAccelerator))
      if (q.updatedAfter !== undefined) clauses.push(updatedAfter(q.updatedAfter))
      if (q.nodeIds !== undefined) clauses.push(sql`n.id = ANY(${q.nodeIds as Array<string>})`)
      // a node with no installable version that is not yanked makes no claim about hosts: it
      // stays listed (the package manager installs it from its repository); one whose such
      // versions all exclude the host is dropped. The versions counted are those latest_version
      // is chosen from, so that a listed node shows its latest version for the host.
      if (q.hostVersionKey !== undefined) {
        clauses.push(sql`(NOT EXISTS (SELECT 1 FROM node_versions v WHERE v.node_id = n.id AND ${latestVersionCandidate})
          OR EXISTS (SELECT 1 FROM node_versions v
            WHERE v.node_id = n.id AND ${latestVersionCandidate} AND ${admitsHost(q.hostVersionKey)}))`)
      }
      return sql.and(clauses)
    }

    // the statements' constant parts, built once rather than on every request
    const versionJson = sql.literal(versionObject("v", base, aliases?.version))
    const pageNodesJson = sql.literal(nodeJson("n", "p", "lv.json", aliases?.node ?? []))
    const searchOrderSql = sql.literal(searchOrder)
    const defaultOrderSql = sql.literal(orderSql([], "n"))

    const latestVersion = (hostVersionKey: string | undefined) =>
      sql`LEFT JOIN LATERAL (
        SELECT ${versionJson} AS json FROM node_versions v
        WHERE v.node_id = n.id AND ${latestVersionCandidate}
          ${hostVersionKey !== undefined ? sql`AND ${admitsHost(hostVersionKey)}` : sql``}
        ORDER BY v.semver_key DESC, v.version DESC LIMIT 1) lv ON true`

    /** No filter beyond the public listing's own: the total is the maintained count. */
    const unfiltered = (q: NodeQuery) =>
      q.publisherId === undefined && !q.includeBanned && q.supportedOs === undefined && q.supportedAccelerator === undefined &&
      q.updatedAfter === undefined && q.nodeIds === undefined && q.hostVersionKey === undefined

    const onePage = (rows: ReadonlyArray<NodePage>): NodePage => ({ nodes: rows[0]?.nodes ?? "", total: rows[0]?.total ?? 0 })

    /** A page of nodes: one statement, one row. */
    const listPage = traced("NodePages.listPage")(function*(q: NodeQuery) {
      const where = filters(q)
      const order = q.sort.length === 0 ? defaultOrderSql : sql.literal(orderSql(q.sort, "n"))
      const total = unfiltered(q)
        ? sql`(SELECT listed::int FROM catalogue_counts)`
        : sql`(SELECT count(*)::int FROM nodes n WHERE ${where})`
      // The page is chosen on ids alone (an index-only scan for the default order, however deep
      // the page), then only its nodes are read in full.
      const rows = yield* sql<NodePage>`
        WITH page AS (SELECT n.id FROM nodes n WHERE ${where}
                      ORDER BY ${order} LIMIT ${q.limit} OFFSET ${(q.page - 1) * q.limit})
        SELECT coalesce(string_agg(${pageNodesJson}, ',' ORDER BY ${order}), '') AS nodes,
               ${total} AS total
        FROM page JOIN nodes n ON n.id = page.id
        JOIN publishers p ON p.id = n.publisher_id
        ${latestVersion(q.hostVersionKey)}`.pipe(Effect.orDie)
      return onePage(rows)
    })

    /**
     * A node providing a host-node whose name contains `part` (case-insensitive): the trigram index
     * finds candidates in the names' text, each confirmed name by name.
     */
    const hostNodeMatch = (part: string) => {
      const pattern = sql`'%' || like_escape(${part}) || '%'`
      return sql`(host_node_names_text(n.host_node_names) ILIKE ${pattern}
        AND EXISTS (SELECT 1 FROM unnest(n.host_node_names) h WHERE h ILIKE ${pattern}))`
    }

    /** 0 when a host-node name is `part` (case-insensitive), 1 when one starts with it, else 2. */
    const hostNodeCloseness = (part: string) =>
      sql`(SELECT min(CASE WHEN lower(h) = lower(${part}) THEN 0 WHEN h ILIKE like_escape(${part}) || '%' THEN 1 ELSE 2 END)
           FROM unnest(n.host_node_names) h)`

    /** The node's repository URL contains `part`, both compared as keys (migrations/0010_search_criteria.sql). */
    const repositoryMatch = (part: string) =>
      sql`repository_key(n.repository) LIKE '%' || like_escape(repository_key(${part})) || '%'`

    /** 0 when the repository is the one `part` names, else 1. */
    const repositoryCloseness = (part: string) =>
      sql`(CASE WHEN repository_key(n.repository) = repository_key(${part}) THEN 0 ELSE 1 END)`

    /**
     * A page of search results: each criterion narrows the matches (full text over each node's
     * `search_document`, kept current by the triggers of migrations/0005_search.sql; host-node names
     * and repository URLs through trigram indexes), every match is ranked, then only the page's
     * nodes are rendered.
     */
    const search = traced("NodePages.search")(function*(q: SearchQuery) {
      const text = q.text === undefined ? undefined : reducedNegations(q.text)
      // an immutable function of the parameters: folded into a constant, so the GIN index serves it
      const tsquery = text === undefined ? undefined : sql`node_search_query(${text}, ${prefixesLastWord(text)})`
      const where = [
        visible(q.includeBanned),
        ...(tsquery === undefined ? [] : [sql`n.search_document @@ ${tsquery}`]),
        ...(q.hostNode === undefined ? [] : [hostNodeMatch(q.hostNode)]),
        ...(q.repository === undefined ? [] : [repositoryMatch(q.repository)]),
        ...(q.supportedOs === undefined ? [] : [osFilter(q.supportedOs)]),
        ...(q.supportedAccelerator === undefined ? [] : [acceleratorFilter(q.supportedAccelerator)])
      ]
      const rows = yield* sql<NodePage>`
        WITH matches AS MATERIALIZED (
          SELECT n.id, n.search_ranking, n.downloads,
                 ${tsquery === undefined ? sql`0::real` : sql`ts_rank_cd(n.search_document, ${tsquery})`} AS rank,
                 ${q.hostNode === undefined ? sql`0` : hostNodeCloseness(q.hostNode)} AS host_node_closeness,
                 ${q.repository === undefined ? sql`0` : repositoryCloseness(q.repository)} AS repository_closeness
          FROM nodes n WHERE ${sql.and(where)}),
        page AS (SELECT * FROM matches m ORDER BY ${searchOrderSql} LIMIT ${q.limit} OFFSET ${(q.page - 1) * q.limit})
        SELECT coalesce(string_agg(${pageNodesJson}, ',' ORDER BY ${searchOrderSql}), '') AS nodes,
               (SELECT count(*)::int FROM matches) AS total
        FROM page m JOIN nodes n ON n.id = m.id
        JOIN publishers p ON p.id = n.publisher_id
        ${latestVersion(undefined)}`.pipe(Effect.orDie)
      return onePage(rows)
    })

    /**
     * Stores the listed nodes among `ids` (all listed nodes when `ids` is undefined), each rendered
     * as a page renders it, in the catalogue snapshot's table of nodes (Sync/Snapshot.ts): one
     * statement, the JSON never leaves the database.
     */
    const storeRendered = traced("NodePages.storeRendered")(function*(ids: ReadonlyArray<string> | undefined) {
      yield* sql`INSERT INTO catalogue_snapshot_nodes (node_id, json)
        SELECT n.id, ${pageNodesJson}::text FROM nodes n
        JOIN publishers p ON p.id = n.publisher_id
        ${latestVersion(undefined)}
        WHERE n.listed ${ids === undefined ? sql`` : sql`AND n.id = ANY(${ids as Array<string>})`}`.pipe(Effect.orDie)
    })

    return { listPage, search, storeRendered }
  })
}) {
  static readonly layer = Layer.effect(NodePages, NodePages.make)
}
