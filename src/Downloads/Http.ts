import { HttpApiBuilder } from "effect/http-api"
import { Effect, Layer } from "effect"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import { BadRequest } from "../Domain/ApiErrors.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
import { DownloadsApi } from "./Api.ts"
import { Downloads } from "./Service.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({ ...sharedAnswers, RangeRefused: BadRequest })

/** This folder's group, under what every endpoint shares: its handlers are built against it alone. */
const api = registryApi(DownloadsApi)

const DownloadsLive = HttpApiBuilder.group(api, "downloads", (handlers) =>
  Effect.map(Downloads, (downloads) =>
    handlers.handle("getNodeDownloads", ({ params, query }) => answer(downloads.series(params.nodeId, query)))))

/** This folder's handlers, with the services they use (src/App.ts provides what every feature shares). */
export const DownloadsHttp = DownloadsLive.pipe(Layer.provide(Downloads.layer))
