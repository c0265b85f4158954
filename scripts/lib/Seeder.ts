/**
 * Bulk writes of a whole catalogue for seeding, the demo, benchmarks and tests: publishers, nodes
 * and versions with any field the registry owns (downloads, ratings, statuses, creation times),
 * which no endpoint lets a client set. Versions go through the service's own version writer
 * (PublishingRepo.insertVersions: sort keys and host ranges), and every write through
 * CatalogChanges, so caches on every instance drop their pages as for any other write.
 */
import { Array as Arr, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { CatalogChanges } from "../../src/Catalog/Changes.ts"
import type { NodeVersionStatus } from "../../src/Domain/Node.ts"
import type { PublisherStatus } from "../../src/Domain/Publisher.ts"
import { hostIntervals, semverKey } from "../../src/Domain/Semver.ts"
import { chunks } from "../../src/Db/Rows.ts"
import { type NewVersion, nodeColumns, nodeDefaults, type NodePatch, PublishingRepo } from "../../src/Publishing/Repo.ts"

export interface PublisherInput {
  readonly id: string
  readonly name?: string | undefined
  readonly description?: string | undefined
  readonly website?: string | undefined
  readonly status?: PublisherStatus | undefined
  readonly created_at?: Date | undefined
}

/** A node with every column a seed may set. */
export interface NodeInput extends NodePatch {
  readonly id: string
  readonly publisher_id: string
  readonly repohost_stars?: number | undefined
  readonly downloads?: number | undefined
  readonly rating?: number | undefined
  readonly created_at?: Date | undefined
}

/**
 * A version as seeds write it: what publishing stores, with its number and host ranges as text
 * (build metadata allowed, as imported catalogues have it) and any status.
 */
export interface VersionInput extends Omit<NewVersion, "version" | "status" | "supported_host_version" | "supported_host_frontend_version"> {
  readonly version: string
  readonly status?: NodeVersionStatus | undefined
  readonly supported_host_version?: string | undefined
  readonly supported_host_frontend_version?: string | undefined
}

const nullable = <A>(a: A | undefined): A | null => (a === undefined ? null : a)

/** A seed's version, parsed as publishing parses one; a seed with an invalid version is a bug in the seed. */
const parsed = (v: VersionInput) => {
  const key = semverKey(v.version)
  if (key === undefined) throw new Error(`seed version '${v.version}' of '${v.node_id}' is not a semantic version`)
  const range = v.supported_host_version?.trim()
  return {
    ...v,
    version: { text: v.version, key },
    status: v.status ?? "NodeVersionStatusPending",
    supported_host_version: range ? { text: v.supported_host_version!, intervals: hostIntervals(range) ?? [] } : undefined,
    supported_host_frontend_version: v.supported_host_frontend_version === undefined
      ? undefined
      : { text: v.supported_host_frontend_version }
  }
}

export class Seeder extends Context.Service<Seeder>()("Seeder", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { change, lockNode, refreshListed, touchPublishers } = yield* CatalogChanges
    const publishing = yield* PublishingRepo
    const thisNode = (nodeId: string) => sql`n.id = ${nodeId}`

    return {
      upsertPublishers: (publishers: ReadonlyArray<PublisherInput>) =>
        change(Effect.forEach(chunks(publishers), (batch) =>
          sql`INSERT INTO publishers ${
            sql.insert(Arr.map(batch, (p) => ({
              id: p.id,
              name: nullable(p.name),
              description: nullable(p.description),
              website: nullable(p.website),
              status: p.status ?? "PublisherStatusActive",
              created_at: p.created_at ?? new Date(),
              // a new publisher was last changed when created, as a real catalogue's were
              updated_at: p.created_at ?? new Date()
            })))
          } ON CONFLICT (id) DO UPDATE SET name = excluded.name, description = excluded.description,
              website = excluded.website, updated_at = now()`, { discard: true }).pipe(
          Effect.andThen(refreshListed(sql`n.publisher_id = ANY(${publishers.map((p) => p.id)})`))
        )),

      /** Nodes in batches; every row names every column (an insert takes its column list from its first row). */
      insertNodes: (nodes: ReadonlyArray<NodeInput>) =>
        change(Effect.forEach(chunks(nodes), (batch) =>
          sql`INSERT INTO nodes ${
            sql.insert(Arr.map(batch, (n) => {
              const created = n.created_at ?? new Date()
              return { ...nodeDefaults, ...nodeColumns(n), id: n.id, created_at: created, updated_at: created }
            }))
          }`.pipe(Effect.andThen(refreshListed(sql`n.id = ANY(${batch.map((n) => n.id)})`))), { discard: true })),

      insertVersions: (versions: ReadonlyArray<VersionInput>) => publishing.insertVersions(versions.map(parsed)),

      /** Changes a node's columns, whatever its status. */
      updateNode: (nodeId: string, patch: NodeInput | Partial<NodeInput>) =>
        change(Effect.gen(function*() {
          yield* lockNode(nodeId)
          const columns = nodeColumns(patch)
          yield* Object.keys(columns).length > 0
            ? sql`UPDATE nodes SET ${sql.update(columns)}, updated_at = now() WHERE id = ${nodeId}`
            : sql`UPDATE nodes SET updated_at = now() WHERE id = ${nodeId}`
          yield* refreshListed(thisNode(nodeId))
        })),

      setVersionStatus: (nodeId: string, version: string, status: NodeVersionStatus) =>
        change(lockNode(nodeId).pipe(
          Effect.andThen(sql`UPDATE node_versions SET status = ${status} WHERE node_id = ${nodeId} AND version = ${version}`),
          Effect.andThen(sql`UPDATE nodes SET updated_at = now() WHERE id = ${nodeId}`)
        )),

      setPublisherStatus: (publisherId: string, status: PublisherStatus) =>
        change(Effect.andThen(
          sql`UPDATE publishers SET status = ${status} WHERE id = ${publisherId}`,
          touchPublishers([publisherId])
        ))
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(Seeder, Seeder.make)
  static readonly layer = Seeder.layerWithoutDependencies.pipe(
    Layer.provide(Layer.merge(CatalogChanges.layer, PublishingRepo.layer))
  )
}
