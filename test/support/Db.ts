/**
 * Direct SQL on a service's database: for what no endpoint does (memberships), and to read stored
 * rows back, proving what was (or was not) written. The calls on one database share a small
 * pool: a new connection cost this suite's server about 9 ms of CPU and the test's process 6 ms
 * (SCRAM, a forked backend), and the service tier opened 2,700 of them, one per call.
 */
import { Effect } from "effect"
import pg from "pg"
import type { Running } from "./Service.ts"

/** A database to connect to: a running service's, or any `{ databaseUrl }`. */
export type Database = Pick<Running, "databaseUrl">

const pools = new Map<string, pg.Pool>()

/** The pool on `url`: a few connections, closed after a second of idleness. */
const poolOn = (url: string) => {
  let pool = pools.get(url)
  if (pool === undefined) {
    pool = new pg.Pool({ connectionString: url, max: 3, idleTimeoutMillis: 1_000, allowExitOnIdle: true })
    // an idle connection ended by the server (a test's outage, a database dropped WITH (FORCE))
    // leaves the pool; nothing of a test's is lost with it
    pool.on("error", () => {})
    pools.set(url, pool)
  }
  return pool
}

/** Whether `error` ended the connection rather than the statement (the server restarted or cut it). */
const connectionLost = (error: unknown) =>
  error instanceof Error &&
  (/^57P0[123]$/.test(String((error as { code?: unknown }).code)) ||
    /Connection terminated|ECONNRESET|EPIPE|Client has encountered a connection error/.test(error.message))

/**
 * `f` on a connection of `db`'s pool. A connection the server ended while it sat idle in the
 * pool is dropped and `f` runs once more on a new one, as a connection of its own would have.
 */
const withClient = <A>(db: Database, f: (client: pg.PoolClient) => Promise<A>) =>
  Effect.promise(async () => {
    for (let attempt = 1; ; attempt++) {
      const client = await poolOn(db.databaseUrl).connect()
      let failure: unknown = undefined
      try {
        return await f(client)
      } catch (error) {
        failure = error
        if (attempt >= 2 || !connectionLost(error)) throw error
      } finally {
        client.release(failure !== undefined && connectionLost(failure) ? (failure as Error) : undefined)
      }
    }
  })

/** Closes the connections this module holds on `url` (before its database is dropped). */
export const closeConnections = (url: string) =>
  Effect.promise(async () => {
    const pool = pools.get(url)
    pools.delete(url)
    await pool?.end()
  })

/** The rows of the last of `texts`, run one by one on one connection (settings, then a reload; no session state may stay). */
export const statements = (db: Database, ...texts: ReadonlyArray<string>) =>
  withClient(db, async (client) => {
    let rows: Array<Record<string, unknown>> = []
    for (const text of texts) rows = (await client.query(text)).rows
    return rows
  })

/** `url` with its database replaced by `name`. */
export const databaseNamed = (url: string, name: string) => {
  const at = new URL(url)
  at.pathname = `/${name}`
  return at.toString()
}

/** The rows of one statement. */
export const query = <Row = Record<string, unknown>>(db: Database, text: string, params: ReadonlyArray<unknown> = []) =>
  withClient(db, async (client) => (await client.query(text, [...params])).rows as Array<Row>)

/** The first row of one statement, or undefined when it has none. */
export const queryOne = <Row = Record<string, unknown>>(db: Database, text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.map(query<Row>(db, text, params), (rows): Row | undefined => rows[0])

/** How many rows one statement answered (or changed). */
export const rowCount = (db: Database, text: string, params: ReadonlyArray<unknown> = []) =>
  withClient(db, async (client) => (await client.query(text, [...params])).rowCount ?? 0)

/** How many rows `table` holds. */
export const countRows = (db: Database, table: string) =>
  Effect.map(query<{ n: number }>(db, `SELECT count(*)::int AS n FROM ${table}`), (rows) => rows[0]!.n)

export type MemberRole = "owner" | "admin" | "member"

/** Makes `userId` (recorded as a user when new) a member of the publisher, without the endpoint. */
export const addMember = (db: Database, publisherId: string, userId: string, role: MemberRole) =>
  query(
    db,
    `WITH u AS (INSERT INTO users (id) VALUES ($2) ON CONFLICT (id) DO NOTHING)
     INSERT INTO publisher_members (publisher_id, user_id, role) VALUES ($1, $2, $3)`,
    [publisherId, userId, role]
  )
