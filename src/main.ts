/** The edge: read the configuration, compose every Layer once, serve until interrupted. */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { AppConfig } from "./Config.ts"
import { TracingLive } from "./Observability/Otel.ts"
import { loggingLayer } from "./Observability/Logging.ts"
import { AppLive, HttpServerLive, ServicesLive } from "./Server.ts"

const LoggingLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) => loggingLayer(config.logFormat, config.logLevel))
)

// the database is up and migrated before the server listens
const MainLive = AppLive.pipe(
  Layer.provide(HttpServerLive),
  Layer.provide(ServicesLive),
  Layer.provide(TracingLive),
  Layer.provide(LoggingLive),
  Layer.provide(AppConfig.Default)
)

/**
 * The first SIGINT or SIGTERM stops the service (`runMain` interrupts it: the server drains for at
 * most SHUTDOWN_GRACE_SECONDS, then the layers close, the embedded PostgreSQL last). `runMain`
 * then stops listening, and a second signal would kill the process with Node's default action,
 * leaving PostgreSQL running. One comes with every Ctrl-C under `npm start`: the terminal signals
 * the whole process group and npm passes its own signal on. So signals stay caught, and ignored.
 */
const outlastRepeatedSignals = () => {
  let received = 0
  const onSignal = (signal: NodeJS.Signals) => {
    if (received++ > 0) console.error(`${signal} received while stopping: the stop is already under way, and bounded`)
  }
  process.on("SIGINT", onSignal)
  process.on("SIGTERM", onSignal)
}

outlastRepeatedSignals()
Layer.launch(MainLive).pipe(NodeRuntime.runMain)
