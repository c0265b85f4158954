/**
 * The registry CLI: `npm run cli -- <command>`, or `registry <command>` once installed (bin/).
 * One run, one exit code: see Failure.ts for the table.
 */
import { NodeHttpClient, NodeRuntime, NodeServices } from "@effect/platform-node"
import { Effect, Exit, Layer } from "effect"
import { run } from "./Commands.ts"

NodeRuntime.runMain(
  run(process.argv).pipe(Effect.provide(Layer.merge(NodeServices.layer, NodeHttpClient.layerNodeHttp))),
  {
    disableErrorReporting: true,
    teardown: (exit, onExit) => onExit(Exit.isSuccess(exit) && typeof exit.value === "number" ? exit.value : 1)
  }
)
