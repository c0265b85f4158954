import { HttpApiBuilder } from "effect/http-api"
import { Effect, Layer } from "effect"
import { AppConfig } from "../Config.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import { BadRequest, CursorExpired, ServiceUnavailable } from "../Domain/ApiErrors.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
import { CatalogueSyncApi, defaultChanges } from "./Api.ts"
import { ChangeFeed } from "./Feed.ts"
import { Snapshots } from "./Snapshot.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({
  ...sharedAnswers,
  CursorNeverIssued: BadRequest,
  CursorTooOld: CursorExpired,
  SnapshotNotReady: ServiceUnavailable
})

const api = registryApi(CatalogueSyncApi)

const CatalogueSyncLive = HttpApiBuilder.group(api, "catalogueSync", (handlers) =>
  Effect.gen(function*() {
    const feed = yield* ChangeFeed
    const snapshots = yield* Snapshots
    const { changeFeedRetentionDays } = yield* AppConfig
    return handlers
      .handle("getCatalogueSnapshot", () => answer(snapshots.newest()))
      .handle("listCatalogueChanges", ({ query }) =>
        answer(feed.after(query.cursor, query.limit ?? defaultChanges, changeFeedRetentionDays)))
  }))

/** This folder's handlers, with the services they use (src/App.ts provides what every feature shares). */
export const SyncHttp = CatalogueSyncLive.pipe(Layer.provide([ChangeFeed.layer, Snapshots.layer]))
