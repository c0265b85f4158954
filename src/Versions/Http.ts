import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.ts"
import { defaultPage } from "../Catalog/Api.ts"
import { defaultVersionPageSize } from "./Api.ts"
import { Versions } from "./Service.ts"

export const VersionQueueLive = HttpApiBuilder.group(Api, "versionQueue", (handlers) =>
  Effect.map(Versions, (versions) =>
    handlers.handle("listAllNodeVersions", ({ urlParams }) =>
      versions.queue({
        page: urlParams.page ?? defaultPage,
        pageSize: urlParams.pageSize ?? defaultVersionPageSize,
        statuses: urlParams.statuses,
        nodeId: urlParams.nodeId,
        statusReason: urlParams.status_reason,
        includeStatusReason: urlParams.include_status_reason ?? false
      }))))

export const BulkVersionsLive = HttpApiBuilder.group(Api, "bulkVersions", (handlers) =>
  Effect.map(Versions, (versions) =>
    handlers.handle("getBulkNodeVersions", ({ payload }) =>
      Effect.map(versions.resolve(payload.node_versions), (node_versions) => ({ node_versions })))))
