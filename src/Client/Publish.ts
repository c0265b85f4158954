/**
 * The publish call's body as its users write it: the wire form (`version: "1.2.0"`, ranges as
 * text), checked with the contract's own `PublishRequest` schema before anything is sent. The
 * derived endpoint takes the decoded form (a version parsed into its sort key), which only the
 * server needs.
 */
import { Effect, Schema, SchemaIssue } from "effect"
import { BadRequest } from "../Domain/ApiErrors.ts"
import { PublishRequest as PublishRequestSchema } from "../Publishing/Api.ts"

/** The publish call's body as JSON carries it, without the token (the client adds it). */
export type PublishRequest = Omit<typeof PublishRequestSchema.Encoded, "personal_access_token">

/** The body the derived endpoint takes. */
type DecodedPublishRequest = typeof PublishRequestSchema.Type

/**
 * A body the service would refuse is refused here, as the service would: a BadRequest worded as
 * its 400 (`Invalid value for 'node_version.version': ...`), so one `catchTag("BadRequest")`
 * covers both.
 */
const refusal = (error: Schema.SchemaError): BadRequest => {
  const [issue] = SchemaIssue.makeFormatterStandardSchemaV1()(error.issue).issues
  if (issue === undefined) return new BadRequest({ message: "The request is not valid" })
  const path = issue.path ?? []
  const where = path.length > 0 ? path.map(String).join(".") : "request"
  return new BadRequest({ message: `Invalid value for '${where}': ${issue.message}` })
}

/** `request`, with the personal access token if there is one, decoded for the derived endpoint. */
export const decodePublishRequest = (
  request: PublishRequest,
  personalAccessToken: string | undefined
): Effect.Effect<DecodedPublishRequest, BadRequest> =>
  Schema.decodeUnknownEffect(PublishRequestSchema)(
    personalAccessToken === undefined ? request : { ...request, personal_access_token: personalAccessToken }
  ).pipe(Effect.mapError(refusal))
