/**
 * The benchmark's baseline: plain `node:http` and a `pg` Pool answering `GET /nodes` and
 * `GET /nodes/{id}/versions/{v}` with exactly the SQL the service runs, and nothing else (no
 * framework, no validation, no cache, no ETag).
 *
 * The first request for a URL learns its statements from the service's repositories (statements.ts);
 * every later request for that URL is served by `pg` alone, running them as the service does (a
 * page and its count at once). The runner requests every URL once before it measures, so only
 * that plain path is measured.
 *
 * Environment: PORT, DATABASE_URL.
 */
import * as http from "node:http"
import pg from "pg"
import { makeStatementRecorder, type Recorded } from "./statements.ts"

const port = Number(process.env.PORT ?? 8090)
const databaseUrl = process.env.DATABASE_URL
if (!databaseUrl) throw new Error("DATABASE_URL is required")

// the service's pool has 20 connections too (src/Db/Database.ts)
const pool = new pg.Pool({ connectionString: databaseUrl, max: 20 })
const recorder = makeStatementRecorder(databaseUrl)

interface Answer {
  readonly status: number
  readonly body: string
}

const error = (status: number, code: string, message: string): Answer => ({
  status,
  body: JSON.stringify({ error: code, message })
})

const answer = async (recorded: Recorded): Promise<Answer> => {
  switch (recorded._tag) {
    case "List": {
      const { query, statement } = recorded
      const page = await pool.query<{ nodes: string; total: number }>(statement[0], [...statement[1]])
      const n = page.rows[0]?.total ?? 0
      return {
        status: 200,
        body: `{"limit":${query.limit},"nodes":[${page.rows[0]?.nodes ?? ""}],"page":${query.page},"total":${n},"totalPages":${
          Math.ceil(n / query.limit)
        }}`
      }
    }
    case "Version": {
      const { nodeId, version, statement } = recorded
      const row = (await pool.query<VersionRow>(statement[0], [...statement[1]])).rows[0]
      // the decisions of Catalog.getVersion (the measured versions exist)
      if (!row || row.nodeStatus === "NodeStatusDeleted") return error(404, "not_found", `Node '${nodeId}' has no version '${version}'`)
      if (row.nodeStatus === "NodeStatusBanned" || row.publisherStatus === "PublisherStatusBanned") {
        return error(403, "node_banned", `Node '${nodeId}' is banned`)
      }
      return { status: 200, body: JSON.stringify(row.version) }
    }
  }
}

/** A version row of Catalog/Repo.ts: the node's statuses and the version's record, as JSON. */
interface VersionRow {
  readonly nodeStatus: string
  readonly publisherStatus: string
  readonly version: unknown
}

/** Statements by request URL; a promise, so that concurrent first requests record once. */
const statements = new Map<string, Promise<Recorded | undefined>>()

const statementsFor = (url: string) => {
  let recorded = statements.get(url)
  if (!recorded) {
    recorded = recorder.forUrl(url)
    statements.set(url, recorded)
  }
  return recorded
}

const send = (res: http.ServerResponse, { status, body }: Answer) => {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}

const server = http.createServer((req, res) => {
  const url = req.url ?? "/"
  if (url === "/ready") return send(res, { status: 200, body: `{"status":"ok"}` })
  statementsFor(url)
    .then((recorded) => (recorded ? answer(recorded) : error(404, "not_found", "No such route")))
    .then((a) => send(res, a), (e: unknown) => {
      console.error(e)
      send(res, error(500, "internal_error", "Internal error"))
    })
})

server.listen(port, "127.0.0.1")

const shutdown = () => {
  server.close()
  server.closeAllConnections()
  void Promise.allSettled([pool.end(), recorder.dispose()]).then(() => process.exit(0))
}
process.once("SIGTERM", shutdown)
process.once("SIGINT", shutdown)
