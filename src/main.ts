/** The edge: read the configuration, compose every Layer once, serve until interrupted. */
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Effect, Exit, Layer, Runtime } from "effect"
import { AppConfig } from "./Config.ts"
import { TracingLive } from "./Observability/Otel.ts"
import { loggingLayer } from "./Observability/Logging.ts"
import { ServicesLive } from "./App.ts"
import { AppLive, HttpServerLive } from "./Server.ts"

const LoggingLive = Layer.unwrap(
  Effect.map(AppConfig, (config) => loggingLayer(config.logFormat, config.logLevel))
)

// the database is up and migrated before the server listens
const MainLive = AppLive.pipe(
  Layer.provide(HttpServerLive),
  Layer.provide(ServicesLive),
  Layer.provide(TracingLive),
  Layer.provide(LoggingLive),
  Layer.provide(AppConfig.layer)
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

/**
 * A stop by signal is a clean exit (0), as it always was here: Effect 4's default teardown exits
 * 130 when the program was interrupted. Failures keep the default's codes.
 */
const stoppedBySignal: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)

outlastRepeatedSignals()
NodeRuntime.runMain(Layer.launch(MainLive), { teardown: stoppedBySignal })
