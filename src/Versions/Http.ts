import { HttpApiBuilder } from "effect/http-api"
import { Effect, Layer } from "effect"
import { BulkVersionsApi, defaultVersionPageSize, VersionQueueApi } from "./Api.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
import { defaultPage } from "../Catalog/Api.ts"
import { Versions } from "./Service.ts"

/** This folder's groups, under what every endpoint shares: its handlers are built against these alone. */
const api = registryApi(VersionQueueApi, BulkVersionsApi)

const VersionQueueLive = HttpApiBuilder.group(api, "versionQueue", (handlers) =>
  Effect.map(Versions, (versions) =>
    handlers.handle("listAllNodeVersions", ({ query }) =>
      versions.queue({
        page: query.page ?? defaultPage,
        pageSize: query.pageSize ?? defaultVersionPageSize,
        statuses: query.statuses,
        nodeId: query.nodeId,
        statusReason: query.status_reason,
        includeStatusReason: query.include_status_reason ?? false
      }))))

const BulkVersionsLive = HttpApiBuilder.group(api, "bulkVersions", (handlers) =>
  Effect.map(Versions, (versions) =>
    handlers.handle("getBulkNodeVersions", ({ payload }) =>
      Effect.map(versions.resolve(payload.node_versions), (node_versions) => ({ node_versions })))))

/** This folder's handlers, with the services they use (src/App.ts provides what every feature shares). */
export const VersionsHttp = Layer.mergeAll(VersionQueueLive, BulkVersionsLive).pipe(Layer.provide(Versions.layer))
