import { HttpApiBuilder } from "effect/http-api"
import { Effect } from "effect"
import { SystemApi } from "./Api.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
import { databaseAnswers } from "../Db/Database.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import { DatabaseUnavailable } from "../Domain/ApiErrors.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({
  ...sharedAnswers,
  DatabaseDown: DatabaseUnavailable
})

/** This folder's groups, under what every endpoint shares: its handlers are built against these alone. */
const api = registryApi(SystemApi)

/** This folder's handlers (src/App.ts provides what they use, all of it shared). */
export const SystemHttp = HttpApiBuilder.group(api, "system", (handlers) =>
  handlers
    .handle("health", () => Effect.succeed({ status: "ok" as const }))
    .handle("ready", () => answer(databaseAnswers).pipe(Effect.as({ status: "ready" as const, database: "up" as const }))))
