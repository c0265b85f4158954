import { HttpApiBuilder } from "effect/http-api"
import { Effect } from "effect"
import { Api } from "../Api.ts"
import { defaultPage } from "../Catalog/Api.ts"
import { defaultVersionPageSize } from "./Api.ts"
import { Versions } from "./Service.ts"

export const VersionQueueLive = HttpApiBuilder.group(Api, "versionQueue", (handlers) =>
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

export const BulkVersionsLive = HttpApiBuilder.group(Api, "bulkVersions", (handlers) =>
  Effect.map(Versions, (versions) =>
    handlers.handle("getBulkNodeVersions", ({ payload }) =>
      Effect.map(versions.resolve(payload.node_versions), (node_versions) => ({ node_versions })))))
