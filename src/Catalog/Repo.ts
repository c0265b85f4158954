/**
 * Typed reads of nodes and versions: rows decoded with the schemas of Records.ts. Every feature
 * reads nodes here; each writes them through its own repository.
 */
import { SqlClient, SqlSchema } from "effect/sql"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { NodeIsBanned, NodeMissing } from "../Domain/Errors.ts"
import { NodeStatus, NodeVersion, NodeVersionStatus } from "../Domain/Node.ts"
import { PublisherStatus } from "../Domain/Publisher.ts"
import { isUuid } from "../Domain/Schemas.ts"
import { nullable, rowsOf } from "../Db/Rows.ts"
import { archiveBase, downloadUrl, latestCandidate, nodeColumns, NodeRow, versionRecord } from "./Records.ts"
import type { Candidate } from "./Resolution.ts"
import { traced } from "../Tracing.ts"

/** A node's standing, without its record: what decisions about it are made on. */
export const NodeState = Schema.Struct({
  publisherId: Schema.String,
  status: NodeStatus,
  publisherStatus: PublisherStatus,
  repository: Schema.OptionFromNullOr(Schema.String)
})
export type NodeState = typeof NodeState.Type

/** A version with the statuses that decide whether it may be uploaded, downloaded or moved. */
export const VersionState = Schema.Struct({
  id: Schema.String,
  version: Schema.String,
  status: NodeVersionStatus,
  hasArchive: Schema.Boolean,
  nodeStatus: NodeStatus,
  publisherStatus: PublisherStatus
})
export type VersionState = typeof VersionState.Type

/** A node's version, by its version string, with its node's standing: both as stored, in any status. */
export const NamedVersion = Schema.Struct({
  node: NodeState,
  version: Schema.Option(Schema.Struct({
    id: Schema.String,
    status: NodeVersionStatus,
    hasArchive: Schema.Boolean,
    /** The stored archive's SHA-256, once known (migration 0013 started keeping it; older ones are backfilled). */
    sha256: Schema.Option(Schema.Uint8Array)
  }))
})
export type NamedVersion = typeof NamedVersion.Type

/** Succeeds when clients may see the node: a deleted one is missing, a banned one (or a banned publisher's) refused. */
export const requireVisible = (
  nodeId: string,
  node: { readonly status: NodeStatus; readonly publisherStatus: PublisherStatus }
): Effect.Effect<void, NodeMissing | NodeIsBanned> =>
  node.status === "NodeStatusDeleted"
    ? Effect.fail(new NodeMissing({ nodeId }))
    : node.status === "NodeStatusBanned" || node.publisherStatus === "PublisherStatusBanned"
    ? Effect.fail(new NodeIsBanned({ nodeId }))
    : Effect.void

const StatusesRow = {
  node_status: NodeStatus,
  publisher_status: PublisherStatus
}

/** A version that is not deleted, with its node's and publisher's statuses. */
export const VisibleVersion = Schema.Struct({ nodeStatus: NodeStatus, publisherStatus: PublisherStatus, version: NodeVersion })
export type VisibleVersion = typeof VisibleVersion.Type

/** The node's statuses and the version it installs, when it has one to install. */
const InstallRow = Schema.Struct({ ...StatusesRow, version: nullable(NodeVersion) })

/** A node's statuses and its installable versions (active, with an archive), newest first, as the chooser reads them. */
const CandidatesRow = rowsOf({
  id: Schema.String,
  ...StatusesRow,
  versions: Schema.Array(Schema.Struct({
    version: Schema.String,
    yanked: Schema.Boolean,
    supported_host_version: Schema.NullOr(Schema.String),
    admits_any_host: Schema.Boolean,
    download_url: Schema.NullOr(Schema.String),
    ranges: Schema.Array(Schema.Struct({
      lo: Schema.NullOr(Schema.String),
      lo_incl: Schema.Boolean,
      hi: Schema.NullOr(Schema.String),
      hi_incl: Schema.Boolean
    }))
  }))
}, Schema.Struct({
  nodeId: Schema.String,
  nodeStatus: NodeStatus,
  publisherStatus: PublisherStatus,
  candidates: Schema.Array(Schema.Struct({
    version: Schema.String,
    yanked: Schema.Boolean,
    supportedHostVersion: Schema.NullOr(Schema.String),
    admitsAnyHost: Schema.Boolean,
    downloadUrl: Schema.NullOr(Schema.String),
    hostIntervals: Schema.Array(Schema.Struct({
      lo: Schema.NullOr(Schema.String),
      loIncl: Schema.Boolean,
      hi: Schema.NullOr(Schema.String),
      hiIncl: Schema.Boolean
    }))
  }))
}), (r) => ({
  nodeId: r.id,
  nodeStatus: r.node_status,
  publisherStatus: r.publisher_status,
  candidates: r.versions.map((v): Candidate => ({
    version: v.version,
    yanked: v.yanked,
    supportedHostVersion: v.supported_host_version,
    admitsAnyHost: v.admits_any_host,
    downloadUrl: v.download_url,
    hostIntervals: v.ranges.map((i) => ({ lo: i.lo, loIncl: i.lo_incl, hi: i.hi, hiIncl: i.hi_incl }))
  }))
}))

/** A node's standing and the versions an install or a resolve chooses from. */
export type NodeCandidates = typeof CandidatesRow.Type

/** A row of one column, `version`: a version's record. */
const VersionRow = rowsOf({ version: NodeVersion }, NodeVersion, (row) => row.version)

export class NodeRepo extends Context.Service<NodeRepo>()("NodeRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const base = yield* archiveBase
    // built once: the version's record is a long expression, and every read of a version selects it
    const versionOfV = sql.literal(`${versionRecord("v", base)} AS version`)
    const candidateUrl = sql.literal(downloadUrl("v", base))
    /** `v` is the version `versionOrId` names: its version string, or its id when it is a UUID. */
    const named = (versionOrId: string) =>
      isUuid(versionOrId) ? sql`(v.version = ${versionOrId} OR v.id = ${versionOrId}::uuid)` : sql`v.version = ${versionOrId}`
    const latestActive = sql`LEFT JOIN LATERAL (
      SELECT * FROM node_versions v WHERE v.node_id = n.id AND ${sql.literal(latestCandidate("v"))}
      ORDER BY v.semver_key DESC, v.version DESC LIMIT 1) lv ON true`

    const findNode = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: NodeRow,
      execute: (nodeId) =>
        sql`SELECT ${sql.literal(nodeColumns("n", "p", "lv", base))}
            FROM nodes n JOIN publishers p ON p.id = n.publisher_id ${latestActive}
            WHERE n.id = ${nodeId}`
    })

    const findState = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: rowsOf({
        publisher_id: Schema.String,
        status: NodeStatus,
        publisher_status: PublisherStatus,
        repository: Schema.NullOr(Schema.String)
      }, NodeState, (r) => ({
        publisherId: r.publisher_id,
        status: r.status,
        publisherStatus: r.publisher_status,
        repository: Option.fromNullOr(r.repository)
      })),
      execute: (nodeId) =>
        sql`SELECT n.publisher_id, n.status, p.status AS publisher_status, n.repository
            FROM nodes n JOIN publishers p ON p.id = n.publisher_id WHERE n.id = ${nodeId}`
    })

    const findVisibleVersion = SqlSchema.findOneOption({
      Request: Schema.Struct({ nodeId: Schema.String, versionOrId: Schema.String }),
      Result: VisibleVersion,
      execute: ({ nodeId, versionOrId }) =>
        sql`SELECT n.status AS "nodeStatus", p.status AS "publisherStatus", ${versionOfV}
            FROM node_versions v JOIN nodes n ON n.id = v.node_id JOIN publishers p ON p.id = n.publisher_id
            WHERE v.node_id = ${nodeId} AND v.status <> 'NodeVersionStatusDeleted' AND ${named(versionOrId)}
            LIMIT 1`
    })

    const findVersions = SqlSchema.findAll({
      Request: Schema.Struct({ nodeId: Schema.String, statuses: Schema.Array(NodeVersionStatus) }),
      Result: VersionRow,
      execute: ({ nodeId, statuses }) =>
        sql`SELECT ${versionOfV} FROM node_versions v
            WHERE v.node_id = ${nodeId} AND v.status = ANY(${statuses as Array<string>})
            ORDER BY v.semver_key DESC, v.version DESC`
    })

    const findVersionById = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: VersionRow,
      execute: (versionId) => sql`SELECT ${versionOfV} FROM node_versions v WHERE v.id = ${versionId}::uuid`
    })

    const findVersionState = SqlSchema.findOneOption({
      Request: Schema.Struct({ nodeId: Schema.String, versionOrId: Schema.String }),
      Result: rowsOf({
        id: Schema.String,
        version: Schema.String,
        status: NodeVersionStatus,
        has_archive: Schema.Boolean,
        ...StatusesRow
      }, VersionState, (r) => ({
        id: r.id,
        version: r.version,
        status: r.status,
        hasArchive: r.has_archive,
        nodeStatus: r.node_status,
        publisherStatus: r.publisher_status
      })),
      execute: ({ nodeId, versionOrId }) =>
        sql`SELECT v.id::text, v.version, v.status, v.archive_bytes IS NOT NULL AS has_archive,
                   n.status AS node_status, p.status AS publisher_status
            FROM node_versions v JOIN nodes n ON n.id = v.node_id JOIN publishers p ON p.id = n.publisher_id
            WHERE v.node_id = ${nodeId} AND ${named(versionOrId)}
            ORDER BY v.version = ${versionOrId} DESC LIMIT 1`
    })

    const findNamedVersion = SqlSchema.findOneOption({
      Request: Schema.Struct({ nodeId: Schema.String, version: Schema.String }),
      Result: rowsOf({
        publisher_id: Schema.String,
        status: NodeStatus,
        publisher_status: PublisherStatus,
        repository: Schema.NullOr(Schema.String),
        version_id: Schema.NullOr(Schema.String),
        version_status: Schema.NullOr(NodeVersionStatus),
        has_archive: Schema.Boolean,
        archive_sha256: Schema.NullOr(Schema.Uint8Array)
      }, NamedVersion, (r): NamedVersion => ({
        node: {
          publisherId: r.publisher_id,
          status: r.status,
          publisherStatus: r.publisher_status,
          repository: Option.fromNullOr(r.repository)
        },
        version: r.version_id === null || r.version_status === null
          ? Option.none()
          : Option.some({
            id: r.version_id,
            status: r.version_status,
            hasArchive: r.has_archive,
            sha256: Option.fromNullOr(r.archive_sha256)
          })
      })),
      execute: ({ nodeId, version }) =>
        sql`SELECT n.publisher_id, n.status, p.status AS publisher_status, n.repository,
                   v.id::text AS version_id, v.status AS version_status, v.archive_bytes IS NOT NULL AS has_archive,
                   v.archive_sha256
            FROM nodes n JOIN publishers p ON p.id = n.publisher_id
            LEFT JOIN node_versions v ON v.node_id = n.id AND v.version = ${version}
            WHERE n.id = ${nodeId}`
    })

    const installVersion = SqlSchema.findOneOption({
      Request: Schema.Struct({
        nodeId: Schema.String,
        version: Schema.UndefinedOr(Schema.String),
        allowYanked: Schema.Boolean,
        client: Schema.String
      }),
      Result: InstallRow,
      // One statement: the version chosen and the download counted together. A download counts
      // when this client's row for the version and hour is new: of concurrent inserts of one key,
      // ON CONFLICT lets one through and the others wait for it and insert nothing. The UPDATE
      // takes the node's row lock, so concurrent counted installs queue on it and each adds one.
      execute: ({ nodeId, version, allowYanked, client }) =>
        sql`WITH target AS (
              SELECT v.* FROM node_versions v
              JOIN nodes n ON n.id = v.node_id JOIN publishers p ON p.id = n.publisher_id
              WHERE v.node_id = ${nodeId} AND v.status = 'NodeVersionStatusActive' AND v.archive_bytes IS NOT NULL
                AND n.status = 'NodeStatusActive' AND p.status = 'PublisherStatusActive'
                -- an unpinned install never chooses a yanked version; a pinned one still gets it
                ${version === undefined ? sql`` : sql`AND v.version = ${version}`}
                ${version !== undefined && allowYanked ? sql`` : sql`AND NOT v.yanked`}
              ORDER BY v.semver_key DESC, v.version DESC LIMIT 1),
            fresh AS (
              INSERT INTO install_counts (address_hash, node_id, version, hour)
              SELECT sha256(convert_to(k.value || ${client}, 'UTF8')), t.node_id, t.version, date_trunc('hour', now())
              FROM target t, service_secrets k WHERE k.name = 'install_address_key'
              ON CONFLICT DO NOTHING RETURNING node_id),
            counted AS (UPDATE nodes SET downloads = downloads + 1 WHERE id IN (SELECT node_id FROM fresh) RETURNING id)
            SELECT n.status AS node_status, p.status AS publisher_status,
                   (SELECT ${sql.literal(versionRecord("target", base))} FROM target) AS version
            FROM nodes n JOIN publishers p ON p.id = n.publisher_id
            WHERE n.id = ${nodeId}`
    })

    const findCandidates = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: CandidatesRow,
      // one statement for any number of nodes: each node's installable versions as one JSON
      // array, with the host intervals the list filter compares (node_version_host_ranges)
      execute: (nodeIds) =>
        sql`SELECT n.id, n.status AS node_status, p.status AS publisher_status,
                   coalesce((SELECT json_agg(json_build_object(
                       'version', v.version, 'yanked', v.yanked, 'supported_host_version', v.supported_host_version,
                       'admits_any_host', v.admits_any_host, 'download_url', ${candidateUrl},
                       'ranges', coalesce((SELECT json_agg(json_build_object('lo', r.lo, 'lo_incl', r.lo_incl, 'hi', r.hi, 'hi_incl', r.hi_incl))
                                           FROM node_version_host_ranges r WHERE r.version_id = v.id), '[]'))
                     ORDER BY v.semver_key DESC, v.version DESC)
                     FROM node_versions v
                     WHERE v.node_id = n.id AND v.status = 'NodeVersionStatusActive' AND v.archive_bytes IS NOT NULL), '[]') AS versions
            FROM nodes n JOIN publishers p ON p.id = n.publisher_id
            WHERE n.id = ANY(${nodeIds as Array<string>})`
    })

    const findDependencies = SqlSchema.findAll({
      Request: Schema.Struct({ nodeIds: Schema.Array(Schema.String), versions: Schema.Array(Schema.String) }),
      Result: Schema.Struct({ node_id: Schema.String, version: Schema.String, dependencies: Schema.Array(Schema.String) }),
      execute: ({ nodeIds, versions }) =>
        sql`SELECT v.node_id, v.version, v.dependencies
            FROM unnest(${nodeIds as Array<string>}::text[], ${versions as Array<string>}::text[]) AS q(node_id, version)
            JOIN node_versions v ON v.node_id = q.node_id AND v.version = q.version
            JOIN nodes n ON n.id = v.node_id JOIN publishers p ON p.id = n.publisher_id
            WHERE v.status <> 'NodeVersionStatusDeleted' AND n.status = 'NodeStatusActive' AND p.status = 'PublisherStatusActive'`
    })

    return {
      /** The dependencies of each named version clients may see (not deleted, of a listed node); one statement. */
      dependencies: traced("NodeRepo.dependencies")(function*(pairs: ReadonlyArray<{ readonly nodeId: string; readonly version: string }>) {
        return yield* Effect.orDie(findDependencies({ nodeIds: pairs.map((p) => p.nodeId), versions: pairs.map((p) => p.version) }))
      }),

      /** Each named node that exists (in any status) with the versions an install chooses from; one statement. */
      candidates: traced("NodeRepo.candidates")(function*(nodeIds: ReadonlyArray<string>) {
        return yield* Effect.orDie(findCandidates(nodeIds))
      }),

      /** A node by id, in any status, with its publisher and latest active version. */
      findNode: traced("NodeRepo.findNode")(function*(nodeId: string) {
        return yield* Effect.orDie(findNode(nodeId))
      }),

      /** A node's standing, in any status. */
      nodeState: traced("NodeRepo.nodeState")(function*(nodeId: string) {
        return yield* Effect.orDie(findState(nodeId))
      }),

      /** A version that is not deleted, by version string or id, with its node's statuses. */
      findVersion: traced("NodeRepo.findVersion")(function*(nodeId: string, versionOrId: string) {
        return yield* Effect.orDie(findVisibleVersion({ nodeId, versionOrId }))
      }),

      /** The node's versions in these statuses, newest semantic version first. */
      listVersions: traced("NodeRepo.listVersions")(
        function*(nodeId: string, statuses: ReadonlyArray<NodeVersionStatus>) {
          return yield* Effect.orDie(findVersions({ nodeId, statuses }))
        }
      ),

      /** A version by id, whatever its status. */
      versionById: traced("NodeRepo.versionById")(function*(versionId: string) {
        return yield* Effect.orDie(findVersionById(versionId))
      }),

      /** A version by version string or id, whatever its status (the string wins over an id). */
      versionState: traced("NodeRepo.versionState")(function*(nodeId: string, versionOrId: string) {
        return yield* Effect.orDie(findVersionState({ nodeId, versionOrId }))
      }),

      /** A node's standing and its version `version` (a version string, never an id), in any status. */
      namedVersion: traced("NodeRepo.namedVersion")(function*(nodeId: string, version: string) {
        return yield* Effect.orDie(findNamedVersion({ nodeId, version }))
      }),

      /**
       * The requested version, or the newest installable one, counted as one download in the
       * same statement unless this client (its address) was counted for it this hour; with the
       * node's statuses. `None` when there is no such node. The rows of completed hours are folded
       * into download statistics (Downloads/Rollup.ts).
       */
      install: traced("NodeRepo.install")(function*(nodeId: string, version: string | undefined, client: string, allowYanked = true) {
        return yield* Effect.orDie(installVersion({ nodeId, version, allowYanked, client }))
      })
    }
  })
}) {
  static readonly layer = Layer.effect(NodeRepo, NodeRepo.make)
}
