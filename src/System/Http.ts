import { HttpApiBuilder } from "effect/http-api"
import { Effect } from "effect"
import { Api } from "../Api.ts"
import { databaseAnswers } from "../Db/Database.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import { DatabaseUnavailable } from "../Domain/ApiErrors.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({
  ...sharedAnswers,
  DatabaseDown: DatabaseUnavailable
})

export const SystemLive = HttpApiBuilder.group(Api, "system", (handlers) =>
  handlers
    .handle("health", () => Effect.succeed({ status: "ok" as const }))
    .handle("ready", () => answer(databaseAnswers).pipe(Effect.as({ status: "ready" as const, database: "up" as const }))))
