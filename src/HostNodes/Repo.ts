/**
 * SQL of host-node records (the host application's nodes found in a node version), and of the
 * version's `host_node_extract_status`. The records appear in no listing of nodes, but the status
 * does (every version's answer carries it): so the writes that set it are catalogue changes
 * (Catalog/Changes.ts), which drop the cached pages and version answers of every instance.
 */
import { SqlClient, SqlSchema } from "effect/sql"
import { Array as Arr, Context, Data, Effect, Layer, Option, Schema } from "effect"
import { CatalogChanges } from "../Catalog/Changes.ts"
import { latestCandidate } from "../Catalog/Records.ts"
import { TransitionRefused } from "../Domain/Errors.ts"
import {
  HostNode,
  type HostNodeCreate,
  HostNodeExtractStatus,
  HostNodePolicy,
  type HostNodeUpdate,
  ListedHostNode
} from "../Domain/HostNode.ts"
import { hostNodeExtractMoves, hostNodePolicyMoves, statesReaching } from "../Domain/Transitions.ts"
import { chunks, nullable, rowsOf } from "../Db/Rows.ts"
import { traced } from "../Tracing.ts"

/** The first few names, quoted, and how many more there are. */
export const quoteSome = (names: ReadonlyArray<string>, shown = 10) =>
  names.slice(0, shown).map((n) => `'${n}'`).join(", ") + (names.length > shown ? ` and ${names.length - shown} more` : "")

export class HostNodeMissing extends Data.TaggedError("HostNodeMissing")<{ readonly name: string }> {
  override get message() {
    return `The version has no host-node '${this.name}'`
  }
}

/** Names the version has already. */
export class HostNodeNamesTaken extends Data.TaggedError("HostNodeNamesTaken")<{ readonly names: ReadonlyArray<string> }> {
  override get message() {
    return `The version already has host-node(s) ${quoteSome(this.names)}`
  }
}

const hostNodeColumns =
  "host_node_name, category, deprecated, description, experimental, function, input_types, output_is_list, policy, return_names, return_types"

const HostNodeRow = rowsOf({
  host_node_name: Schema.String,
  category: nullable(Schema.String),
  deprecated: nullable(Schema.Boolean),
  description: nullable(Schema.String),
  experimental: nullable(Schema.Boolean),
  function: nullable(Schema.String),
  input_types: nullable(Schema.String),
  output_is_list: nullable(Schema.Array(Schema.Boolean)),
  policy: HostNodePolicy,
  return_names: nullable(Schema.String),
  return_types: nullable(Schema.String)
}, HostNode, (row) => new HostNode(row, { disableChecks: true }))

/** The record's fields, each stored in the column of its name. */
const fieldColumns = [
  "category", "deprecated", "description", "experimental", "function", "input_types", "output_is_list", "policy",
  "return_names", "return_types"
] as const

/** The columns a body sets: only its present fields, only known ones (they are SQL identifiers). */
const columnsOf = (r: HostNodeUpdate): Record<string, unknown> => {
  const row: Record<string, unknown> = {}
  for (const column of fieldColumns) {
    const value = r[column]
    if (value !== undefined) row[column] = Array.isArray(value) ? [...value] : value
  }
  return row
}

/** Every column of a new record: an insert takes its column list from its first row. */
const newRow = (versionId: string, r: HostNodeCreate) => ({
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

/** What `GET /host-nodes` asks for: a page, and each filter when present. */
export interface HostNodeQuery {
  readonly page: number
  readonly pageSize: number
  readonly nodeId: string | undefined
  readonly nodeVersion: string | undefined
  readonly name: string | undefined
}

/** A record of the host-node listing as a JSON object (a SQL expression over `h` and its version `v`). */
const listedRecord = `json_strip_nulls(json_build_object(
  'host_node_name', h.host_node_name, 'category', h.category, 'deprecated', h.deprecated, 'description', h.description,
  'experimental', h.experimental, 'function', h.function, 'input_types', h.input_types, 'output_is_list', h.output_is_list,
  'policy', h.policy, 'return_names', h.return_names, 'return_types', h.return_types,
  'node_id', v.node_id, 'node_version', v.version))`

/** Byte order, as `COLLATE "C"` sorts the names in SQL. */
const byName = (a: HostNode, b: HostNode) => Buffer.compare(Buffer.from(a.host_node_name), Buffer.from(b.host_node_name))

export class HostNodeRepo extends Context.Service<HostNodeRepo>()("HostNodeRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { change, changeOne } = yield* CatalogChanges

    /**
     * Moves the version's extraction status to `to` where the machine allows it, checked in the
     * statement (a version stored before the status was kept counts as pending); answers whether
     * it moved. Asking for the status it has writes nothing.
     */
    const moveExtraction = (versionId: string, to: HostNodeExtractStatus) =>
      sql`UPDATE node_versions SET host_node_extract_status = ${to}
          WHERE id = ${versionId}::uuid AND coalesce(host_node_extract_status, 'pending') = ANY(${
        statesReaching(hostNodeExtractMoves, to).filter((from) => from !== to) as Array<string>
      })`

    const extractStatus = (versionId: string) =>
      Effect.map(
        sql<{ status: string | null }>`SELECT host_node_extract_status AS status FROM node_versions WHERE id = ${versionId}::uuid`,
        (rows) => Schema.decodeUnknownSync(HostNodeExtractStatus)(rows[0]?.status ?? "pending")
      )

    const findAll = SqlSchema.findAll({
      Request: Schema.String,
      Result: HostNodeRow,
      execute: (versionId) =>
        sql`SELECT ${sql.literal(hostNodeColumns)} FROM host_nodes
            WHERE version_id = ${versionId}::uuid ORDER BY host_node_name COLLATE "C"`
    })

    const findOne = SqlSchema.findOneOption({
      Request: Schema.Struct({ versionId: Schema.String, name: Schema.String }),
      Result: HostNodeRow,
      execute: ({ versionId, name }) =>
        sql`SELECT ${sql.literal(hostNodeColumns)} FROM host_nodes WHERE version_id = ${versionId}::uuid AND host_node_name = ${name}`
    })

    const updateOne = SqlSchema.findOneOption({
      Request: Schema.Struct({
        versionId: Schema.String,
        name: Schema.String,
        columns: Schema.Record(Schema.String, Schema.Unknown),
        from: Schema.Array(HostNodePolicy)
      }),
      Result: HostNodeRow,
      execute: ({ columns, from, name, versionId }) =>
        sql`UPDATE host_nodes SET ${sql.update(columns)}
            WHERE version_id = ${versionId}::uuid AND host_node_name = ${name} AND policy = ANY(${from as Array<string>})
            RETURNING ${sql.literal(hostNodeColumns)}`
    })

    const insertBatch = SqlSchema.findAll({
      Request: Schema.Struct({ versionId: Schema.String, records: Schema.NonEmptyArray(Schema.Any) }),
      Result: HostNodeRow,
      execute: ({ versionId, records }) =>
        sql`INSERT INTO host_nodes ${sql.insert(Arr.map(records, (r: HostNodeCreate) => newRow(versionId, r)))}
            ON CONFLICT (version_id, host_node_name) DO NOTHING
            RETURNING ${sql.literal(hostNodeColumns)}`
    })

    /** Records the public may see: of active versions of listed nodes (the node and its publisher active). */
    const publicRecords = sql`host_nodes h
      JOIN node_versions v ON v.id = h.version_id AND v.status = 'NodeVersionStatusActive'
      JOIN nodes n ON n.id = v.node_id AND n.listed`

    const listPage = SqlSchema.findOne({
      Request: Schema.Any,
      Result: Schema.Struct({ total: Schema.Int, records: Schema.Array(ListedHostNode) }),
      execute: (q: HostNodeQuery) => {
        // names compare byte-wise, as the index host_nodes_name orders them
        const where = sql.and([
          ...(q.nodeId === undefined ? [] : [sql`v.node_id = ${q.nodeId}`]),
          ...(q.nodeVersion === undefined ? [] : [sql`v.version = ${q.nodeVersion}`]),
          ...(q.name === undefined ? [] : [sql`h.host_node_name = ${q.name} COLLATE "C"`])
        ])
        return sql`SELECT
            (SELECT count(*)::int FROM ${publicRecords} WHERE ${where}) AS total,
            coalesce((SELECT json_agg(x.record ORDER BY x.name, x.node_id, x.semver_key DESC, x.version) FROM (
              SELECT ${sql.literal(listedRecord)} AS record, h.host_node_name COLLATE "C" AS name, v.node_id, v.semver_key, v.version
              FROM ${publicRecords} WHERE ${where}
              ORDER BY h.host_node_name COLLATE "C", v.node_id, v.semver_key DESC, v.version
              LIMIT ${q.pageSize} OFFSET ${(q.page - 1) * q.pageSize}) x), '[]'::json) AS records`
      }
    })

    const findProvider = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: Schema.Struct({ id: Schema.String }),
      execute: (name) =>
        sql`SELECT n.id FROM ${publicRecords}
            WHERE h.host_node_name = ${name} COLLATE "C" AND h.policy <> 'HostNodePolicyBanned'
              AND v.id = (SELECT lv.id FROM node_versions lv
                          WHERE lv.node_id = n.id AND ${sql.literal(latestCandidate("lv"))}
                          ORDER BY lv.semver_key DESC, lv.version DESC LIMIT 1)
            ORDER BY ${name} = ANY(n.preempted_host_node_names) DESC, n.search_ranking ASC NULLS LAST,
                     n.downloads DESC, n.id
            LIMIT 1`
    })

    return {
      /** A page of the public records, by name, node and newest version, and how many match in all. */
      listPage: traced("HostNodeRepo.listPage")(function*(query: HostNodeQuery) {
        return yield* Effect.orDie(listPage(query))
      }),

      /** The id of the listed node whose latest active version provides `name` (the best one when several do). */
      provider: traced("HostNodeRepo.provider")(function*(name: string) {
        return yield* Effect.map(Effect.orDie(findProvider(name)), Option.map((row) => row.id))
      }),

      /** One record of the version, by name. */
      find: traced("HostNodeRepo.find")(function*(versionId: string, name: string) {
        return yield* Effect.orDie(findOne({ versionId, name }))
      }),

      /** The version's records, by name. */
      list: traced("HostNodeRepo.list")(function*(versionId: string) {
        return yield* Effect.orDie(findAll(versionId))
      }),

      /**
       * Stores all the records or none (a name the version has already refuses them all); answers
       * them by name. The version's extraction is then a success, in the same transaction.
       */
      create: traced("HostNodeRepo.create")(function*(versionId: string, records: ReadonlyArray<HostNodeCreate>) {
        return yield* change(Effect.gen(function*() {
          const created: Array<HostNode> = []
          for (const batch of chunks(records)) {
            if (!Arr.isReadonlyArrayNonEmpty(batch)) continue
            const rows = yield* insertBatch({ versionId, records: batch })
            if (rows.length < batch.length) {
              const inserted = new Set(rows.map((r) => r.host_node_name))
              // failing rolls the whole request back
              return yield* new HostNodeNamesTaken({ names: batch.map((r) => r.host_node_name).filter((name) => !inserted.has(name)) })
            }
            created.push(...rows)
          }
          yield* moveExtraction(versionId, "success")
          return created.sort(byName)
        }))
      }),

      /**
       * The extraction failed: the version's status is `failed`, unless its records are in
       * (refused: a failed run does not undo a successful one). A change only when it moves.
       */
      extractionFailed: traced("HostNodeRepo.extractionFailed")(function*(versionId: string) {
        const moved = yield* changeOne(moveExtraction(versionId, "failed"))
        if (moved.length > 0) return
        const now = yield* Effect.orDie(extractStatus(versionId))
        if (now !== "failed") {
          return yield* new TransitionRefused({ record: "A version's host-node extraction", from: now, to: "failed" })
        }
      }),

      /**
       * Applies the present fields to an existing record and answers the whole record. A policy move
       * the state machine refuses fails; the check and the write are one statement.
       */
      update: traced("HostNodeRepo.update")(function*(versionId: string, name: string, patch: HostNodeUpdate) {
        const columns = columnsOf(patch)
        const target = patch.policy
        const from = target === undefined ? HostNodePolicy.literals : statesReaching(hostNodePolicyMoves, target)
        const updated = Object.keys(columns).length > 0
          ? yield* Effect.orDie(updateOne({ versionId, name, columns, from }))
          : Option.none()
        if (Option.isSome(updated)) return updated.value
        const current = yield* Effect.orDie(findOne({ versionId, name }))
        if (Option.isNone(current)) return yield* new HostNodeMissing({ name })
        if (Object.keys(columns).length === 0) return current.value
        return yield* new TransitionRefused({ record: "A host-node's policy", from: current.value.policy, to: target ?? current.value.policy })
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(HostNodeRepo, HostNodeRepo.make)
  static readonly layer = HostNodeRepo.layerWithoutDependencies.pipe(Layer.provide(CatalogChanges.layer))
}
