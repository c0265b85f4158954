/**
 * SQL of host-node records (the host application's nodes found in a node version). Records
 * leave PostgreSQL as the interface's JSON, absent fields omitted. They appear in no listing of
 * nodes, so writing them leaves the list cache alone.
 */
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option, type Schema } from "effect"
import { type HostNodeCreate, HostNodePolicy, type HostNodeUpdate } from "../Domain/HostNode.ts"
import { hostNodePolicyMoves, move } from "../Domain/Transitions.ts"
import { Conflict, NotFound } from "../Errors.ts"

/** Where a node version is, as far as host-node requests need to know. */
export interface VersionLocation {
  readonly publisherId: string
  /** The node is banned, or its publisher is. */
  readonly banned: boolean
  /** The version's id; none when the node has no such version, or it is deleted. */
  readonly versionId: Option.Option<string>
}

type NewRecord = Schema.Schema.Type<typeof HostNodeCreate>
type RecordPatch = Schema.Schema.Type<typeof HostNodeUpdate>

export class HostNodeRepo extends Context.Tag("HostNodeRepo")<HostNodeRepo, {
  /** A node and one of its versions by version string; none for an unknown or deleted node. */
  readonly locate: (nodeId: string, version: string) => Effect.Effect<Option.Option<VersionLocation>>
  /** The version's records as a JSON array text, by name. */
  readonly list: (versionId: string) => Effect.Effect<string>
  /**
   * Stores all the records or none: a name the version already has is a Conflict. Answers the
   * created records as a JSON array text, by name.
   */
  readonly create: (versionId: string, records: ReadonlyArray<NewRecord>) => Effect.Effect<string, Conflict>
  /**
   * Applies the present fields to an existing record and answers the whole record. A policy move
   * the state machine refuses is a Conflict; the check and the write are one statement.
   */
  readonly update: (versionId: string, name: string, patch: RecordPatch) => Effect.Effect<string, NotFound | Conflict>
}>() {}

/** The record `h` as wire JSON. */
const hostNodeJson = (h: string) =>
  `json_strip_nulls(json_build_object(
    'category', ${h}.category, 'deprecated', ${h}.deprecated, 'description', ${h}.description,
    'experimental', ${h}.experimental, 'function', ${h}.function, 'host_node_name', ${h}.host_node_name,
    'input_types', ${h}.input_types, 'output_is_list', ${h}.output_is_list, 'policy', ${h}.policy,
    'return_names', ${h}.return_names, 'return_types', ${h}.return_types))`

/** The record's fields, each stored in the column of its name. */
const fieldColumns = [
  "category", "deprecated", "description", "experimental", "function", "input_types", "output_is_list", "policy",
  "return_names", "return_types"
] as const

/** The columns a body sets: only its present fields, only known ones (they are SQL identifiers). */
const columnsOf = (r: RecordPatch): Record<string, unknown> => {
  const row: Record<string, unknown> = {}
  for (const column of fieldColumns) {
    const value = r[column]
    if (value !== undefined) row[column] = Array.isArray(value) ? [...value] : value
  }
  return row
}

/** Every column of a new record: an insert takes its column list from its first row. */
const newRow = (versionId: string, r: NewRecord) => ({
  version_id: versionId,
  host_node_name: r.host_node_name,
  category: r.category ?? null,
  deprecated: r.deprecated ?? null,
  description: r.description ?? null,
  experimental: r.experimental ?? null,
  function: r.function ?? null,
  input_types: r.input_types ?? null,
  output_is_list: r.output_is_list ? [...r.output_is_list] : null,
  policy: r.policy ?? "HostNodePolicyActive",
  return_names: r.return_names ?? null,
  return_types: r.return_types ?? null
})

// at most this many rows per INSERT: PostgreSQL takes 65,535 parameters a statement
const batchSize = 1000

/** The first few names, quoted, and how many more there are. */
export const quoteSome = (names: ReadonlyArray<string>, shown = 10) =>
  names.slice(0, shown).map((n) => `'${n}'`).join(", ") + (names.length > shown ? ` and ${names.length - shown} more` : "")

/** Byte order, as `COLLATE "C"` sorts the names in SQL. */
const byName = (a: { name: string }, b: { name: string }) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name))

export const makeHostNodeRepo = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  const locate = (nodeId: string, version: string) =>
    sql<{ publisher_id: string; node_status: string; publisher_status: string; version_id: string | null }>`
      SELECT n.publisher_id, n.status AS node_status, p.status AS publisher_status,
             (SELECT v.id::text FROM node_versions v
              WHERE v.node_id = n.id AND v.version = ${version} AND v.status <> 'NodeVersionStatusDeleted') AS version_id
      FROM nodes n JOIN publishers p ON p.id = n.publisher_id
      WHERE n.id = ${nodeId} AND n.status <> 'NodeStatusDeleted'`.pipe(
      Effect.map((rows) =>
        Option.map(Option.fromNullable(rows[0]), (row): VersionLocation => ({
          publisherId: row.publisher_id,
          banned: row.node_status === "NodeStatusBanned" || row.publisher_status === "PublisherStatusBanned",
          versionId: Option.fromNullable(row.version_id)
        }))
      ),
      Effect.orDie
    )

  const list = (versionId: string) =>
    sql<{ json: string }>`
      SELECT coalesce(json_agg(${sql.literal(hostNodeJson("h"))} ORDER BY h.host_node_name COLLATE "C"), '[]')::text AS json
      FROM host_nodes h WHERE h.version_id = ${versionId}::uuid`.pipe(
      Effect.map((rows) => rows[0]?.json ?? "[]"),
      Effect.orDie
    )

  const create = (versionId: string, records: ReadonlyArray<NewRecord>) =>
    sql.withTransaction(Effect.gen(function*() {
      const created: Array<{ name: string; json: string }> = []
      for (let i = 0; i < records.length; i += batchSize) {
        const batch = records.slice(i, i + batchSize)
        const rows = yield* sql<{ name: string; json: string }>`
          INSERT INTO host_nodes ${sql.insert(batch.map((r) => newRow(versionId, r)))}
          ON CONFLICT (version_id, host_node_name) DO NOTHING
          RETURNING host_node_name AS name, ${sql.literal(hostNodeJson("host_nodes"))}::text AS json`
        if (rows.length < batch.length) {
          const inserted = new Set(rows.map((r) => r.name))
          const taken = batch.map((r) => r.host_node_name).filter((name) => !inserted.has(name))
          // failing rolls the whole request back
          return yield* new Conflict({ message: `The version already has host-node(s) ${quoteSome(taken)}` })
        }
        created.push(...rows)
      }
      return `[${created.sort(byName).map((r) => r.json).join(",")}]`
    })).pipe(Effect.catchTag("SqlError", Effect.die))

  const update = (versionId: string, name: string, patch: RecordPatch) =>
    Effect.gen(function*() {
      const columns = columnsOf(patch)
      const target = patch.policy
      // the states from which the requested policy may be reached (itself included: no move)
      const from = target === undefined ? HostNodePolicy.literals : HostNodePolicy.literals.filter((p) => move(hostNodePolicyMoves, p, target) !== "refused")
      const rows = Object.keys(columns).length === 0
        ? yield* sql<{ json: string }>`SELECT ${sql.literal(hostNodeJson("host_nodes"))}::text AS json FROM host_nodes
            WHERE version_id = ${versionId}::uuid AND host_node_name = ${name}`
        : yield* sql<{ json: string }>`UPDATE host_nodes SET ${sql.update(columns)}
            WHERE version_id = ${versionId}::uuid AND host_node_name = ${name} AND policy = ANY(${from as Array<string>})
            RETURNING ${sql.literal(hostNodeJson("host_nodes"))}::text AS json`
      if (rows[0] !== undefined) return rows[0].json
      const current = yield* sql<{ policy: HostNodePolicy }>`SELECT policy FROM host_nodes
        WHERE version_id = ${versionId}::uuid AND host_node_name = ${name}`
      if (current[0] === undefined) return yield* new NotFound({ message: `The version has no host-node '${name}'` })
      return yield* new Conflict({ message: `A host-node's policy cannot move from ${current[0].policy} to ${target}` })
    }).pipe(Effect.catchTag("SqlError", Effect.die))

  return HostNodeRepo.of({ locate, list, create, update })
})

export const HostNodeRepoLive = Layer.effect(HostNodeRepo, makeHostNodeRepo)
