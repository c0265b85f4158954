/**
 * The SQL the service runs for a request URL, taken from the service's own repositories rather
 * than copied: the repository method is run once under a statement transformer that records each
 * compiled statement (text and parameters). The baseline replays them with plain `pg`; the runner
 * EXPLAINs them.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { Statement } from "effect/sql"
import { defaultLimit, maxLimit } from "../src/Catalog/Api.ts"
import { type NodeQuery, NodePages } from "../src/Catalog/NodePages.ts"
import { NodeRepo } from "../src/Catalog/Repo.ts"
import type { SortColumn } from "../src/Domain/Node.ts"
import { semverKey } from "../src/Domain/Semver.ts"

export type Compiled = readonly [text: string, params: ReadonlyArray<unknown>]

export type Recorded =
  | { readonly _tag: "List"; readonly query: NodeQuery; readonly statement: Compiled }
  | { readonly _tag: "Version"; readonly nodeId: string; readonly version: string; readonly statement: Compiled }

/** `GET /nodes` parameters read as src/Catalog/Http.ts reads them (valid input assumed). */
export const toQuery = (params: URLSearchParams): NodeQuery => {
  const hostVersion = params.get("host_version")
  const timestamp = params.get("timestamp")
  const nodeIds = params.getAll("node_id")
  return {
    page: Number(params.get("page") ?? 1),
    limit: Math.min(Number(params.get("limit") ?? defaultLimit), maxLimit),
    sort: params.getAll("sort").map((s) => {
      const [column, direction] = s.split(";")
      return { column: column as SortColumn, desc: direction === "desc" }
    }),
    supportedOs: params.get("supported_os") ?? undefined,
    supportedAccelerator: params.get("supported_accelerator") ?? undefined,
    updatedAfter: timestamp === null ? undefined : new Date(timestamp),
    nodeIds: nodeIds.length > 0 ? nodeIds : undefined,
    hostVersionKey: hostVersion === null ? undefined : semverKey(hostVersion.trim().replace(/^v/i, ""))
  }
}

const versionPath = /^\/nodes\/([^/]+)\/versions\/([^/]+)$/

export interface StatementRecorder {
  /**
   * The statements of a `GET /nodes`, `GET /nodes/search` or `GET /nodes/{id}/versions/{v}` URL;
   * undefined for other routes.
   */
  readonly forUrl: (url: string) => Promise<Recorded | undefined>
  readonly dispose: () => Promise<void>
}

export const makeStatementRecorder = (databaseUrl: string): StatementRecorder => {
  // the statements run once while being recorded: a small pool of its own is enough
  const runtime = ManagedRuntime.make(
    Layer.merge(NodeRepo.layer, NodePages.layer).pipe(
      Layer.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 2 }))
    )
  )

  const record = <A>(effect: Effect.Effect<A, never, NodeRepo | NodePages>): Promise<ReadonlyArray<Compiled>> => {
    const statements: Array<Compiled> = []
    return runtime.runPromise(
      effect.pipe(
        Effect.provideService(Statement.CurrentTransformer, (statement) => {
          statements.push(statement.compile())
          return Effect.succeed(statement)
        }),
        Effect.as(statements)
      )
    )
  }

  const forUrl = async (url: string): Promise<Recorded | undefined> => {
    const { pathname, searchParams } = new URL(url, "http://bench")
    if (pathname === "/nodes") {
      const query = toQuery(searchParams)
      const statements = await record(Effect.flatMap(NodePages, (pages) => pages.listPage(query)))
      if (statements.length !== 1) {
        throw new Error(`expected one statement from NodePages.listPage, got ${statements.length}`)
      }
      return { _tag: "List", query, statement: statements[0]! }
    }
    if (pathname === "/nodes/search") {
      // a page of search results is answered like a page of GET /nodes
      const query = toQuery(searchParams)
      // the criteria as the handler reads them: trimmed, a blank one absent
      const criterion = (name: string) => searchParams.get(name)?.trim() || undefined
      const search = {
        ...query,
        text: criterion("search"),
        hostNode: criterion("host_node_search"),
        repository: criterion("repository_url_search"),
        includeBanned: searchParams.get("include_banned") === "true"
      }
      const statements = await record(Effect.flatMap(NodePages, (pages) => pages.search(search)))
      if (statements.length !== 1) {
        throw new Error(`expected one statement from NodePages.search, got ${statements.length}`)
      }
      return { _tag: "List", query, statement: statements[0]! }
    }
    const version = versionPath.exec(pathname)
    if (version) {
      const nodeId = decodeURIComponent(version[1]!)
      const v = decodeURIComponent(version[2]!)
      const [statement, ...rest] = await record(Effect.flatMap(NodeRepo, (repo) => repo.findVersion(nodeId, v)))
      if (!statement || rest.length > 0) throw new Error("expected one query from NodeRepo.findVersion")
      return { _tag: "Version", nodeId, version: v, statement }
    }
    return undefined
  }

  return { forUrl, dispose: () => runtime.dispose() }
}
