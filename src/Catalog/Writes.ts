/**
 * Changes to the catalogue. Every change bumps the touched nodes' `updated_at` (so incremental
 * sync through `timestamp` sees it) and notifies every instance, in the same transaction, that
 * cached listings are stale.
 */
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import type { NodeStatus, NodeVersionStatus } from "../Domain/Node.ts"
import type { PublisherStatus } from "../Domain/Publisher.ts"
import { ListCache } from "./ListCache.ts"
import { hostIntervals, semverKey } from "./Semver.ts"

export const catalogueChannel = "catalogue_changed"

export interface PublisherInput {
  readonly id: string
  readonly name?: string | undefined
  readonly description?: string | undefined
  readonly website?: string | undefined
  readonly status?: PublisherStatus | undefined
  readonly created_at?: Date | undefined
}

export interface NodeInput {
  readonly id: string
  readonly publisher_id: string
  readonly name?: string | undefined
  readonly description?: string | undefined
  readonly author?: string | undefined
  readonly license?: string | undefined
  readonly icon?: string | undefined
  readonly banner_url?: string | undefined
  readonly category?: string | undefined
  readonly repository?: string | undefined
  readonly repohost_stars?: number | undefined
  readonly downloads?: number | undefined
  readonly rating?: number | undefined
  readonly search_ranking?: number | undefined
  readonly status?: NodeStatus | undefined
  readonly status_detail?: string | undefined
  readonly supported_os?: ReadonlyArray<string> | undefined
  readonly supported_accelerators?: ReadonlyArray<string> | undefined
  readonly supported_host_version?: string | undefined
  readonly supported_host_frontend_version?: string | undefined
  readonly tags?: ReadonlyArray<string> | undefined
  readonly tags_admin?: ReadonlyArray<string> | undefined
  readonly preempted_host_node_names?: ReadonlyArray<string> | undefined
  readonly translations?: Record<string, Record<string, unknown>> | undefined
  readonly created_at?: Date | undefined
}

export interface VersionInput {
  readonly node_id: string
  readonly version: string
  readonly status?: NodeVersionStatus | undefined
  readonly status_reason?: string | undefined
  readonly changelog?: string | undefined
  readonly dependencies?: ReadonlyArray<string> | undefined
  readonly deprecated?: boolean | undefined
  readonly supported_os?: ReadonlyArray<string> | undefined
  readonly supported_accelerators?: ReadonlyArray<string> | undefined
  readonly supported_host_version?: string | undefined
  readonly supported_host_frontend_version?: string | undefined
  readonly tags?: ReadonlyArray<string> | undefined
  readonly created_at?: Date | undefined
}

/** The columns of a node that a change may set (absent: unchanged). */
export type NodePatch = Partial<Omit<NodeInput, "id" | "created_at">>

export class InvalidVersion extends Error {
  constructor(readonly version: string) {
    super(`'${version}' is not a semantic version`)
  }
}

/** What publishing a version did, or why it did nothing. */
export type PublishOutcome =
  | { readonly _tag: "Published"; readonly versionId: string }
  | { readonly _tag: "NodeMissing" }
  | { readonly _tag: "NodeOwnedElsewhere" }
  | { readonly _tag: "NodeDeleted" }
  | { readonly _tag: "NodeBanned" }
  | { readonly _tag: "VersionExists" }

/** The fields of a version its publisher may change after publishing. */
export interface VersionPatch {
  readonly changelog?: string | undefined
  readonly deprecated?: boolean | undefined
}

export class CatalogWrites extends Context.Tag("CatalogWrites")<CatalogWrites, {
  readonly upsertPublishers: (publishers: ReadonlyArray<PublisherInput>) => Effect.Effect<void>
  readonly insertNodes: (nodes: ReadonlyArray<NodeInput>) => Effect.Effect<void>
  /** Inserts one node unless its id is taken (then false), without a race between check and write. */
  readonly createNode: (node: NodeInput) => Effect.Effect<boolean>
  /** Dies with InvalidVersion for a version string that is not semver (callers validate first). */
  readonly insertVersions: (versions: ReadonlyArray<VersionInput>) => Effect.Effect<void>
  readonly updateNode: (nodeId: string, patch: NodePatch) => Effect.Effect<void>
  /**
   * Applies the patch only while the node's status is one of `from`: the check and the write are
   * one statement, so a concurrent change cannot slip between a transition check and its write.
   * False when the status was another, or there is no such node.
   */
  readonly updateNodeWhereStatus: (
    nodeId: string,
    from: ReadonlyArray<NodeStatus>,
    patch: NodePatch
  ) => Effect.Effect<boolean>
  readonly setVersionStatus: (nodeId: string, version: string, status: NodeVersionStatus) => Effect.Effect<void>
  readonly setPublisherStatus: (publisherId: string, status: PublisherStatus) => Effect.Effect<void>
  /** Changes a publisher's own fields (its record is part of its nodes' JSON). */
  readonly updatePublisher: (publisherId: string, patch: PublisherPatch) => Effect.Effect<void>
  /**
   * Moves an unclaimed node to the publisher. The check and the move are one statement, so of
   * concurrent claims (from any instance) exactly one moves it; false when it was not unclaimed.
   */
  readonly claimNode: (nodeId: string, publisherId: string) => Effect.Effect<boolean>
  /**
   * Creates the node for the publisher or updates it from `node` (its publisher unchanged), and
   * adds the version as Pending: one transaction, the node's row locked, so concurrent publishes
   * of one version (from any instance) add it once.
   */
  readonly publishVersion: (
    publisherId: string,
    nodeId: string,
    node: NodePatch,
    version: VersionInput
  ) => Effect.Effect<PublishOutcome>
  /** Sets the status (and its reason) only while the version is in one of `from`; false otherwise. */
  readonly moveVersionStatus: (
    nodeId: string,
    version: string,
    from: ReadonlyArray<NodeVersionStatus>,
    to: NodeVersionStatus,
    reason: string | undefined
  ) => Effect.Effect<boolean>
  /** A Pending version got its archive and the checks' verdict; false when it was no longer Pending. */
  readonly recordArchive: (versionId: string, bytes: number, to: NodeVersionStatus, reason: string | undefined) => Effect.Effect<boolean>
  /** Changes a version that is not deleted; false when there is none. */
  readonly updateVersion: (nodeId: string, version: string, patch: VersionPatch) => Effect.Effect<boolean>
}>() {}

export interface PublisherPatch {
  readonly name?: string | undefined
  readonly description?: string | undefined
  readonly logo?: string | undefined
  readonly website?: string | undefined
  readonly support?: string | undefined
  readonly source_code_repo?: string | undefined
}

const nullable = <A>(a: A | undefined): A | null => (a === undefined ? null : a)
const list = (a: ReadonlyArray<string> | undefined): Array<string> => (a ? [...a] : [])

// at most this many rows per INSERT: PostgreSQL takes 65,535 parameters a statement
const batchSize = 1000

const chunks = <A>(items: ReadonlyArray<A>): Array<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += batchSize) out.push(items.slice(i, i + batchSize))
  return out
}

const nodeColumns = (n: NodePatch) => {
  const row: Record<string, unknown> = {}
  const set = (column: string, value: unknown) => {
    if (value !== undefined) row[column] = value
  }
  set("publisher_id", n.publisher_id)
  set("name", n.name)
  set("description", n.description)
  set("author", n.author)
  set("license", n.license)
  set("icon", n.icon)
  set("banner_url", n.banner_url)
  set("category", n.category)
  set("repository", n.repository)
  set("repohost_stars", n.repohost_stars)
  set("downloads", n.downloads)
  set("rating", n.rating)
  set("search_ranking", n.search_ranking)
  set("status", n.status)
  set("status_detail", n.status_detail)
  set("supported_os", n.supported_os && list(n.supported_os))
  set("supported_accelerators", n.supported_accelerators && list(n.supported_accelerators))
  set("supported_host_version", n.supported_host_version)
  set("supported_host_frontend_version", n.supported_host_frontend_version)
  set("tags", n.tags && list(n.tags))
  set("tags_admin", n.tags_admin && list(n.tags_admin))
  set("preempted_host_node_names", n.preempted_host_node_names && list(n.preempted_host_node_names))
  set("translations", n.translations && JSON.stringify(n.translations))
  return row
}

/** A new node's columns when its input leaves them out. */
const nodeDefaults: Record<string, unknown> = {
  name: null,
  description: null,
  author: null,
  license: null,
  icon: null,
  banner_url: null,
  category: null,
  repository: null,
  repohost_stars: 0,
  downloads: 0,
  rating: null,
  search_ranking: null,
  status: "NodeStatusActive",
  status_detail: null,
  supported_os: [],
  supported_accelerators: [],
  supported_host_version: null,
  supported_host_frontend_version: null,
  tags: [],
  tags_admin: [],
  preempted_host_node_names: [],
  translations: null
}

export const makeCatalogWrites = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const cache = yield* ListCache

  const notify = sql`SELECT pg_notify(${catalogueChannel}, '')`
  /** Recomputes whether nodes appear in public listings after a status change. */
  const refreshListed = (where: ReturnType<typeof sql.and>) =>
    sql`UPDATE nodes n SET listed = (n.status = 'NodeStatusActive' AND p.status = 'PublisherStatusActive')
        FROM publishers p WHERE p.id = n.publisher_id AND ${where}`

  /** A publisher's record is part of its nodes' JSON: its nodes count as updated. */
  const touchPublishers = (ids: ReadonlyArray<string>) =>
    Effect.zipRight(
      refreshListed(sql.and([sql`n.publisher_id = ANY(${ids as Array<string>})`])),
      sql`UPDATE nodes SET updated_at = now() WHERE publisher_id = ANY(${ids as Array<string>})`
    )

  /** Other instances learn of a change by the notification, this one at once after the commit. */
  const change = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    sql.withTransaction(Effect.zipLeft(effect, notify)).pipe(
      Effect.ensuring(Effect.sync(cache.invalidate)),
      Effect.orDie
    )

  const upsertPublishers = (publishers: ReadonlyArray<PublisherInput>) =>
    change(Effect.forEach(chunks(publishers), (batch) =>
      sql`INSERT INTO publishers ${
        sql.insert(batch.map((p) => ({
          id: p.id,
          name: nullable(p.name),
          description: nullable(p.description),
          website: nullable(p.website),
          status: p.status ?? "PublisherStatusActive",
          created_at: p.created_at ?? new Date()
        })))
      } ON CONFLICT (id) DO UPDATE SET name = excluded.name, description = excluded.description,
          website = excluded.website`, { discard: true }).pipe(
      Effect.zipRight(touchPublishers(publishers.map((p) => p.id)))
    ))

  const insertNodes = (nodes: ReadonlyArray<NodeInput>) =>
    change(Effect.forEach(chunks(nodes), (batch) =>
      sql`INSERT INTO nodes ${
        sql.insert(batch.map((n) => {
          const created = n.created_at ?? new Date()
          // every row names every column: the insert takes its column list from the first row
          return {
            ...nodeDefaults,
            ...nodeColumns(n),
            id: n.id,
            created_at: created,
            updated_at: created
          }
        }))
      }`.pipe(Effect.zipRight(refreshListed(sql.and([sql`n.id = ANY(${batch.map((n) => n.id)})`])))), { discard: true }))

  /** Inserts versions with their semver keys and host ranges; answers their ids in order. */
  const insertVersionRows = (batch: ReadonlyArray<VersionInput>) =>
    Effect.gen(function*() {
      const rows = batch.map((v) => {
        const key = semverKey(v.version)
        if (key === undefined) throw new InvalidVersion(v.version)
        const range = v.supported_host_version?.trim()
        return {
          input: v,
          intervals: range ? hostIntervals(range) ?? [] : undefined,
          row: {
            node_id: v.node_id,
            version: v.version,
            semver_key: key,
            status: v.status ?? "NodeVersionStatusPending",
            status_reason: nullable(v.status_reason),
            changelog: nullable(v.changelog),
            dependencies: list(v.dependencies),
            deprecated: v.deprecated ?? false,
            supported_os: list(v.supported_os),
            supported_accelerators: list(v.supported_accelerators),
            supported_host_version: nullable(v.supported_host_version),
            supported_host_frontend_version: nullable(v.supported_host_frontend_version),
            admits_any_host: range ? false : true,
            tags: list(v.tags),
            created_at: v.created_at ?? new Date()
          }
        }
      })
      const ids = yield* sql<{ id: string }>`INSERT INTO node_versions ${sql.insert(rows.map((r) => r.row))} RETURNING id::text`
      const ranges = rows.flatMap((r, i) =>
        (r.intervals ?? []).map((interval) => ({
          version_id: ids[i]!.id,
          lo: interval.lo,
          lo_incl: interval.loIncl,
          hi: interval.hi,
          hi_incl: interval.hiIncl
        }))
      )
      for (const batch of chunks(ranges)) yield* sql`INSERT INTO node_version_host_ranges ${sql.insert(batch)}`
      yield* sql`UPDATE nodes SET updated_at = greatest(updated_at, now())
                 WHERE id = ANY(${[...new Set(batch.map((v) => v.node_id))]})`
      return ids.map((r) => r.id)
    })

  const insertVersions = (versions: ReadonlyArray<VersionInput>) =>
    change(Effect.forEach(chunks(versions), insertVersionRows, { discard: true }))

  const publishVersion = (publisherId: string, nodeId: string, patch: NodePatch, version: VersionInput) =>
    change(Effect.gen(function*() {
      const node = { ...patch, id: nodeId }
      const now = new Date()
      const created = yield* sql`INSERT INTO nodes ${
        sql.insert({ ...nodeDefaults, ...nodeColumns(patch), publisher_id: publisherId, id: nodeId, created_at: now, updated_at: now })
      } ON CONFLICT (id) DO NOTHING RETURNING id`
      // the row lock serialises publishes of one node (and its checks) across instances
      const [current] = yield* sql<{ publisher_id: string; status: NodeStatus }>`
        SELECT publisher_id, status FROM nodes WHERE id = ${node.id} FOR UPDATE`
      if (!current) return { _tag: "NodeMissing" } as PublishOutcome
      if (current.publisher_id !== publisherId) return { _tag: "NodeOwnedElsewhere" } as PublishOutcome
      if (current.status === "NodeStatusDeleted") return { _tag: "NodeDeleted" } as PublishOutcome
      if (current.status === "NodeStatusBanned") return { _tag: "NodeBanned" } as PublishOutcome
      const taken = yield* sql`SELECT 1 FROM node_versions WHERE node_id = ${node.id} AND version = ${version.version}`
      if (taken.length > 0) return { _tag: "VersionExists" } as PublishOutcome
      if (created.length > 0) {
        yield* refreshListed(sql.and([sql`n.id = ${node.id}`]))
      } else {
        const { publisher_id: _ignored, ...fields } = patch
        const columns = nodeColumns(fields)
        if (Object.keys(columns).length > 0) yield* sql`UPDATE nodes SET ${sql.update(columns)} WHERE id = ${node.id}`
      }
      const [versionId] = yield* insertVersionRows([{ ...version, node_id: node.id, status: "NodeVersionStatusPending" }])
      return { _tag: "Published", versionId: versionId! } as PublishOutcome
    }))

  /** Moves a version's status only from one of `from`, in one statement; false otherwise. */
  const moveVersionStatus = (
    nodeId: string,
    version: string,
    from: ReadonlyArray<NodeVersionStatus>,
    to: NodeVersionStatus,
    reason: string | undefined
  ) =>
    change(Effect.gen(function*() {
      const rows = yield* sql`UPDATE node_versions SET status = ${to}, status_reason = ${nullable(reason)}
        WHERE node_id = ${nodeId} AND version = ${version} AND status = ANY(${from as Array<string>}) RETURNING id`
      if (rows.length === 0) return false
      yield* sql`UPDATE nodes SET updated_at = now() WHERE id = ${nodeId}`
      return true
    }))

  const recordArchive = (versionId: string, bytes: number, to: NodeVersionStatus, reason: string | undefined) =>
    change(Effect.gen(function*() {
      const rows = yield* sql<{ node_id: string }>`UPDATE node_versions
        SET archive_bytes = ${bytes}, status = ${to}, status_reason = ${nullable(reason)}
        WHERE id = ${versionId}::uuid AND status = 'NodeVersionStatusPending' RETURNING node_id`
      if (rows.length === 0) return false
      yield* sql`UPDATE nodes SET updated_at = now() WHERE id = ${rows[0]!.node_id}`
      return true
    }))

  const updateVersion = (nodeId: string, version: string, patch: VersionPatch) => {
    const columns = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined))
    return change(Effect.gen(function*() {
      const rows = yield* (Object.keys(columns).length > 0
        ? sql`UPDATE node_versions SET ${sql.update(columns)} WHERE node_id = ${nodeId} AND version = ${version}
              AND status <> 'NodeVersionStatusDeleted' RETURNING id`
        : sql`SELECT id FROM node_versions WHERE node_id = ${nodeId} AND version = ${version}
              AND status <> 'NodeVersionStatusDeleted'`)
      if (rows.length === 0) return false
      yield* sql`UPDATE nodes SET updated_at = now() WHERE id = ${nodeId}`
      return true
    }))
  }

  const updateNode = (nodeId: string, patch: NodePatch) => {
    const columns = nodeColumns(patch)
    return change(Effect.gen(function*() {
      yield* Object.keys(columns).length > 0
        ? sql`UPDATE nodes SET ${sql.update(columns)}, updated_at = now() WHERE id = ${nodeId}`
        : sql`UPDATE nodes SET updated_at = now() WHERE id = ${nodeId}`
      yield* refreshListed(sql.and([sql`n.id = ${nodeId}`]))
    }))
  }

  const createNode = (n: NodeInput) => {
    const created = n.created_at ?? new Date()
    return change(Effect.gen(function*() {
      const rows = yield* sql`INSERT INTO nodes ${
        sql.insert({ ...nodeDefaults, ...nodeColumns(n), id: n.id, created_at: created, updated_at: created })
      } ON CONFLICT (id) DO NOTHING RETURNING id`
      if (rows.length === 0) return false
      yield* refreshListed(sql.and([sql`n.id = ${n.id}`]))
      return true
    }))
  }

  const updateNodeWhereStatus = (nodeId: string, from: ReadonlyArray<NodeStatus>, patch: NodePatch) => {
    const columns = nodeColumns(patch)
    const where = sql`id = ${nodeId} AND status = ANY(${from as Array<string>})`
    return change(Effect.gen(function*() {
      const rows = yield* (Object.keys(columns).length > 0
        ? sql`UPDATE nodes SET ${sql.update(columns)}, updated_at = now() WHERE ${where} RETURNING id`
        : sql`UPDATE nodes SET updated_at = now() WHERE ${where} RETURNING id`)
      if (rows.length === 0) return false
      yield* refreshListed(sql.and([sql`n.id = ${nodeId}`]))
      return true
    }))
  }

  const claimNode = (nodeId: string, publisherId: string) =>
    change(Effect.gen(function*() {
      const rows = yield* sql`UPDATE nodes SET publisher_id = ${publisherId}, updated_at = now()
        WHERE id = ${nodeId} AND publisher_id = 'unclaimed' RETURNING id`
      if (rows.length === 0) return false
      // the new publisher's status decides whether the node is listed
      yield* refreshListed(sql.and([sql`n.id = ${nodeId}`]))
      return true
    }))

  return CatalogWrites.of({
    claimNode,
    publishVersion,
    moveVersionStatus,
    recordArchive,
    updateVersion,
    upsertPublishers,
    insertNodes,
    createNode,
    updateNodeWhereStatus,
    insertVersions,
    updateNode,
    setVersionStatus: (nodeId, version, status) =>
      change(Effect.zipRight(
        sql`UPDATE node_versions SET status = ${status} WHERE node_id = ${nodeId} AND version = ${version}`,
        sql`UPDATE nodes SET updated_at = now() WHERE id = ${nodeId}`
      )),
    updatePublisher: (publisherId, patch) => {
      const columns = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined))
      return Object.keys(columns).length === 0 ? Effect.void : change(Effect.zipRight(
        sql`UPDATE publishers SET ${sql.update(columns)} WHERE id = ${publisherId}`,
        touchPublishers([publisherId])
      ))
    },
    setPublisherStatus: (publisherId, status) =>
      change(Effect.zipRight(
        sql`UPDATE publishers SET status = ${status} WHERE id = ${publisherId}`,
        touchPublishers([publisherId])
      ))
  })
})

export const CatalogWritesLive = Layer.effect(CatalogWrites, makeCatalogWrites)
