import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { ParseResult, Schema } from "effect"
import { BadRequest, NodeBanned, NoInstallableVersion, NotFound, Forbidden } from "../Domain/ApiErrors.ts"
import { Authentication, OptionalAuthentication } from "../Domain/Auth.ts"
import { Node, NodeList, NodeVersion, NodeVersionStatus, type SortKey, sortColumns } from "../Domain/Node.ts"
import { DecimalIntegerString, field, IsoDateTimeFromString, PathParam, Text } from "../Domain/Schemas.ts"
import { HostVersion } from "../Domain/Semver.ts"

/** Served page sizes: larger requests are clamped, not refused (CONTRACT.md). */
export const maxLimit = 500
export const defaultLimit = 10
export const defaultPage = 1
/** The statuses `GET /nodes/{nodeId}/versions` lists when it is not told. */
export const defaultStatuses = ["NodeVersionStatusActive"] as const

// The parameters with a default are optional on the contract, and the handlers apply the default
// (`?? defaultPage`, ...): a default applied while decoding would make the parameter required in
// the derived client's (decoded) request type. The document states each default in `jsonSchema`.

/** A positive integer in a query string; `doc` is what /openapi.json says of it. */
export const PositiveInt = (max: number, doc: { description: string; default: number }) =>
  DecimalIntegerString.annotations({ jsonSchema: { type: "integer", minimum: 1, ...doc } }).pipe(
    Schema.compose(Schema.NumberFromString),
    Schema.int(),
    Schema.between(1, max)
  )

/** `page`: from 1, `defaultPage` when absent. */
export const Page = Schema.optional(
  PositiveInt(1_000_000_000, { description: "Page number, from 1", default: defaultPage })
).annotations({ description: "Page number, from 1" })

/** `limit`: `defaultLimit` when absent, at most `maxLimit` served (larger values are clamped). */
const Limit = Schema.optional(
  PositiveInt(Number.MAX_SAFE_INTEGER, {
    description: `Nodes per page (default ${defaultLimit}); values above ${maxLimit} are served as ${maxLimit}`,
    default: defaultLimit
  }).pipe(
    Schema.transform(Schema.Int, { strict: true, decode: (n) => Math.min(n, maxLimit), encode: (n) => n })
  )
)

/**
 * A page size: `fallback` when absent (the handler applies it, as for `limit`), at most `max`
 * served: larger values are clamped, not refused (CONTRACT.md's rule for `limit`).
 */
export const PageSize = (max: number, fallback: number, what: string) =>
  Schema.optional(
    PositiveInt(Number.MAX_SAFE_INTEGER, {
      description: `${what} per page (default ${fallback}); values above ${max} are served as ${max}`,
      default: fallback
    }).pipe(Schema.transform(Schema.Int, { strict: true, decode: (n) => Math.min(n, max), encode: (n) => n }))
  )

/** `true`/`1` or `false`/`0`, `byDefault` when absent; a boolean to the document (`1` and `0` are leniency). */
export const Flag = (description: string, byDefault = false) =>
  Schema.optional(
    Schema.Literal("true", "false", "1", "0").annotations({
      jsonSchema: { type: "boolean", default: byDefault, description: `${description} (true or false)` }
    }).pipe(
      Schema.transform(Schema.Boolean, {
        strict: true,
        decode: (s): boolean => s === "true" || s === "1",
        encode: (b) => (b ? "true" : "false")
      })
    )
  )

const ShortString = (description: string) => Text(200).annotations({ description })

const sortPattern = new RegExp(`^(${sortColumns.join("|")})(;(asc|desc))?$`)

/** `column` or `column;asc` or `column;desc`, as a sort key. */
export const SortParam = Schema.transformOrFail(
  Schema.String,
  Schema.Struct({ column: Schema.Literal(...sortColumns), desc: Schema.Boolean }),
  {
    strict: true,
    decode: (s, _, ast) => {
      if (!sortPattern.test(s)) {
        return ParseResult.fail(
          new ParseResult.Type(ast, s, `expected one of ${sortColumns.join(", ")}, optionally followed by ;asc or ;desc`)
        )
      }
      const [column, direction] = s.split(";")
      return ParseResult.succeed({ column: column as SortKey["column"], desc: direction === "desc" })
    },
    encode: (key) => ParseResult.succeed(key.desc ? `${key.column};desc` : key.column)
  }
)

const PublisherIdParams = Schema.Struct({ publisherId: field(PathParam, "Identifier of the publisher") })

const hostVersionMeaning = "The host application's version: only nodes with a version admitting it; latest_version is the newest such"

export const ListNodesParams = Schema.Struct({
  page: Page,
  limit: Limit,
  supported_os: Schema.optional(ShortString("Only nodes supporting this operating system (nodes declaring none match)")),
  supported_accelerator: Schema.optional(ShortString("Only nodes supporting this accelerator (nodes declaring none match)")),
  timestamp: Schema.optional(IsoDateTimeFromString.annotations({
    description: "Only nodes created or updated (a new version counts) after this ISO 8601 time"
  })),
  latest: Flag("Answer from the database, bypassing the cache"),
  // no order asked when absent; `jsonSchema` replaces the maxItems filter's own, so it says it again
  sort: Schema.optional(
    Schema.Array(SortParam).pipe(Schema.maxItems(8)).annotations({
      description: `Ordering columns (${sortColumns.join(", ")}), ascending unless suffixed ;desc; repeatable`,
      jsonSchema: { maxItems: 8, default: [] }
    })
  ),
  node_id: Schema.optional(Schema.Array(ShortString("A node id")).pipe(Schema.maxItems(maxLimit)).annotations({
    description: "Only these nodes; repeatable"
  })),
  // a filter's own description does not reach the document; its `jsonSchema` does
  host_version: Schema.optional(HostVersion.annotations({ description: hostVersionMeaning, jsonSchema: { description: hostVersionMeaning } })),
  form_factor: Schema.optional(ShortString("The platform asking (desktop-win, desktop-mac, git-linux, ...); recorded, not a filter"))
})
export type ListNodesParams = typeof ListNodesParams.Type

const searchMeaning =
  "What to look for (websearch syntax: words, \"phrases\", or, -word; at least one letter or digit); the last word also matches as a prefix"

/**
 * Full text to look for. Text with no letter or digit in it (operators, quotes and punctuation
 * only: `-`, a run of hyphens, `"""`) has nothing to look for, and is a 400 naming `search`
 * rather than an empty page (issue 12 asks its 33-hyphen reproduction to be answered 4xx); a
 * blank one is no criterion.
 */
const SearchText = Text(200).pipe(
  Schema.filter((s) => s.trim() === "" || /[\p{L}\p{N}]/u.test(s), { message: () => "must contain a letter or digit to look for" })
)

// Each criterion narrows the result (they combine with AND); a blank one is no criterion, and
// none at all lists every listed node in GET /nodes's order.
export const SearchNodesParams = Schema.Struct({
  // a filter's own description does not reach the document; its `jsonSchema` does
  search: Schema.optional(SearchText.annotations({ description: searchMeaning, jsonSchema: { description: searchMeaning } })),
  host_node_search: Schema.optional(Text(200).annotations({
    description: "Nodes providing a host-node whose name contains this (case-insensitive); exact names first, then prefixes"
  })),
  repository_url_search: Schema.optional(Text(2000).annotations({
    description: "Nodes whose repository URL contains this (case-insensitive; scheme, user, .git and trailing slashes ignored)"
  })),
  include_banned: Flag("Add banned nodes and nodes of banned publishers (site admins only)"),
  page: Page,
  limit: Limit,
  supported_os: ListNodesParams.fields.supported_os,
  supported_accelerator: ListNodesParams.fields.supported_accelerator
})
export type SearchNodesParams = typeof SearchNodesParams.Type

const includeBanned = Flag("Add banned nodes (members and site admins only)")

export class CatalogApi extends HttpApiGroup.make("catalog")
  .add(
    HttpApiEndpoint.get("listAllNodes", "/nodes")
      .setUrlParams(ListNodesParams)
      .addSuccess(NodeList)
      .addError(BadRequest)
      .annotate(OpenApi.Summary, "List all nodes (paginated)")
      .annotate(OpenApi.Description, "Nodes of every publisher, banned and deleted ones excluded. Answers carry an ETag; If-None-Match is honoured with 304.")
  )
  .add(
    HttpApiEndpoint.get("searchNodes", "/nodes/search")
      .setUrlParams(SearchNodesParams)
      .addSuccess(NodeList)
      .addError(BadRequest)
      .addError(Forbidden)
      .middleware(OptionalAuthentication)
      .annotate(OpenApi.Summary, "Search nodes (paginated)")
      .annotate(
        OpenApi.Description,
        "`search` is full-text over id, name, description, author, tags and host-node names, best match first; " +
          "`host_node_search` and `repository_url_search` match host-node names and repository URLs by substring. " +
          "Criteria combine with AND; then search_ranking, downloads, id. No criterion lists every listed node in GET /nodes's order. " +
          "`include_banned` is for site admins (403 otherwise)."
      )
  )
  .add(
    HttpApiEndpoint.get("getNodeVersion", "/nodes/:nodeId/versions/:versionId")
      .setPath(Schema.Struct({ nodeId: field(PathParam, "Identifier of the node"), versionId: field(PathParam, "The version string (such as 1.2.0) or the version's id") }))
      .addSuccess(NodeVersion)
      .addError(BadRequest)
      .addError(NotFound)
      .addError(NodeBanned)
      .annotate(OpenApi.Summary, "Get a node version")
      .annotate(OpenApi.Description, "`versionId` is the version string (1.2.0) or the version's id.")
  )
  .add(
    HttpApiEndpoint.get("getNode", "/nodes/:nodeId")
      .setPath(Schema.Struct({ nodeId: field(PathParam, "Identifier of the node") }))
      .setUrlParams(Schema.Struct({ include_translations: Flag("Include the node's translations", true) }))
      .addSuccess(Node)
      .addError(BadRequest)
      .addError(NotFound)
      .addError(NodeBanned)
      .annotate(OpenApi.Summary, "Get a node with its latest version")
      .annotate(OpenApi.Description, "A deleted node is 404, a banned one (or one of a banned publisher) 403 node_banned. Answers carry an ETag; If-None-Match is honoured with 304.")
  )
  .add(
    HttpApiEndpoint.get("listNodeVersions", "/nodes/:nodeId/versions")
      .setPath(Schema.Struct({ nodeId: field(PathParam, "Identifier of the node") }))
      .setUrlParams(Schema.Struct({
        // `defaultStatuses` when absent
        statuses: Schema.optional(
          Schema.Array(NodeVersionStatus).pipe(Schema.maxItems(5)).annotations({
            description: "Only versions in these statuses (repeatable); default NodeVersionStatusActive",
            jsonSchema: { maxItems: 5, default: defaultStatuses }
          })
        )
      }))
      .addSuccess(Schema.Array(NodeVersion))
      .addError(BadRequest)
      .addError(NotFound)
      .addError(NodeBanned)
      .annotate(OpenApi.Summary, "List a node's versions, newest semantic version first")
  )
  .add(
    HttpApiEndpoint.get("installNode", "/nodes/:nodeId/install")
      .setPath(Schema.Struct({ nodeId: field(PathParam, "Identifier of the node") }))
      .setUrlParams(Schema.Struct({
        version: Schema.optional(Text(100).annotations({ description: "The version to install; default the newest installable" }))
      }))
      .addSuccess(NodeVersion)
      .addError(BadRequest)
      .addError(NotFound)
      .addError(NodeBanned)
      .addError(NoInstallableVersion)
      .annotate(OpenApi.Summary, "Install a node: the version to install, with its downloadUrl; counts one download per client address, node and version an hour")
      .annotate(
        OpenApi.Description,
        "Installable versions are active ones with an archive (deprecated ones too). None: 404. " +
          "When archives are kept in a bucket (STORAGE=s3), downloadUrl is the bucket's own: a URL presigned for GET that " +
          "lives 15 minutes, or under the public base (ARCHIVE_PUBLIC_BASE_URL) when one is set, so the download does not " +
          "pass through the service. Listings name the public base, or else the service's /archives URL, which redirects there."
      )
  )
  .annotate(OpenApi.Title, "Catalogue")
{}

export class PublisherNodesApi extends HttpApiGroup.make("publisherNodes")
  .add(
    HttpApiEndpoint.get("listNodesForPublisher", "/publishers/:publisherId/nodes")
      .setPath(PublisherIdParams)
      .setUrlParams(Schema.Struct({ include_banned: includeBanned }))
      .addSuccess(Schema.Array(Node))
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(OpenApi.Identifier, "ListNodesForPublisher")
      .annotate(OpenApi.Summary, "List all nodes of a publisher")
  )
  .add(
    HttpApiEndpoint.get("listNodesForPublisherV2", "/publishers/:publisherId/nodes/v2")
      .setPath(PublisherIdParams)
      .setUrlParams(Schema.Struct({ page: Page, limit: Limit, include_banned: includeBanned }))
      .addSuccess(NodeList)
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "List nodes of a publisher, paginated")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Publisher nodes")
{}
