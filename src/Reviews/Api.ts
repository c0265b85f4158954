import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import { NodeBanned, NotFound } from "../Domain/ApiErrors.ts"
import { Authentication } from "../Domain/Auth.ts"
import { Node } from "../Domain/Node.ts"
import { StarParam } from "../Domain/Review.ts"
import { field, PathParam } from "../Domain/Schemas.ts"

export class ReviewsApi extends HttpApiGroup.make("reviews")
  .add(
    HttpApiEndpoint.post("postNodeReview", "/nodes/:nodeId/reviews", {
      params: Schema.Struct({ nodeId: field(PathParam, "Identifier of the node") }),
      query: Schema.Struct({ star: StarParam }),
      success: Node,
      error: [NotFound, NodeBanned]
    })
      .annotate(OpenApi.Summary, "Rate a node with 1 to 5 stars")
      .annotate(
        OpenApi.Description,
        "One review per user and node: rating again replaces the caller's earlier star. The node's rating is the mean of its current stars; the answer is the node with it. No body. A deleted node is 404, a banned one (or one of a banned publisher) 403 node_banned."
      )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Reviews")
{}
