/** The edge: read the configuration, compose every Layer once, serve until interrupted. */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Logger } from "effect"
import { AppConfig } from "./Config.ts"
import { AppLive, HttpServerLive, ServicesLive } from "./Server.ts"

const LoggingLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) => Logger.minimumLogLevel(config.logLevel))
)

// the database is up and migrated before the server listens
const MainLive = AppLive.pipe(
  Layer.provide(HttpServerLive),
  Layer.provide(ServicesLive),
  Layer.provide(LoggingLive),
  Layer.provide(AppConfig.Default)
)

Layer.launch(MainLive).pipe(NodeRuntime.runMain)
