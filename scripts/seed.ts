/**
 * `npm run seed -- --nodes N --versions M [--seed S] [--reset]`: fills the configured database
 * (DATABASE_URL, or the embedded server in DATA_DIR) with the deterministic catalogue of
 * scripts/lib/Catalogue.ts, through the Seeder (the service's own writers, caches notified).
 */
import { NodeFileSystem, NodeRuntime } from "@effect/platform-node"
import { Console, Data, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { parseArgs } from "node:util"
import { CatalogChanges } from "../src/Catalog/Changes.ts"
import { AppConfig } from "../src/Config.ts"
import { DatabaseLive } from "../src/Db/Database.ts"
import { unclaimedPublisherId as unclaimedPublisher } from "../src/Domain/Publisher.ts"
import { seedNodes, seedPublishers } from "./lib/Catalogue.ts"
import { Seeder } from "./lib/Seeder.ts"

const usage = `usage: npm run seed -- --nodes N --versions M [--seed S] [--reset]

  --nodes N      nodes to create (default 1000)
  --versions M   versions per node (default 10)
  --seed S       PRNG seed: the same seed gives the same catalogue (default 1)
  --reset        first delete every node, version and publisher (except '${unclaimedPublisher}')

The database is the service's: DATABASE_URL, else the embedded server in DATA_DIR (./data).`

class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}
class Help extends Data.TaggedError("Help") {}
class NotEmpty extends Data.TaggedError("NotEmpty")<{ readonly nodes: number }> {}

const intAtLeast = (name: string, raw: string | undefined, fallback: number, min: number) => {
  if (raw === undefined) return Effect.succeed(fallback)
  const n = Number(raw)
  return Number.isSafeInteger(n) && n >= min
    ? Effect.succeed(n)
    : Effect.fail(new UsageError({ message: `--${name} must be an integer >= ${min}, got '${raw}'` }))
}

const cli = Effect.gen(function*() {
  const { values } = yield* Effect.try({
    try: () =>
      parseArgs({
        options: {
          nodes: { type: "string" },
          versions: { type: "string" },
          seed: { type: "string" },
          reset: { type: "boolean", default: false },
          help: { type: "boolean", short: "h", default: false }
        }
      }),
    catch: (e) => new UsageError({ message: (e as Error).message })
  })
  if (values.help) return yield* new Help()
  return {
    nodes: yield* intAtLeast("nodes", values.nodes, 1000, 1),
    versionsPerNode: yield* intAtLeast("versions", values.versions, 10, 1),
    seed: yield* intAtLeast("seed", values.seed, 1, 0),
    reset: values.reset
  }
})

// Nodes per write: big enough that round trips do not dominate, small enough to keep memory flat.
const nodesPerBatch = 1000
// Batches in flight: generating and compiling one batch overlaps PostgreSQL inserting another.
const concurrentBatches = 3

const seconds = (since: number) => ((performance.now() - since) / 1000).toFixed(1)

const tally = <A>(items: ReadonlyArray<A>, key: (a: A) => string | undefined, into: Map<string, number>) => {
  for (const item of items) {
    const k = key(item) ?? "?"
    into.set(k, (into.get(k) ?? 0) + 1)
  }
}
const describe = (counts: Map<string, number>, prefix: string) =>
  [...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${n} ${k.replace(prefix, "").toLowerCase()}`).join(", ")

type Options = Effect.Success<typeof cli>

const seed = (options: Options) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const writes = yield* Seeder
  // as any catalogue write: in one transaction, then every instance's page cache is told
  const { change } = yield* CatalogChanges
  const started = performance.now()

  const existing = (yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM nodes`)[0]?.n ?? 0
  if (existing > 0) {
    if (!options.reset) return yield* new NotEmpty({ nodes: existing })
    // DELETE, not TRUNCATE: row triggers (the maintained count of listed nodes) must see the rows
    // go; foreign keys cascade to whatever hangs off nodes (versions, host-node records, ...)
    yield* change(Effect.all([
      sql`DELETE FROM nodes`,
      sql`DELETE FROM publishers WHERE id <> ${unclaimedPublisher}`
    ], { discard: true }))
    yield* Console.log(`reset: removed ${existing} nodes with their versions, and the publishers (${seconds(started)} s)`)
  }

  const publishers = seedPublishers(options)
  yield* writes.upsertPublishers(publishers)

  const nodeStatuses = new Map<string, number>()
  const versionStatuses = new Map<string, number>()
  let done = 0
  let nextReport = 0.1
  const batches = Array.from({ length: Math.ceil(options.nodes / nodesPerBatch) }, (_, i) => i * nodesPerBatch)
  yield* Effect.forEach(batches, (from) =>
    Effect.gen(function*() {
      const batch = seedNodes(options, publishers, from, from + nodesPerBatch)
      yield* writes.insertNodes(batch.nodes)
      yield* writes.insertVersions(batch.versions)
      tally(batch.nodes, (n) => n.status, nodeStatuses)
      tally(batch.versions, (v) => v.status, versionStatuses)
      done += batch.nodes.length
      if (done / options.nodes >= nextReport && done < options.nodes) {
        nextReport += 0.1
        yield* Console.error(`  ${done} / ${options.nodes} nodes (${seconds(started)} s)`)
      }
    }), { concurrency: concurrentBatches, discard: true })
  const inserted = performance.now()

  // the Seeder stamps updated_at with the time of the write; a real catalogue's nodes were
  // last updated by their latest release, which is what `timestamp` and sort=updated_at see.
  yield* change(sql`UPDATE nodes n SET updated_at = greatest(n.created_at, v.latest)
      FROM (SELECT node_id, max(created_at) AS latest FROM node_versions GROUP BY node_id) v
      WHERE v.node_id = n.id`)
  // Settle the tables as autovacuum soon would (statistics, visibility map, dead rows of the
  // updates above), so that queries right after a seed, benchmarks above all, neither meet a
  // half-analysed catalogue nor race autovacuum.
  const vacuumStarted = performance.now()
  yield* sql`VACUUM (ANALYZE)`
  const vacuumed = performance.now() - vacuumStarted

  const unclaimed = (yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM nodes WHERE publisher_id = ${unclaimedPublisher}`)[0]?.n
  const banned = publishers.filter((p) => p.status === "PublisherStatusBanned").map((p) => p.id)
  const versions = [...versionStatuses.values()].reduce((a, b) => a + b, 0)
  yield* Console.log([
    `seeded (seed ${options.seed}) in ${seconds(started)} s ` +
    `(inserts ${((inserted - started) / 1000).toFixed(1)} s, vacuum ${(vacuumed / 1000).toFixed(1)} s):`,
    `  ${publishers.length} publishers (banned: ${banned.join(", ")}) plus '${unclaimedPublisher}' holding ${unclaimed} nodes`,
    `  ${options.nodes} nodes: ${describe(nodeStatuses, "NodeStatus")}`,
    `  ${versions} versions: ${describe(versionStatuses, "NodeVersionStatus")}`
  ].join("\n"))
})

const exitWith = (code: number) => Effect.sync(() => void (process.exitCode = code))

const SeedLive = Layer.mergeAll(Seeder.layer, CatalogChanges.layer).pipe(
  Layer.provideMerge(DatabaseLive),
  Layer.provide(NodeFileSystem.layer),
  Layer.provide(AppConfig.layer)
)

cli.pipe(
  // the arguments are checked before the database is started
  Effect.flatMap((options) => Effect.provide(seed(options), SeedLive)),
  Effect.catchTags({
    Help: () => Console.log(usage),
    UsageError: (e) => Console.error(`${e.message}\n\n${usage}`).pipe(Effect.andThen(exitWith(2))),
    NotEmpty: (e) =>
      Console.error(`The database already holds ${e.nodes} nodes; nothing was changed. Pass --reset to replace them.`)
        .pipe(Effect.andThen(exitWith(1)))
  }),
  NodeRuntime.runMain
)
