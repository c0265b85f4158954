/**
 * Direct SQL on a service's database: for what no endpoint does (memberships), and to read stored
 * rows back, proving what was (or was not) written. Each call opens its own connection.
 */
import { Effect } from "effect"
import pg from "pg"
import type { Running } from "./Service.ts"

/** A database to connect to: a running service's, or any `{ databaseUrl }`. */
export type Database = Pick<Running, "databaseUrl">

const withClient = <A>(db: Database, f: (client: pg.Client) => Promise<A>) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: db.databaseUrl })
    await client.connect()
    try {
      return await f(client)
    } finally {
      await client.end()
    }
  })

/** The rows of the last of `texts`, run one by one on one connection (settings, then a reload). */
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
