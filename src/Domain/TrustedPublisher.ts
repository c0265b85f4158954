/**
 * Trusted publishing (issue 28): a node's publisher names the CI workflows it trusts, and such a
 * workflow exchanges its OIDC identity token for a publish token that lives 15 minutes.
 */
import { Schema } from "effect"
import { field, NonEmptyText, optionalField, refusingUnknownFields, Timestamp, Uuid, withExamples } from "./Schemas.ts"

/** A repository's owner (a user, an organisation, or GitLab's group path) or name. */
const RepositoryPart = (what: string) =>
  NonEmptyText(255).check(
    Schema.isPattern(/^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)*$/, {
      message: `expected the repository's ${what}: letters, digits, '.', '_' or '-' (a group path may hold '/')`
    })
  )

/** Body of CreateTrustedPublisher. */
export const TrustedPublisherCreate = refusingUnknownFields(Schema.Struct({
  issuer: field(
    NonEmptyText(500),
    "The OIDC issuer, exactly as its tokens' `iss` claim says it and as TRUSTED_PUBLISHING_ISSUERS lists it, " +
      "such as https://token.actions.githubusercontent.com (GitHub Actions) or https://gitlab.com (GitLab CI/CD)"
  ),
  repository_owner: field(RepositoryPart("owner"), "The repository's owner (GitHub) or group path (GitLab); compared without regard to case"),
  repository_name: field(RepositoryPart("name"), "The repository's name; compared without regard to case"),
  workflow: field(
    NonEmptyText(255).check(Schema.isPattern(/^[^@\s]+$/, { message: "expected a file name or path without '@' or spaces" })),
    "The workflow file that may publish: its name under .github/workflows (GitHub, e.g. publish.yml) or its path " +
      "in the repository (GitLab, e.g. .gitlab-ci.yml). A path in the token matches when it is this or ends in '/' and this"
  ),
  environment: optionalField(
    NonEmptyText(255),
    "When given, only jobs running in this deployment environment may publish (compared without regard to case)"
  ),
  ref_pattern: optionalField(
    NonEmptyText(255),
    "When given, only runs for a matching git ref may publish: the whole ref, `*` matching any characters, such as refs/tags/v*"
  )
})).annotate({ identifier: "TrustedPublisherCreate" })
export type TrustedPublisherCreate = typeof TrustedPublisherCreate.Type

const trustedPublisherFields = {
  id: field(Uuid, "Identifier of the trusted publisher"),
  publisher_id: field(Schema.String, "The publisher whose node it may publish"),
  node_id: field(Schema.String, "The node it may publish (which may not exist yet: its first publish creates it)"),
  issuer: field(Schema.String, "The OIDC issuer of the workflow's identity tokens"),
  repository_owner: field(Schema.String, "The repository's owner or group path"),
  repository_name: field(Schema.String, "The repository's name"),
  workflow: field(Schema.String, "The workflow file that may publish"),
  environment: optionalField(Schema.String, "The deployment environment a publishing job must run in"),
  ref_pattern: optionalField(Schema.String, "The pattern a publishing run's git ref must match"),
  createdAt: field(Timestamp, "When the trusted publisher was registered")
}

export class TrustedPublisher extends Schema.Class<TrustedPublisher>("TrustedPublisher")(withExamples(trustedPublisherFields, {
  id: "0b6e3c52-8f4d-4a9e-9d71-2f5c8a1e6b34",
  publisher_id: "film-grade",
  node_id: "film-grade-nodes",
  issuer: "https://token.actions.githubusercontent.com",
  repository_owner: "film-grade",
  repository_name: "film-grade-nodes",
  workflow: "publish.yml",
  ref_pattern: "refs/tags/v*",
  createdAt: "2026-11-28T12:00:00.000Z"
})) {}

/** Body of ExchangeTrustedPublishingToken. */
export const TrustedPublishingExchange = refusingUnknownFields(Schema.Struct({
  token: field(
    NonEmptyText(16_384),
    "The CI job's OIDC identity token (a JWT) whose audience is this registry's (GetTrustedPublishingAudience)"
  )
})).annotate({ identifier: "TrustedPublishingExchange" })

/** One node a publish token may publish, and the trusted publisher that allowed it. */
export const PublishScope = Schema.Struct({
  publisher_id: field(Schema.String, "The node's publisher"),
  node_id: field(Schema.String, "The node"),
  trusted_publisher_id: field(Uuid, "The trusted publisher whose registration matched")
})

export class PublishToken extends Schema.Class<PublishToken>("PublishToken")({
  token: field(
    Schema.String,
    "A publish token: send it as `personal_access_token` of the publish call or of CreateUploadUrl. Shown in this answer only"
  ),
  expires_at: field(Timestamp, "When the token stops working: 15 minutes after the exchange"),
  nodes: field(Schema.Array(PublishScope), "The nodes the token may publish: those whose trusted publishers matched the identity token")
}) {}

export class TrustedPublishingAudience extends Schema.Class<TrustedPublishingAudience>("TrustedPublishingAudience")({
  audience: field(Schema.String, "The audience (`aud`) an identity token must be issued for (TRUSTED_PUBLISHING_AUDIENCE)"),
  issuers: field(Schema.Array(Schema.String), "The issuers whose identity tokens this registry accepts (TRUSTED_PUBLISHING_ISSUERS)")
}) {}
