import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import { Flag, optionalParam, Page, PageSize } from "../Catalog/Api.ts"
import { OptionalAuthentication } from "../Domain/Auth.ts"
import { NodeVersionStatus } from "../Domain/Node.ts"
import { documentedAs, refusingBody, Text } from "../Domain/Schemas.ts"
import {
  BulkNodeVersionsRequest,
  BulkNodeVersionsResponse,
  maxBulkVersions,
  maxVersionPageSize,
  NodeVersionPage
} from "../Domain/Versions.ts"

export const defaultVersionPageSize = 10

const statusReasonMeaning = "Only versions whose status_reason contains this text, ignoring case"

export const ListAllNodeVersionsParams = Schema.Struct({
  page: Page,
  pageSize: PageSize(maxVersionPageSize, defaultVersionPageSize, "Versions"),
  statuses: optionalParam(
    Schema.Array(NodeVersionStatus).check(Schema.isMaxLength(5), documentedAs({ maxItems: 5 })),
    "Only versions in these statuses (repeatable); default every status. Callers other than site admins see active versions only"
  ),
  nodeId: optionalParam(Text(200), "Only versions of this node"),
  status_reason: optionalParam(Text(200), statusReasonMeaning),
  include_status_reason: Flag("Include each version's status_reason")
})
export type ListAllNodeVersionsParams = typeof ListAllNodeVersionsParams.Type

/** The moderation queue: site admins see every status, other callers (anonymous ones too) active versions. */
export class VersionQueueApi extends HttpApiGroup.make("versionQueue")
  .add(
    HttpApiEndpoint.get("listAllNodeVersions", "/versions", {
      query: ListAllNodeVersionsParams,
      success: NodeVersionPage
    })
      .annotate(OpenApi.Summary, "List node versions across nodes: the moderation queue (paginated)")
      .annotate(
        OpenApi.Description,
        "Newest first (creation time, then id). Site admins see versions in every status, of every node; other callers, " +
          "anonymous ones included, see active versions of listed nodes only, whatever `statuses` asks. " +
          "`status_reason` is left out unless `include_status_reason=true`."
      )
  )
  .middleware(OptionalAuthentication)
  .annotate(OpenApi.Title, "Versions")
{}

export class BulkVersionsApi extends HttpApiGroup.make("bulkVersions")
  .add(
    HttpApiEndpoint.post("getBulkNodeVersions", "/bulk/nodes/versions", {
      payload: BulkNodeVersionsRequest,
      success: BulkNodeVersionsResponse
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Resolve many node versions in one request (lock files)")
      .annotate(
        OpenApi.Description,
        `At most ${maxBulkVersions} pairs (more is 400). Each pair gets its own result, in the request's order: ` +
          "`success` with the version as `GET /nodes/{nodeId}/versions/{version}` answers it; `not_found` for an unknown " +
          "or deleted node or version; `error` with `error_message` for a banned node, publisher or version. " +
          "Versions are named by their version string."
      )
  )
  .annotate(OpenApi.Title, "Versions")
{}
