/**
 * Writes of publishing: nodes created and maintained by their publishers (and moderated by site
 * admins), versions published, moved between statuses and given their archives. Each write is one
 * CatalogChanges transaction; each check that decides a write is part of its statement (or of a
 * row lock), so concurrent requests from any instance cannot slip between a check and its write.
 */
import { SqlClient, type Statement } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { Array as Arr, Context, Data, Effect, Layer, Option } from "effect"
import { CatalogChanges } from "../Catalog/Changes.ts"
import { NodeIsBanned, NodeMissing, PublisherMissing, TransitionRefused, VersionMissing } from "../Domain/Errors.ts"
import type { HostNodeExtractStatus } from "../Domain/HostNode.ts"
import { installableStatus, type NodeStatus, type NodeVersionStatus, type Provenance } from "../Domain/Node.ts"
import type { HostRange, SemanticVersion } from "../Domain/Semver.ts"
import { chunks, onForeignKeyViolation, orDieOnDatabase } from "../Db/Rows.ts"
import type { StorageFailed, Written } from "../Storage/Storage.ts"
import { traced } from "../Tracing.ts"
import { requirementRecord } from "../Domain/Requirements.ts"

export class NodeIdTaken extends Data.TaggedError("NodeIdTaken")<{ readonly nodeId: string; readonly byAnother: boolean }> {
  override get message() {
    return this.byAnother ? `Node '${this.nodeId}' belongs to another publisher` : `A node '${this.nodeId}' exists already`
  }
}

export class NodeIsDeleted extends Data.TaggedError("NodeIsDeleted")<{ readonly nodeId: string }> {
  override get message() {
    return `Node '${this.nodeId}' is deleted; ids of deleted nodes are not reused`
  }
}

export class VersionTaken extends Data.TaggedError("VersionTaken")<{ readonly nodeId: string; readonly version: string }> {
  override get message() {
    return `Node '${this.nodeId}' has (or had) a version '${this.version}'; version numbers are never reused`
  }
}

/** The version has left Pending: its archive can no longer be replaced. */
export class VersionLocked extends Data.TaggedError("VersionLocked")<{ readonly status: NodeVersionStatus | "completed" }> {
  override get message() {
    return this.status === "completed"
      ? "Another upload of this version completed first"
      : `The version is ${this.status}: its archive can no longer be replaced; publish a new version`
  }
}

/** The node's publisher is deleted: a site admin cannot bring the node back under it. */
export class NodesPublisherDeleted extends Data.TaggedError("NodesPublisherDeleted")<{ readonly nodeId: string }> {
  override get message() {
    return `Node '${this.nodeId}' belongs to a deleted publisher: it stays deleted`
  }
}

/** A node's fields that may be set (absent: unchanged). */
export interface NodePatch {
  readonly name?: string | undefined
  readonly description?: string | undefined
  readonly author?: string | undefined
  readonly license?: string | undefined
  readonly icon?: string | undefined
  readonly banner_url?: string | undefined
  readonly category?: string | undefined
  readonly repository?: string | undefined
  readonly tags?: ReadonlyArray<string> | undefined
  readonly supported_os?: ReadonlyArray<string> | undefined
  readonly supported_accelerators?: ReadonlyArray<string> | undefined
  readonly supported_host_version?: string | undefined
  readonly supported_host_frontend_version?: string | undefined
  readonly translations?: Readonly<Record<string, Readonly<Record<string, unknown>>>> | undefined
  // the registry's own fields: site admins and seeding only
  readonly status?: NodeStatus | undefined
  readonly status_detail?: string | undefined
  readonly tags_admin?: ReadonlyArray<string> | undefined
  readonly search_ranking?: number | undefined
  readonly preempted_host_node_names?: ReadonlyArray<string> | undefined
}

/** A version to store: its number parsed, its host range parsed into key intervals. */
export interface NewVersion {
  readonly node_id: string
  readonly version: SemanticVersion
  readonly status: NodeVersionStatus
  readonly status_reason?: string | undefined
  readonly changelog?: string | undefined
  readonly dependencies?: ReadonlyArray<string> | undefined
  readonly deprecated?: boolean | undefined
  readonly supported_os?: ReadonlyArray<string> | undefined
  readonly supported_accelerators?: ReadonlyArray<string> | undefined
  readonly supported_host_version?: HostRange | undefined
  readonly supported_host_frontend_version?: { readonly text: string } | undefined
  readonly tags?: ReadonlyArray<string> | undefined
  readonly created_at?: Date | undefined
  /** SHA-256 of the publish request's manifest (Manifest.ts): a retry of the publish matches it. */
  readonly manifest_sha256?: Uint8Array | undefined
  /** How the version was published (absent: not recorded, as for seeds). */
  readonly provenance?: Provenance | undefined
  /** Publishing sets `pending` (HostNodes/ moves it on); a seed's versions carry what they had, if anything. */
  readonly host_node_extract_status?: HostNodeExtractStatus | undefined
}

/**
 * What an archive that passed the checks makes of its version: Active, or held (Flagged) by what
 * the scan found, and what is recorded with it in the same transaction (the scan, the stages).
 */
export interface ArchiveOutcome {
  readonly status: NodeVersionStatus
  readonly statusReason: string | undefined
  readonly alongside: Effect.Effect<void, SqlError>
}

/** The fields of a version its publisher may change after publishing. */
export interface VersionPatch {
  readonly changelog?: string | undefined
  readonly deprecated?: boolean | undefined
}

/** A version's compatibility as a site admin sets it (absent: unchanged); ranges parsed as on publishing. */
export interface VersionCompatibility {
  readonly supported_os?: ReadonlyArray<string> | undefined
  readonly supported_accelerators?: ReadonlyArray<string> | undefined
  readonly supported_host_version?: HostRange | undefined
  readonly supported_host_frontend_version?: { readonly text: string } | undefined
}

/** A status move: to `to`, only from one of `from` (the states reaching it). */
export interface VersionMove {
  readonly from: ReadonlyArray<NodeVersionStatus>
  readonly to: NodeVersionStatus
  readonly reason: string | undefined
}

/** The columns of a compatibility: only its present fields, ranges as their text. */
const compatibilityColumns = (c: VersionCompatibility): Record<string, unknown> => {
  const row: Record<string, unknown> = {}
  if (c.supported_os !== undefined) row.supported_os = [...c.supported_os]
  if (c.supported_accelerators !== undefined) row.supported_accelerators = [...c.supported_accelerators]
  if (c.supported_host_frontend_version !== undefined) row.supported_host_frontend_version = c.supported_host_frontend_version.text
  if (c.supported_host_version !== undefined) {
    row.supported_host_version = c.supported_host_version.text
    row.admits_any_host = c.supported_host_version.intervals === undefined
  }
  return row
}

/** The columns of a node patch: only its present fields. Arrays are copied (the driver wants mutable ones). */
export const nodeColumns = (patch: NodePatch): Record<string, unknown> => {
  const row: Record<string, unknown> = {}
  for (const [column, value] of Object.entries(patch)) {
    if (value === undefined) continue
    row[column] = Array.isArray(value) ? [...value] : column === "translations" ? JSON.stringify(value) : value
  }
  return row
}

/** A new node's columns when its input leaves them out: an insert takes its column list from its first row. */
export const nodeDefaults: Record<string, unknown> = {
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

const list = (a: ReadonlyArray<string> | undefined): Array<string> => (a ? [...a] : [])

export class PublishingRepo extends Context.Service<PublishingRepo>()("PublishingRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { change, lockNode, lockNodes, lockPublishers, refreshListed } = yield* CatalogChanges
    const thisNode = (nodeId: string) => sql`n.id = ${nodeId}`

    /** The key intervals of a version's host range, as the catalogue's host_version filter reads them. */
    const hostRangeRows = (versionId: string, range: HostRange | undefined) =>
      (range?.intervals ?? []).map((interval) => ({
        version_id: versionId,
        lo: interval.lo,
        lo_incl: interval.loIncl,
        hi: interval.hi,
        hi_incl: interval.hiIncl
      }))

    /** Stores versions with their sort keys and host ranges; answers their ids in order. */
    const insertVersionRows = (versions: ReadonlyArray<NewVersion>) =>
      Effect.gen(function*() {
        if (!Arr.isReadonlyArrayNonEmpty(versions)) return []
        const ids = yield* sql<{ id: string }>`INSERT INTO node_versions ${
          sql.insert(Arr.map(versions, (v) => ({
            node_id: v.node_id,
            version: v.version.text,
            semver_key: v.version.key,
            status: v.status,
            status_reason: v.status_reason ?? null,
            changelog: v.changelog ?? null,
            dependencies: list(v.dependencies),
            dependency_requirements: JSON.stringify((v.dependencies ?? []).map(requirementRecord)),
            deprecated: v.deprecated ?? false,
            supported_os: list(v.supported_os),
            supported_accelerators: list(v.supported_accelerators),
            supported_host_version: v.supported_host_version?.text ?? null,
            supported_host_frontend_version: v.supported_host_frontend_version?.text ?? null,
            admits_any_host: v.supported_host_version?.intervals === undefined,
            tags: list(v.tags),
            created_at: v.created_at ?? new Date(),
            manifest_sha256: v.manifest_sha256 ?? null,
            host_node_extract_status: v.host_node_extract_status ?? null,
            provenance: v.provenance === undefined ? null : JSON.stringify(v.provenance)
          })))
        } RETURNING id::text`
        const ranges = versions.flatMap((v, i) => hostRangeRows(ids[i]!.id, v.supported_host_version))
        for (const batch of chunks(ranges)) {
          if (Arr.isReadonlyArrayNonEmpty(batch)) yield* sql`INSERT INTO node_version_host_ranges ${sql.insert(batch)}`
        }
        yield* sql`UPDATE nodes SET updated_at = greatest(updated_at, now())
                   WHERE id = ANY(${[...new Set(versions.map((v) => v.node_id))]})`
        return ids.map((r) => r.id)
      })

    /** Replaces a version's compatibility columns, and its key intervals when its host range is set. */
    const setCompatibility = (versionId: string, compatibility: VersionCompatibility) =>
      Effect.gen(function*() {
        yield* sql`UPDATE node_versions SET ${sql.update(compatibilityColumns(compatibility))} WHERE id = ${versionId}::uuid`
        if (compatibility.supported_host_version === undefined) return
        yield* sql`DELETE FROM node_version_host_ranges WHERE version_id = ${versionId}::uuid`
        const ranges = hostRangeRows(versionId, compatibility.supported_host_version)
        if (Arr.isArrayNonEmpty(ranges)) yield* sql`INSERT INTO node_version_host_ranges ${sql.insert(ranges)}`
      })

    /**
     * Moves a version's status and sets its compatibility, within the caller's transaction. The
     * version's row is locked (after its node, in the lock order) and the move checked in its
     * statement, so a concurrent move wins or loses whole, and a refused move leaves the
     * compatibility unchanged too.
     */
    const reviseVersion = (nodeId: string, version: string, move: VersionMove | undefined, compatibility: VersionCompatibility) =>
      Effect.gen(function*() {
        yield* lockNode(nodeId)
        const [row] = yield* sql<{ id: string; status: NodeVersionStatus }>`
          SELECT id::text, status FROM node_versions WHERE node_id = ${nodeId} AND version = ${version} FOR UPDATE`
        const compatible = Object.keys(compatibilityColumns(compatibility)).length > 0
        if (row === undefined || (compatible && row.status === "NodeVersionStatusDeleted")) {
          return yield* new VersionMissing({ nodeId, version })
        }
        if (move !== undefined) {
          const moved = yield* sql`UPDATE node_versions SET status = ${move.to}, status_reason = ${move.reason ?? null}
            WHERE id = ${row.id}::uuid AND status = ANY(${move.from as Array<string>}) RETURNING id`
          if (moved.length === 0) return yield* new TransitionRefused({ record: "A version", from: row.status, to: move.to })
        }
        if (compatible) yield* setCompatibility(row.id, compatibility)
        yield* sql`UPDATE nodes SET updated_at = now() WHERE id = ${nodeId}`
      })

    /** After a conditional UPDATE of nodes changed nothing: why. */
    const refusedNodeMove = (nodeId: string, to: NodeStatus | undefined) =>
      Effect.flatMap(lockNode(nodeId), (node): Effect.Effect<never, NodeMissing | TransitionRefused> =>
        node === undefined
          ? new NodeMissing({ nodeId })
          : new TransitionRefused({ record: "A node", from: node.status, to: to ?? node.status }))

    return {
      /** Stores versions (publishing stores one; seeding many). */
      insertVersions: traced("PublishingRepo.insertVersions")(function*(versions: ReadonlyArray<NewVersion>) {
        yield* change(Effect.andThen(
          lockNodes([...new Set(versions.map((v) => v.node_id))]),
          Effect.forEach(chunks(versions), insertVersionRows, { discard: true })
        ))
      }),

      /** Creates a node of the publisher; fails when the id is taken. */
      createNode: traced("PublishingRepo.createNode")(function*(publisherId: string, nodeId: string, node: NodePatch) {
        yield* change(Effect.gen(function*() {
          yield* lockPublishers([publisherId])
          const now = new Date()
          const rows = yield* sql`INSERT INTO nodes ${
            sql.insert({ ...nodeDefaults, ...nodeColumns(node), id: nodeId, publisher_id: publisherId, created_at: now, updated_at: now })
          } ON CONFLICT (id) DO NOTHING RETURNING id`.pipe(
            onForeignKeyViolation(() => new PublisherMissing({ publisherId }))
          )
          if (rows.length === 0) return yield* new NodeIdTaken({ nodeId, byAnother: false })
          yield* refreshListed(thisNode(nodeId))
        }))
      }),

      /**
       * Applies the patch while the node's status is one of `from`: the check and the write are
       * one statement, so a concurrent change (a ban) cannot slip between them.
       */
      updateNode: traced("PublishingRepo.updateNode")(
        function*(nodeId: string, from: ReadonlyArray<NodeStatus>, patch: NodePatch) {
          const columns = nodeColumns(patch)
          const where = sql`id = ${nodeId} AND status = ANY(${from as Array<string>})`
          yield* change(Effect.gen(function*() {
            yield* lockNode(nodeId)
            const rows = yield* (Object.keys(columns).length > 0
              ? sql`UPDATE nodes SET ${sql.update(columns)}, updated_at = now() WHERE ${where} RETURNING id`
              : sql`UPDATE nodes SET updated_at = now() WHERE ${where} RETURNING id`).pipe(
              onForeignKeyViolation(() => new NodesPublisherDeleted({ nodeId }))
            )
            if (rows.length === 0) return yield* refusedNodeMove(nodeId, patch.status)
            yield* refreshListed(thisNode(nodeId))
          }))
        }
      ),

      /**
       * Creates the node for the publisher or updates it from `node` (its publisher unchanged), and
       * adds the version as Pending: one transaction, the node's row locked, so concurrent publishes
       * of one version (from any instance) add it once. Answers the version's id, and whether the
       * call was a replay: the version existed with the same manifest (and is not deleted), and
       * nothing was written.
       */
      publish: traced("PublishingRepo.publish")(
        function*(publisherId: string, nodeId: string, node: NodePatch, version: Omit<NewVersion, "node_id" | "status">) {
          return yield* change(Effect.gen(function*() {
            yield* lockPublishers([publisherId])
            const now = new Date()
            const created = yield* sql`INSERT INTO nodes ${
              sql.insert({ ...nodeDefaults, ...nodeColumns(node), publisher_id: publisherId, id: nodeId, created_at: now, updated_at: now })
            } ON CONFLICT (id) DO NOTHING RETURNING id`.pipe(
              onForeignKeyViolation(() => new PublisherMissing({ publisherId }))
            )
            // the node's lock serialises publishes of one node (and their checks) across instances
            const current = yield* lockNode(nodeId)
            if (current === undefined) return yield* Effect.die(new Error(`node '${nodeId}' vanished while publishing`))
            if (current.publisher_id !== publisherId) return yield* new NodeIdTaken({ nodeId, byAnother: true })
            if (current.status === "NodeStatusDeleted") return yield* new NodeIsDeleted({ nodeId })
            if (current.status === "NodeStatusBanned") return yield* new NodeIsBanned({ nodeId })
            // a retry of the publish that stored this version (its answer lost) finds its own manifest;
            // a version stored before manifests were kept (NULL) or deleted is never a replay
            const [taken] = yield* sql<{ id: string; replay: boolean }>`SELECT id::text,
                coalesce(manifest_sha256 = ${version.manifest_sha256 ?? null}, false)
                  AND status <> 'NodeVersionStatusDeleted' AS replay
              FROM node_versions WHERE node_id = ${nodeId} AND version = ${version.version.text}`
            if (taken?.replay === true) return { versionId: taken.id, replayed: true }
            if (taken !== undefined) return yield* new VersionTaken({ nodeId, version: version.version.text })
            if (created.length > 0) {
              yield* refreshListed(thisNode(nodeId))
            } else {
              const columns = nodeColumns(node)
              if (Object.keys(columns).length > 0) yield* sql`UPDATE nodes SET ${sql.update(columns)} WHERE id = ${nodeId}`
            }
            const [versionId] = yield* insertVersionRows([
              { ...version, node_id: nodeId, status: "NodeVersionStatusPending", host_node_extract_status: "pending" }
            ])
            return { versionId: versionId!, replayed: false }
          }))
        }
      ),

      /** Moves a version's status (with its reason) only from one of `from`, checked in the statement. */
      moveVersion: traced("PublishingRepo.moveVersion")(
        function*(nodeId: string, version: string, from: ReadonlyArray<NodeVersionStatus>, to: NodeVersionStatus, reason: string | undefined) {
          yield* change(reviseVersion(nodeId, version, { from, to, reason }, {}))
        }
      ),

      /**
       * A site admin's change of a version: a status move and its compatibility, both or neither,
       * with what `alongside` records of it (the audit log) in the same transaction. A deleted
       * version's compatibility is not changed: it is missing to such edits.
       */
      moderateVersion: traced("PublishingRepo.moderateVersion")(
        function*(
          nodeId: string,
          version: string,
          move: VersionMove | undefined,
          compatibility: VersionCompatibility,
          alongside: Effect.Effect<void, SqlError> = Effect.void
        ) {
          yield* change(Effect.andThen(reviseVersion(nodeId, version, move, compatibility), alongside))
        }
      ),

      /**
       * A Pending version got its archive, which passed the checks (a failing one is refused before
       * this, and the version stays Pending): it becomes Active, or held by its scan, as `outcome`
       * says, with what `outcome` records alongside in the same transaction. Fails when it was no longer
       * Pending, unless it holds these very bytes (another upload of them completed first: a
       * replay, nothing written). `place` (the archive made durable under its key) runs while the
       * version's row is locked and before the commit: a concurrent upload cannot replace the
       * archive between the two, and a crash never leaves the status without its archive.
       */
      recordArchive: traced("PublishingRepo.recordArchive")(
        function*(
          versionId: string,
          written: Written,
          place: Effect.Effect<void, StorageFailed>,
          outcome: ArchiveOutcome
        ) {
          // a transaction that lost to a concurrent one runs again: the archive is placed once
          let placed = false
          const placeOnce = Effect.suspend(() => placed ? Effect.void : Effect.tap(place, () => Effect.sync(() => void (placed = true))))
          return yield* change(Effect.gen(function*() {
            const [owner] = yield* sql<{ node_id: string }>`SELECT node_id FROM node_versions WHERE id = ${versionId}::uuid`
            if (owner !== undefined) yield* lockNode(owner.node_id)
            const [row] = yield* sql<{ node_id: string }>`SELECT node_id FROM node_versions
              WHERE id = ${versionId}::uuid AND status = 'NodeVersionStatusPending' FOR UPDATE`
            if (row === undefined) {
              const same = yield* sql`SELECT 1 FROM node_versions WHERE id = ${versionId}::uuid
                AND archive_sha256 = ${written.sha256} AND archive_bytes = ${written.bytes} AND status <> 'NodeVersionStatusDeleted'`
              if (same.length > 0) return { replayed: true }
              return yield* new VersionLocked({ status: "completed" })
            }
            yield* placeOnce
            yield* sql`UPDATE node_versions SET archive_bytes = ${written.bytes}, archive_sha256 = ${written.sha256},
              status = ${outcome.status}, status_reason = ${outcome.statusReason ?? null} WHERE id = ${versionId}::uuid`
            yield* outcome.alongside
            yield* sql`UPDATE nodes SET updated_at = now() WHERE id = ${row.node_id}`
            return { replayed: false }
          }))
        }
      ),

      /**
       * The size and SHA-256 of the archive a version holds, for a retried upload to compare; none
       * when it holds none, was stored before digests were kept, or is deleted (never a replay).
       */
      storedArchive: traced("PublishingRepo.storedArchive")(function*(versionId: string) {
        const [row] = yield* sql<{ archive_bytes: number; archive_sha256: Buffer }>`SELECT archive_bytes, archive_sha256
          FROM node_versions WHERE id = ${versionId}::uuid AND archive_sha256 IS NOT NULL AND archive_bytes IS NOT NULL
            AND status <> 'NodeVersionStatusDeleted'`.pipe(orDieOnDatabase)
        return Option.fromNullishOr(row).pipe(Option.map((r): Written => ({ bytes: r.archive_bytes, sha256: r.archive_sha256 })))
      }),

      /** Installable versions (those given a download URL): their archives' keys are checked at start-up. */
      installableWithArchive: traced("PublishingRepo.installableWithArchive")(function*() {
        return yield* sql<{ id: string; node_id: string; version: string }>`SELECT id::text, node_id, version FROM node_versions
          WHERE status = ${installableStatus} AND archive_bytes IS NOT NULL`.pipe(orDieOnDatabase)
      }),

      /**
       * Installable versions whose archive is lost go back to Pending, without an archive, so that
       * they are no longer installable and take a new upload. Not a move of the state machine: no
       * caller may ask for it; only the store's loss decides it. Answers the versions moved.
       */
      archiveLost: traced("PublishingRepo.archiveLost")(function*(versionIds: ReadonlyArray<string>, reason: string) {
        return yield* change(Effect.gen(function*() {
          const owners = yield* sql<{ node_id: string }>`SELECT DISTINCT node_id FROM node_versions
            WHERE id = ANY(${versionIds as Array<string>}::uuid[])`
          yield* lockNodes(owners.map((o) => o.node_id))
          return yield* sql<{ node_id: string; version: string }>`
          WITH lost AS (
            UPDATE node_versions SET status = 'NodeVersionStatusPending', status_reason = ${reason}, archive_bytes = NULL, archive_sha256 = NULL
            WHERE id = ANY(${versionIds as Array<string>}::uuid[]) AND status = ${installableStatus} AND archive_bytes IS NOT NULL
            RETURNING node_id, version
          ), touched AS (UPDATE nodes SET updated_at = now() WHERE id IN (SELECT node_id FROM lost))
          SELECT node_id, version FROM lost`
        }))
      }),

      /**
       * Yanks a version that is not deleted with `reason`, or undoes its yank (`undefined`). A
       * catalogue write like any other: every instance drops its pages, and the node's
       * `updated_at` moves so that `GET /nodes?timestamp=` shows the change.
       */
      yankVersion: traced("PublishingRepo.yankVersion")(function*(nodeId: string, version: string, reason: string | undefined) {
        yield* change(Effect.gen(function*() {
          yield* lockNode(nodeId)
          const rows = yield* sql`UPDATE node_versions SET yanked = ${reason !== undefined}, yanked_reason = ${reason ?? null}
            WHERE node_id = ${nodeId} AND version = ${version} AND status <> 'NodeVersionStatusDeleted' RETURNING id`
          if (rows.length === 0) return yield* new VersionMissing({ nodeId, version })
          yield* sql`UPDATE nodes SET updated_at = now() WHERE id = ${nodeId}`
        }))
      }),

      /** Changes a version that is not deleted. */
      updateVersion: traced("PublishingRepo.updateVersion")(function*(nodeId: string, version: string, patch: VersionPatch) {
        const columns = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined))
        const target: Statement.Fragment = sql`node_id = ${nodeId} AND version = ${version} AND status <> 'NodeVersionStatusDeleted'`
        yield* change(Effect.gen(function*() {
          yield* lockNode(nodeId)
          const rows = yield* (Object.keys(columns).length > 0
            ? sql`UPDATE node_versions SET ${sql.update(columns)} WHERE ${target} RETURNING id`
            : sql`SELECT id FROM node_versions WHERE ${target}`)
          if (rows.length === 0) return yield* new VersionMissing({ nodeId, version })
          yield* sql`UPDATE nodes SET updated_at = now() WHERE id = ${nodeId}`
        }))
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(PublishingRepo, PublishingRepo.make)
  static readonly layer = PublishingRepo.layerWithoutDependencies.pipe(Layer.provide(CatalogChanges.layer))
}
