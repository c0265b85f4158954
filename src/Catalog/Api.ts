import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Schema, SchemaTransformation } from "effect"
import { HostVersionUnsupported, NodeBanned, NoInstallableVersion, NotFound, Forbidden, PayloadTooLarge } from "../Domain/ApiErrors.ts"
import { Authentication, OptionalAuthentication } from "../Domain/Auth.ts"
import { Node, NodeList, NodeVersion, NodeVersionStatus, type SortKey, sortColumns } from "../Domain/Node.ts"
import {
  DecimalIntegerString,
  documentedAs,
  field,
  IsoDateTimeFromString,
  optionalField,
  PathParam,
  refusingBody,
  refusingUnknownFields,
  Text
} from "../Domain/Schemas.ts"
import { HostVersion, VersionRangeFromString } from "../Domain/Semver.ts"
import { Revalidated } from "../Domain/HttpHints.ts"

/** Served page sizes: larger requests are clamped, not refused (CONTRACT.md). */
export const maxLimit = 500
export const defaultLimit = 10
export const defaultPage = 1
/** The statuses `GET /nodes/{nodeId}/versions` lists when it is not told. */
export const defaultStatuses = ["NodeVersionStatusActive"] as const

// The parameters with a default are optional on the contract, and the handlers apply the default
// (`?? defaultPage`, ...): a default applied while decoding would make the parameter required in
// the derived client's (decoded) request type. The document states each default (`documentedAs`).

/** A positive integer in a query string; `doc` is what /openapi.json says of it. */
export const PositiveInt = (max: number, doc: { description: string; default: number }) =>
  DecimalIntegerString.check(documentedAs({ type: "integer", minimum: 1, ...doc })).pipe(
    Schema.decodeTo(Schema.Number, SchemaTransformation.numberFromString),
    Schema.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: max }))
  )

/** A page size read at most `max` (larger values are clamped, not refused): `Schema.decodeTo(Schema.Int, clampedTo(max))`. */
export const clampedTo = (max: number) =>
  SchemaTransformation.transform<number, number>({ decode: (n) => Math.min(n, max), encode: (n) => n })

/** An optional query parameter with what it means, for /openapi.json. */
export const optionalParam = <S extends Schema.Top>(schema: S, description: string) =>
  Schema.optional(schema).annotateKey({ description })

/** `page`: from 1, `defaultPage` when absent. */
export const Page = optionalParam(
  PositiveInt(1_000_000_000, { description: "Page number, from 1", default: defaultPage }),
  "Page number, from 1"
)

/** `limit`: `defaultLimit` when absent, at most `maxLimit` served (larger values are clamped). */
const Limit = Schema.optional(
  PositiveInt(Number.MAX_SAFE_INTEGER, {
    description: `Nodes per page (default ${defaultLimit}); values above ${maxLimit} are served as ${maxLimit}`,
    default: defaultLimit
  }).pipe(Schema.decodeTo(Schema.Int, clampedTo(maxLimit)))
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
    }).pipe(Schema.decodeTo(Schema.Int, clampedTo(max)))
  )

/** `true`/`1` or `false`/`0`, `byDefault` when absent; a boolean to the document (`1` and `0` are leniency). */
export const Flag = (description: string, byDefault = false) =>
  Schema.optional(
    Schema.Literals(["true", "false", "1", "0"]).check(
      documentedAs({ type: "boolean", default: byDefault, description: `${description} (true or false)` })
    ).pipe(
      Schema.decodeTo(
        Schema.Boolean,
        SchemaTransformation.transform({
          decode: (s): boolean => s === "true" || s === "1",
          encode: (b): "true" | "false" => (b ? "true" : "false")
        })
      )
    )
  )

const ShortString = (description: string) => optionalParam(Text(200), description)

const sortPattern = new RegExp(`^(${sortColumns.join("|")})(;(asc|desc))?$`)

/** `column` or `column;asc` or `column;desc`, as a sort key. */
export const SortParam = Schema.String.pipe(
  Schema.check(Schema.makeFilter((s: string) => sortPattern.test(s), {
    message: `expected one of ${sortColumns.join(", ")}, optionally followed by ;asc or ;desc`
  })),
  Schema.decodeTo(
    Schema.Struct({ column: Schema.Literals(sortColumns), desc: Schema.Boolean }),
    SchemaTransformation.transform({
      decode: (s: string) => {
        const [column, direction] = s.split(";")
        return { column: column as SortKey["column"], desc: direction === "desc" }
      },
      encode: (key: SortKey) => (key.desc ? `${key.column};desc` : key.column)
    })
  )
)

const PublisherIdParams = { publisherId: field(PathParam, "Identifier of the publisher") }

const hostVersionMeaning =
  "The host application's version: nodes with an active version that is not yanked admitting it (latest_version is the newest such), and nodes with no such version; nodes whose active versions that are not yanked all exclude it are left out"

export const ListNodesParams = Schema.Struct({
  page: Page,
  limit: Limit,
  supported_os: ShortString("Only nodes supporting this operating system (nodes declaring none match)"),
  supported_accelerator: ShortString("Only nodes supporting this accelerator (nodes declaring none match)"),
  timestamp: optionalParam(
    IsoDateTimeFromString,
    "Only nodes created or updated (a new version counts) after this ISO 8601 time"
  ),
  latest: Flag("Answer from the database, bypassing the cache"),
  // no order asked when absent; the document's fragment says the maximum again, beside the default
  sort: optionalParam(
    Schema.Array(SortParam).check(Schema.isMaxLength(8), documentedAs({ maxItems: 8, default: [] })),
    `Ordering columns (${sortColumns.join(", ")}), ascending unless suffixed ;desc; repeatable`
  ),
  node_id: optionalParam(
    Schema.Array(Text(200).annotate({ description: "A node id" })).pipe(Schema.check(Schema.isMaxLength(maxLimit))),
    "Only these nodes; repeatable"
  ),
  // a filter's own description does not reach the document; its fragment does
  host_version: optionalParam(HostVersion.check(documentedAs({ description: hostVersionMeaning })), hostVersionMeaning),
  form_factor: ShortString("The platform asking (desktop-win, desktop-mac, git-linux, ...); recorded, not a filter"),
  include_banned: Flag("Add banned nodes and nodes of banned publishers (site admins only); such pages are never cached")
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
  Schema.check(Schema.makeFilter((s: string) => s.trim() === "" || /[\p{L}\p{N}]/u.test(s), {
    message: "must contain a letter or digit to look for"
  }))
)

// Each criterion narrows the result (they combine with AND); a blank one is no criterion, and
// none at all lists every listed node in GET /nodes's order.
export const SearchNodesParams = Schema.Struct({
  // a filter's own description does not reach the document; its fragment does
  search: optionalParam(SearchText.check(documentedAs({ description: searchMeaning })), searchMeaning),
  host_node_search: optionalParam(
    Text(200),
    "Nodes providing a host-node whose name contains this (case-insensitive); exact names first, then prefixes"
  ),
  repository_url_search: optionalParam(
    Text(2000),
    "Nodes whose repository URL contains this (case-insensitive; scheme, user, .git and trailing slashes ignored)"
  ),
  include_banned: Flag("Add banned nodes and nodes of banned publishers (site admins only)"),
  page: Page,
  limit: Limit,
  supported_os: ListNodesParams.fields.supported_os,
  supported_accelerator: ListNodesParams.fields.supported_accelerator
})
export type SearchNodesParams = typeof SearchNodesParams.Type

const includeBanned = Flag("Add banned nodes (members and site admins only)")

const installHostMeaning = "The caller's host application version: only versions whose supported_host_version admits it " +
  "(as GET /nodes's host_version filter reads it); unknown or empty: no filter"

export const InstallNodeParams = Schema.Struct({
  version: optionalParam(Text(100), "The exact version to install (a yanked one too); default the newest installable"),
  version_range: optionalParam(
    VersionRangeFromString,
    "The newest installable version that is not yanked and satisfies this range: node-semver (^1.2, ~1.2.3, >=1 <2, 1.x) " +
      "or PEP 440 (>=1.2,<2, ~=1.2, ==1.2.*); not with version"
  ),
  host_version: optionalParam(HostVersion.check(documentedAs({ description: installHostMeaning })), installHostMeaning)
})
export type InstallNodeParams = typeof InstallNodeParams.Type

/** The most items a bulk resolve takes; more is 413 naming `nodes`. */
export const maxResolveItems = 500

const ResolveItem = refusingUnknownFields(Schema.Struct({
  id: field(Text(200), "The node's id"),
  // parsed by the handler, after the item count: a body past the limit is 413 before any range is read
  range: optionalField(
    Text(200),
    "A range of the node's versions: node-semver (^1.2, ~1.2.3, >=1 <2, 1.x) or PEP 440 (>=1.2,<2, ~=1.2, ==1.2.*); absent: any"
  )
})).annotate({ identifier: "ResolveItem" })

export const ResolveNodeVersionsRequest = refusingUnknownFields(Schema.Struct({
  host_version: optionalField(HostVersion, installHostMeaning),
  nodes: field(Schema.Array(ResolveItem), `The nodes to resolve, at most ${maxResolveItems} (more is 413); answered in this order`)
})).annotate({ identifier: "ResolveNodeVersionsRequest" })
export type ResolveNodeVersionsRequest = typeof ResolveNodeVersionsRequest.Type

export const ResolveRefusalCode = Schema.Literals(["not_found", "node_banned", "no_installable_version", "host_version_unsupported"])
  .annotate({ identifier: "ResolveRefusalCode" })

export const ResolvedItem = Schema.Struct({
  id: field(Schema.String, "The node's id, as asked"),
  range: optionalField(Schema.String, "The range, as asked"),
  version: optionalField(Schema.String, "The chosen version, when one satisfies the range and the host"),
  downloadUrl: optionalField(Schema.String, "Where the chosen version's archive is downloaded (not counted as an install)"),
  error: optionalField(ResolveRefusalCode, "Why no version was chosen: the code GET /nodes/{nodeId}/install would answer"),
  reason: optionalField(Schema.String, "Which constraint excluded what, when no version was chosen")
}).annotate({ identifier: "ResolvedItem" })
export type ResolvedItem = typeof ResolvedItem.Type

/** The most versions a conflict check takes; more is 413 naming `versions`. */
export const maxConflictVersions = 500

const NodeVersionRef = Schema.Struct({
  node_id: field(Text(200), "The node's id"),
  version: field(Text(100), "The version string")
}).annotate({ identifier: "NodeVersionRef" })

const markerVariableNames = [
  "python_version", "python_full_version", "os_name", "sys_platform", "platform_release", "platform_system",
  "platform_version", "platform_machine", "platform_python_implementation", "implementation_name", "implementation_version", "extra"
] as const

export const MarkerEnvironment = refusingUnknownFields(Schema.Struct(
  Object.fromEntries(markerVariableNames.map((name) => [name, optionalField(Text(200), `The PEP 508 marker variable ${name}`)])) as {
    readonly [K in typeof markerVariableNames[number]]: ReturnType<typeof optionalField<ReturnType<typeof Text>>>
  }
)).annotate({ identifier: "MarkerEnvironment" })

export const CheckDependencyConflictsRequest = refusingUnknownFields(Schema.Struct({
  versions: field(Schema.Array(NodeVersionRef), `The node versions to check together, at most ${maxConflictVersions} (more is 413)`),
  environment: optionalField(
    MarkerEnvironment,
    "The caller's PEP 508 marker variables: requirements whose markers are false in it are left out; without it (or where it lacks a marker's variable) guarded requirements count, and markers_assumed says so"
  )
})).annotate({ identifier: "CheckDependencyConflictsRequest" })
export type CheckDependencyConflictsRequest = typeof CheckDependencyConflictsRequest.Type

const AskedRequirement = Schema.Struct({
  node_id: field(Schema.String, "The node whose version asked"),
  version: field(Schema.String, "The version that asked"),
  requirement: field(Schema.String, "The requirement as published"),
  specifier: field(Schema.String, "Its PEP 440 version specifiers, comma-joined; empty for any version"),
  marker: optionalField(Schema.String, "Its environment marker, when it has one"),
  marker_assumed: field(Schema.Boolean, "True when its marker was not evaluated (no environment, or one lacking its variables) and it was counted as applicable")
}).annotate({ identifier: "AskedRequirement" })

export const CheckDependencyConflictsResponse = Schema.Struct({
  conflicts: field(
    Schema.Array(Schema.Struct({
      package: field(Schema.String, "The package, in PEP 503's normal form"),
      requirements: field(Schema.Array(AskedRequirement), "Requirements whose specifier sets no version satisfies together (a smallest such set)")
    }).annotate({ identifier: "DependencyConflict" })),
    "One entry per package whose applicable requirements cannot all be satisfied, by package name"
  ),
  unparseable: field(
    Schema.Array(Schema.Struct({
      node_id: field(Schema.String, "The node"),
      version: field(Schema.String, "The version"),
      requirement: field(Schema.String, "The dependency as published"),
      error: field(Schema.String, "Why it is not a PEP 508 requirement")
    }).annotate({ identifier: "UnparseableDependency" })),
    "Dependencies that are not PEP 508 requirements: left out of the check"
  ),
  not_found: field(Schema.Array(NodeVersionRef), "Versions asked for that are unknown, deleted, or of a node that is not listed"),
  markers_assumed: field(Schema.Boolean, "True when some marker-guarded requirement was counted without its marker being evaluated")
}).annotate({ identifier: "CheckDependencyConflictsResponse" })
export type CheckDependencyConflictsResponse = typeof CheckDependencyConflictsResponse.Type

export const ResolveNodeVersionsResponse = Schema.Struct({
  nodes: field(Schema.Array(ResolvedItem), "One answer per item, in the request's order")
}).annotate({ identifier: "ResolveNodeVersionsResponse" })

export class CatalogApi extends HttpApiGroup.make("catalog")
  .add(
    HttpApiEndpoint.get("listAllNodes", "/nodes", {
      query: ListNodesParams,
      success: NodeList,
      error: [Forbidden]
    })
      // a token only matters to include_banned; without one the listing is anyone's
      .middleware(OptionalAuthentication)
      .annotate(OpenApi.Summary, "List all nodes (paginated)")
      .annotate(
        OpenApi.Description,
        "Nodes of every publisher, banned and deleted ones excluded. Answers carry an ETag; If-None-Match is honoured with 304. " +
          "`include_banned` adds banned nodes and nodes of banned publishers, in the page and its total; it is for site admins (403 otherwise)."
      )
  )
  .add(
    HttpApiEndpoint.get("searchNodes", "/nodes/search", {
      query: SearchNodesParams,
      success: NodeList,
      error: [Forbidden]
    })
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
    HttpApiEndpoint.get("getNodeVersion", "/nodes/:nodeId/versions/:versionId", {
      params: Schema.Struct({ nodeId: field(PathParam, "Identifier of the node"), versionId: field(PathParam, "The version string (such as 1.2.0) or the version's id") }),
      success: NodeVersion,
      error: [NotFound, NodeBanned]
    })
      .annotate(OpenApi.Summary, "Get a node version")
      .annotate(OpenApi.Description, "`versionId` is the version string (1.2.0) or the version's id.")
  )
  .add(
    HttpApiEndpoint.get("getNode", "/nodes/:nodeId", {
      params: Schema.Struct({ nodeId: field(PathParam, "Identifier of the node") }),
      query: Schema.Struct({ include_translations: Flag("Include the node's translations", true) }),
      success: Node,
      error: [NotFound, NodeBanned]
    })
      // a node changes with any write: a client revalidates before each reuse
      .annotate(Revalidated, "no-cache")
      .annotate(OpenApi.Summary, "Get a node with its latest version")
      .annotate(OpenApi.Description, "A deleted node is 404, a banned one (or one of a banned publisher) 403 node_banned. Answers carry an ETag; If-None-Match is honoured with 304.")
  )
  .add(
    HttpApiEndpoint.get("listNodeVersions", "/nodes/:nodeId/versions", {
      params: Schema.Struct({ nodeId: field(PathParam, "Identifier of the node") }),
      query: Schema.Struct({
        // `defaultStatuses` when absent
        statuses: optionalParam(
          Schema.Array(NodeVersionStatus).check(Schema.isMaxLength(5), documentedAs({ maxItems: 5, default: defaultStatuses })),
          "Only versions in these statuses (repeatable); default NodeVersionStatusActive"
        )
      }),
      success: Schema.Array(NodeVersion),
      error: [NotFound, NodeBanned]
    })
      .annotate(OpenApi.Summary, "List a node's versions, newest semantic version first")
  )
  .add(
    HttpApiEndpoint.get("installNode", "/nodes/:nodeId/install", {
      params: Schema.Struct({ nodeId: field(PathParam, "Identifier of the node") }),
      query: InstallNodeParams,
      success: NodeVersion,
      error: [NotFound, NodeBanned, NoInstallableVersion, HostVersionUnsupported]
    })
      .annotate(OpenApi.Summary, "Install a node: the version to install, with its downloadUrl; counts one download per client address, node and version an hour")
      .annotate(
        OpenApi.Description,
        "Installable versions are active ones with an archive (deprecated ones too). None: 404. " +
          "`version_range` and `host_version` choose the newest installable version that is not yanked and satisfies both; " +
          "none satisfying the range (or all yanked) is 404 no_installable_version, versions satisfying it but none the host " +
          "409 host_version_unsupported, each message saying which constraint excluded what. " +
          "When archives are kept in a bucket (STORAGE=s3), downloadUrl is the bucket's own: a URL presigned for GET that " +
          "lives 15 minutes, or under the public base (ARCHIVE_PUBLIC_BASE_URL) when one is set, so the download does not " +
          "pass through the service. Listings name the public base, or else the service's /archives URL, which redirects there."
      )
  )
  .add(
    HttpApiEndpoint.post("resolveNodeVersions", "/nodes/resolve", {
      payload: ResolveNodeVersionsRequest,
      success: ResolveNodeVersionsResponse,
      error: [PayloadTooLarge]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Resolve many nodes' versions under ranges and one host version (counts no download)")
      .annotate(
        OpenApi.Description,
        `At most ${maxResolveItems} items (more is 413 naming nodes); a malformed range is 400 naming nodes.<i>.range. ` +
          "Each item gets the version GET /nodes/{nodeId}/install?version_range=&host_version= would choose, or the code and " +
          "reason it would refuse with. All candidate versions are read in one statement."
      )
  )
  .add(
    HttpApiEndpoint.post("checkDependencyConflicts", "/dependencies/conflicts", {
      payload: CheckDependencyConflictsRequest,
      success: CheckDependencyConflictsResponse,
      error: [PayloadTooLarge]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Check node versions' Python dependencies for conflicts")
      .annotate(
        OpenApi.Description,
        `At most ${maxConflictVersions} versions (more is 413 naming versions). Each version's dependencies are read as PEP 508 ` +
          "requirements; per package, requirements whose PEP 440 specifier sets no version satisfies together are answered, " +
          "with the node versions that asked. Direct references (name @ url) take no part."
      )
  )
  .annotate(OpenApi.Title, "Catalogue")
{}

export class PublisherNodesApi extends HttpApiGroup.make("publisherNodes")
  .add(
    HttpApiEndpoint.get("listNodesForPublisher", "/publishers/:publisherId/nodes", {
      params: PublisherIdParams,
      query: Schema.Struct({ include_banned: includeBanned }),
      success: Schema.Array(Node),
      error: [Forbidden, NotFound]
    })
      .annotate(OpenApi.Identifier, "ListNodesForPublisher")
      .annotate(OpenApi.Summary, "List all nodes of a publisher")
  )
  .add(
    HttpApiEndpoint.get("listNodesForPublisherV2", "/publishers/:publisherId/nodes/v2", {
      params: PublisherIdParams,
      query: Schema.Struct({ page: Page, limit: Limit, include_banned: includeBanned }),
      success: NodeList,
      error: [Forbidden, NotFound]
    })
      .annotate(OpenApi.Summary, "List nodes of a publisher, paginated")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Publisher nodes")
{}
