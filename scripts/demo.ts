/**
 * `npm run demo`: the service as a newcomer can try it offline. Media vendors and the repository
 * host are simulated (VENDOR_MODE=simulated, REPOHOST_MODE=simulated: the seeded unclaimed nodes
 * can be claimed), data lives apart from ./data (DATA_DIR, default ./data-demo), the first start
 * seeds a modest catalogue (later starts reuse it), and a development token is printed with a
 * few requests to try, and the token command for this data folder. Ctrl-C stops the service and
 * its database.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Console, Context, Effect, Exit, Layer, Option, References, Runtime } from "effect"
import { HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import * as path from "node:path"
import { mintToken } from "../src/Auth/Jwt.ts"
import { AppConfig } from "../src/Config.ts"
import { unclaimedPublisherId } from "../src/Domain/Publisher.ts"
import { AppLive, HttpServerLive, ServicesLive } from "../src/App.ts"
import { seedNodes, seedPublishers } from "./lib/Catalogue.ts"
import { Seeder } from "./lib/Seeder.ts"

// read when the configuration is, which is after this: imports only declare
process.env.VENDOR_MODE = "simulated"
process.env.REPOHOST_MODE = "simulated"
process.env.DATA_DIR ||= "./data-demo"

const catalogue = { nodes: 300, versionsPerNode: 5, seed: 1 }
const demoUser = { sub: "demo", email: "demo@example.com", name: "Demo User", admin: true }
const demoPublisher = "demo-tools"

/** Seeds the catalogue unless the database already holds nodes; answers how many it holds. */
const seedIfEmpty = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const existing = (yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM nodes`.pipe(Effect.orDie))[0]?.n ?? 0
  if (existing > 0) return { nodes: existing, seeded: false }
  const writes = yield* Seeder
  const publishers = seedPublishers(catalogue)
  const batch = seedNodes(catalogue, publishers, 0, catalogue.nodes)
  yield* writes.upsertPublishers(publishers)
  yield* writes.insertNodes(batch.nodes)
  yield* writes.insertVersions(batch.versions)
  return { nodes: batch.nodes.length, seeded: true }
})

/** An unclaimed node to try claiming, if one is left. */
const unclaimedNode = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ id: string }>`SELECT id FROM nodes
    WHERE publisher_id = ${unclaimedPublisherId} AND status = 'NodeStatusActive' ORDER BY id LIMIT 1`.pipe(Effect.orDie)
  return Option.fromUndefinedOr(rows[0]?.id)
})

/** A word for the shell: as it is when it needs no quoting. */
const shellWord = (word: string) => /^[\w./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`

/**
 * DATA_DIR as the token command must be given it: npm runs scripts in the project folder, so a
 * folder below the current one is written relative to it, as `./data-demo`.
 */
const dataDirWord = (dataDir: string) => {
  const relative = path.relative(process.cwd(), dataDir)
  return shellWord(relative === "" || relative.startsWith("..") || path.isAbsolute(relative) ? dataDir : `./${relative}`)
}

const claimLines = (base: string, nodeId: Option.Option<string>) =>
  Option.match(nodeId, {
    onNone: () => [],
    onSome: (id) => [
      "",
      `Claim an unclaimed node for a publisher of yours (the simulated repository host accepts any VCS_TOKEN):`,
      `  curl -X POST ${base}/publishers -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' ` +
      `-d '{"id": "${demoPublisher}", "name": "Demo tools"}'`,
      `  curl -X POST ${base}/publishers/${demoPublisher}/nodes/${id}/claim-my-node -H "Authorization: Bearer $TOKEN" ` +
      `-H 'content-type: application/json' -d '{"VCS_TOKEN": "any"}'`
    ]
  })

const banner = (
  base: string,
  dataDir: string,
  nodes: { nodes: number; seeded: boolean },
  token: string,
  unclaimed: Option.Option<string>
) =>
  [
    "",
    `Demo registry on ${base} (simulated media vendors and repository host; data in ${dataDir})`,
    `  API reference: ${base}/docs`,
    `  Catalogue: ${nodes.nodes} nodes${nodes.seeded ? ", seeded just now" : ""}`,
    `  Development token of '${demoUser.sub}', a site admin, valid 30 days:`,
    "",
    `export TOKEN=${token}`,
    "",
    "Try:",
    `  curl '${base}/nodes?limit=3&sort=downloads;desc'`,
    `  curl '${base}/nodes/search?search=image'`,
    `  curl -X POST ${base}/proxy/imagevendor/v1/ai/skin-enhancer/creative -H "Authorization: Bearer $TOKEN" ` +
    `-H 'content-type: application/json' -d '{"image":"https://example.com/face.jpg"}'`,
    ...claimLines(base, unclaimed),
    "",
    "Tokens of other users, signed with this demo's key:",
    `  DATA_DIR=${dataDirWord(dataDir)} npm run -s token -- --sub alice --email alice@example.com`,
    ""
  ].join("\n")

const LoggingLive = Layer.unwrap(Effect.map(AppConfig, (config) => Layer.succeed(References.MinimumLogLevel, config.logLevel)))

const demo = Effect.gen(function*() {
  const config = yield* AppConfig
  if (Option.isSome(config.auth.jwksUrl)) {
    return yield* Effect.die(new Error("AUTH_JWKS_URL is set: the demo mints its own tokens; unset it to run the demo"))
  }
  // the services (database up and migrated) first, then the catalogue, then the server listens;
  // one memo map for both builds, so that the features share the seeder's page cache
  const memoMap = yield* Layer.makeMemoMap
  const scope = yield* Effect.scope
  const services = yield* Layer.buildWithMemoMap(Layer.provideMerge(Seeder.layer, ServicesLive), memoMap, scope)
  const nodes = yield* Effect.provide(seedIfEmpty, services)
  const unclaimed = yield* Effect.provide(unclaimedNode, services)
  const token = yield* Effect.provide(mintToken(config, demoUser, "30d"), services)
  const app = yield* Layer.buildWithMemoMap(
    AppLive.pipe(Layer.provideMerge(HttpServerLive), Layer.provide(Layer.succeedContext(services))),
    memoMap,
    scope
  )
  const { address } = Context.get(app, HttpServer.HttpServer)
  const base = address._tag === "UnixPathAddress" ? HttpServer.formatAddress(address) : `http://localhost:${address.port}`
  yield* Console.log(banner(base, config.dataDir, nodes, token, unclaimed))
  return yield* Effect.never
})

/**
 * A stop by signal is a clean exit (0), as it always was: Effect 4's default teardown exits 130
 * when the program was interrupted (as src/main.ts). Failures keep the default's codes.
 */
const stoppedBySignal: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)

demo.pipe(
  Effect.scoped,
  Effect.provide(LoggingLive),
  Effect.provide(AppConfig.layer),
  NodeRuntime.runMain({ teardown: stoppedBySignal })
)
