import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.ts"
import { NodeRepo } from "../Catalog/Repo.ts"
import { ServiceUnavailable } from "../Errors.ts"

export const SystemLive = HttpApiBuilder.group(Api, "system", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* NodeRepo
    return handlers
      .handle("health", () => Effect.succeed({ status: "ok" as const }))
      .handle("ready", () =>
        Effect.flatMap(repo.ping, (up) =>
          up
            ? Effect.succeed({ status: "ready" as const, database: "up" as const })
            : Effect.fail(new ServiceUnavailable({ message: "The database does not answer" }))))
  }))
