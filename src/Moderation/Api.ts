/**
 * Moderation: the scanner's rules (public), and a version's review (its scan and pipeline) for
 * the members of its publisher and site admins.
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import { Conflict, Forbidden, NotFound } from "../Domain/ApiErrors.ts"
import { Authentication } from "../Domain/Auth.ts"
import { ReviewMessage, ReviewMessageCreate, ScanRules, VersionReview } from "../Domain/Moderation.ts"
import { field, PathParam, refusingBody } from "../Domain/Schemas.ts"

const VersionPath = Schema.Struct({
  publisherId: field(PathParam, "Identifier of the publisher"),
  nodeId: field(PathParam, "Identifier of the node"),
  versionId: field(PathParam, "The version string, such as 1.2.0, or the version's id")
})

export class ScanRulesApi extends HttpApiGroup.make("scanRules")
  .add(
    HttpApiEndpoint.get("listScanRules", "/moderation/rules", { success: ScanRules })
      .annotate(OpenApi.Summary, "The rules every uploaded archive is scanned with")
      .annotate(
        OpenApi.Description,
        "Public. Each rule's id, severity and rationale, and the rule set's version. A high finding holds a version " +
          "(Flagged) for a review; a medium one lets it go Active, shown to its publisher; a low one is recorded."
      )
  )
  .annotate(OpenApi.Title, "Moderation")
{}

export class VersionReviewApi extends HttpApiGroup.make("versionReview")
  .add(
    HttpApiEndpoint.get("getVersionReview", "/publishers/:publisherId/nodes/:nodeId/versions/:versionId/review", {
      params: VersionPath,
      success: VersionReview,
      error: [Forbidden, NotFound]
    })
      .annotate(OpenApi.Summary, "Why a version has its status: its archive's scan and its pipeline")
      .annotate(
        OpenApi.Description,
        "Members of the version's publisher (any role) and site admins; the public sees only the status. The findings " +
          "of the latest scan (rule, severity, file, line, excerpt) and the stages the version passed: uploaded, checked, " +
          "scanned, reviewed, listed; the thread with the site admins, and when a review was asked for."
      )
  )
  .add(
    HttpApiEndpoint.post("postVersionReviewMessage", "/publishers/:publisherId/nodes/:nodeId/versions/:versionId/review/messages", {
      params: VersionPath,
      payload: ReviewMessageCreate,
      success: ReviewMessage.pipe(HttpApiSchema.status(201)),
      error: [Forbidden, NotFound, Conflict]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Write to the site admins about a held version")
      .annotate(
        OpenApi.Description,
        "Members of the version's publisher and site admins, while the version is held (NodeVersionStatusFlagged) or " +
          "rejected (NodeVersionStatusBanned); 409 otherwise."
      )
  )
  .add(
    HttpApiEndpoint.post("requestVersionReview", "/publishers/:publisherId/nodes/:nodeId/versions/:versionId/review/request", {
      params: VersionPath,
      success: VersionReview,
      error: [Forbidden, NotFound, Conflict]
    })
      .annotate(OpenApi.Summary, "Ask the site admins to review a held version")
      .annotate(
        OpenApi.Description,
        "Members of the version's publisher, for a held version (NodeVersionStatusFlagged), once per uploaded archive: " +
          "409 when this archive's review was asked for already, or the version is not held. Answers the review."
      )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Moderation")
{}
