/**
 * Nodes and their versions (interface 2.2, 2.3, 2.7). The records are classes: repositories
 * decode rows into them, handlers return them and HttpApi encodes them. A field the service always
 * sends is required; an optional one is absent when it has no value, never `null`.
 */
import { Schema } from "effect"
import { Publisher, publisherExample } from "./Publisher.ts"
import { field, JsonValue, optionalField, Strings, Timestamp, withExamples } from "./Schemas.ts"

export const NodeStatus = Schema.Literals(["NodeStatusActive", "NodeStatusDeleted", "NodeStatusBanned"])
  .annotate({ identifier: "NodeStatus" })
export type NodeStatus = typeof NodeStatus.Type

export const NodeVersionStatus = Schema.Literals([
  "NodeVersionStatusActive",
  "NodeVersionStatusDeleted",
  "NodeVersionStatusBanned",
  "NodeVersionStatusPending",
  "NodeVersionStatusFlagged"
]).annotate({ identifier: "NodeVersionStatus" })
export type NodeVersionStatus = typeof NodeVersionStatus.Type

/** Versions whose archive is served and installed: active ones (deprecated ones included). */
export const installableStatus: NodeVersionStatus = "NodeVersionStatusActive"

/** A node id: what publishers may choose. */
export const NodeId = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/u, {
    message: "expected 1 to 100 characters: letters, digits, '.', '_' or '-', starting with a letter or digit"
  })
)

/** How a version was published (issue 28): recorded by its publish call, shown with the version. */
export const Provenance = Schema.Union([
  Schema.Struct({
    method: field(Schema.Literal("personal_access_token"), "Published with a personal access token of the publisher"),
    token_id: field(Schema.String, "Identifier of the token (its value is never shown)")
  }),
  Schema.Struct({
    method: field(Schema.Literal("user"), "Published with the bearer token of a member of the publisher"),
    user_id: field(Schema.String, "Identifier of the member")
  }),
  Schema.Struct({
    method: field(Schema.Literal("trusted_publishing"), "Published from CI with a publish token of trusted publishing"),
    trusted_publisher_id: field(Schema.String, "Identifier of the trusted publisher that matched"),
    issuer: field(Schema.String, "Issuer of the workflow's identity token"),
    repository: field(Schema.String, "The repository the workflow ran in, as owner/name"),
    workflow: field(Schema.String, "The workflow file's path in the repository"),
    ref: optionalField(Schema.String, "The git ref the run was for"),
    sha: optionalField(Schema.String, "The commit the run was for"),
    run_id: optionalField(Schema.String, "The CI run (GitHub Actions' run id, GitLab's pipeline id)"),
    environment: optionalField(Schema.String, "The deployment environment the job ran in")
  })
]).annotate({ identifier: "Provenance" })
export type Provenance = typeof Provenance.Type

/** One dependency read as a PEP 508 requirement (src/Domain/Requirements.ts), or why it is none. */
export const DependencyRequirement = Schema.Struct({
  requirement: field(Schema.String, "The dependency as published"),
  name: optionalField(Schema.String, "The package's name as written"),
  package: optionalField(Schema.String, "The package's name in PEP 503's normal form"),
  extras: optionalField(Schema.Array(Schema.String), "The extras asked for"),
  specifier: optionalField(Schema.String, "PEP 440 version specifiers, comma-joined; empty for any version"),
  url: optionalField(Schema.String, "A direct reference (name @ url) instead of a specifier"),
  marker: optionalField(Schema.String, "The environment marker, as written"),
  error: optionalField(Schema.String, "Why the dependency is not a PEP 508 requirement (then no other field but requirement)")
}).annotate({ identifier: "DependencyRequirement" })
export type DependencyRequirement = typeof DependencyRequirement.Type

const nodeVersionFields = {
  changelog: optionalField(Schema.String, "Summary of changes in this version"),
  host_node_extract_status: optionalField(
    Schema.String,
    "Status of the extraction of this version's host-nodes: `pending` once published, `success` once they are recorded, `failed` when the extraction failed"
  ),
  createdAt: field(Timestamp, "Creation time of the version"),
  dependencies: field(Strings, "Package dependencies required by the node in this version"),
  dependency_requirements: optionalField(
    Schema.Array(DependencyRequirement),
    "Output only: each of dependencies read as a PEP 508 requirement, in order, or marked unparseable with why; " +
      "absent on versions published before the registry parsed them"
  ),
  deprecated: field(Schema.Boolean, "Whether this version is deprecated"),
  downloadUrl: optionalField(
    Schema.String,
    "Output only: URL to download this version's archive, present while the version is installable"
  ),
  id: field(Schema.String, "Identifier of the version"),
  node_id: field(Schema.String, "Identifier of the node"),
  sha256: optionalField(
    Schema.String.check(Schema.isPattern(/^[0-9a-f]{64}$/, { message: "expected 64 lowercase hexadecimal digits" })),
    "SHA-256 of the version's archive, in lowercase hexadecimal: present once an archive is stored. The download " +
      "answers it as Repr-Digest (RFC 9530); a client checks what it downloaded against it"
  ),
  status: field(NodeVersionStatus, "Status of the version"),
  status_reason: optionalField(Schema.String, "Why the version has its status, such as what its checks found"),
  supported_accelerators: field(Strings, "Accelerators supported by this version (free strings)"),
  supported_host_frontend_version: optionalField(
    Schema.String,
    "Host frontend versions this version supports, as a semantic-version range"
  ),
  supported_host_version: optionalField(Schema.String, "Host application versions this version supports, as a semantic-version range"),
  supported_os: field(Strings, "Operating systems supported by this version"),
  tags: field(Strings, "Tags of this version"),
  tags_admin: field(Strings, "Admin-only tags of this version"),
  version: field(Schema.String, "Semantic version identifier; unique for the node"),
  yanked: field(
    Schema.Boolean,
    "Whether the publisher yanked this version: it stays installable by its exact version, but is never the node's latest_version nor an unpinned install's choice"
  ),
  yanked_reason: optionalField(Schema.String, "Why the publisher yanked this version; present only while it is yanked"),
  provenance: optionalField(
    Provenance,
    "How the version was published: the personal access token, the member, or the trusted publisher and the CI run " +
      "that published it; absent for versions published before the registry recorded it"
  )
}

/** The document's example of a version. */
const nodeVersionExample: Schema.Struct.Encoded<typeof nodeVersionFields> = {
  changelog: "Adds a 16-bit output to the LUT loader",
  createdAt: "2024-05-03T14:21:07.512Z",
  dependencies: ["numpy>=1.24", "colour-science"],
  deprecated: false,
  downloadUrl: "https://registry.example.com/archives/film-grade-nodes/1.4.2",
  id: "7d4f2a9c-1b3e-4c5d-8e6f-0a1b2c3d4e5f",
  node_id: "film-grade-nodes",
  sha256: "3b2c9f5e8d1a47c6b0e2f4a9d8c7b6a5e4f3d2c1b0a9f8e7d6c5b4a3f2e1d0c9",
  status: "NodeVersionStatusActive",
  supported_accelerators: ["cuda", "mps"],
  supported_host_version: ">=0.3.0",
  supported_os: ["linux", "windows", "macos"],
  tags: [],
  tags_admin: [],
  version: "1.4.2",
  yanked: false,
  provenance: {
    method: "trusted_publishing",
    trusted_publisher_id: "0b6e3c52-8f4d-4a9e-9d71-2f5c8a1e6b34",
    issuer: "https://token.actions.githubusercontent.com",
    repository: "film-grade/film-grade-nodes",
    workflow: ".github/workflows/publish.yml",
    ref: "refs/tags/v1.4.2",
    sha: "9f2c4e1a7b3d5f6e8a0c2b4d6f8e0a1c3b5d7f9e",
    run_id: "11873456123"
  }
}

export class NodeVersion extends Schema.Class<NodeVersion>("NodeVersion")(withExamples(nodeVersionFields, nodeVersionExample)) {}

/** Language key -> translated metadata of the node: any JSON under each key. */
export const Translations = Schema.Record(Schema.String, Schema.Record(Schema.String, JsonValue))

/** The node's newest version, when it is held for a review: which, at what stage, since when. */
export const HeldVersionRef = Schema.Struct({
  version: field(Schema.String, "The held version"),
  stage: field(
    Schema.Literals(["awaiting_review", "review_requested", "scan_failed"]),
    "Where it is: held by its archive's scan and awaiting a site admin's review, its publisher asked for the review, " +
      "or its scan did not finish and is retried"
  ),
  since: field(Timestamp, "Since when: the scan that held it (or failed), or the publisher's request")
}).annotate({ identifier: "HeldVersionRef" })

const nodeFields = {
  author: optionalField(Schema.String, "Author of the node"),
  banner_url: optionalField(Schema.String, "URL of the node's banner"),
  category: optionalField(Schema.String, "Deprecated: use tags; will be removed in a future version"),
  created_at: field(Timestamp, "Creation time of the node"),
  // clients index description, name and publisher.name directly (CONTRACT.md): always sent
  description: field(Schema.String, "Description of the node (empty when none was given)"),
  downloads: field(Schema.Int, "Number of times a version of the node was downloaded"),
  repohost_stars: field(Schema.Int, "Number of stars of the node's source repository"),
  icon: optionalField(Schema.String, "URL of the node's icon"),
  id: field(Schema.String, "Unique identifier of the node"),
  latest_version: optionalField(
    NodeVersion,
    "Highest semantic version among the node's active versions that are not yanked (with host_version, among those admitting it)"
  ),
  held_version: optionalField(
    HeldVersionRef,
    "The node's newest version when it is newer than latest_version and held (its archive's scan found something, or did not finish); absent otherwise"
  ),
  license: optionalField(Schema.String, "Path to the license file in the node's repository"),
  name: field(Schema.String, "Display name of the node (its id when none was given)"),
  preempted_host_node_names: field(Strings, "Names of host-nodes that this node preempts"),
  publisher: field(Publisher, "Publisher the node belongs to"),
  rating: optionalField(Schema.Finite, "Average rating of the node"),
  repository: optionalField(Schema.String, "URL of the node's source repository"),
  search_ranking: optionalField(Schema.Int, "Value used to sort search results; lower ranks first"),
  status: field(NodeStatus, "Status of the node"),
  status_detail: optionalField(Schema.String, "Why the node has its status, as a site admin explained it"),
  supported_accelerators: field(Strings, "Accelerators supported by the node (free strings)"),
  supported_host_frontend_version: optionalField(
    Schema.String,
    "Host frontend versions the node supports, as a semantic-version range"
  ),
  supported_host_version: optionalField(Schema.String, "Host application versions the node supports, as a semantic-version range"),
  supported_os: field(Strings, "Operating systems supported by the node"),
  tags: field(Strings, "Tags of the node (they replace category)"),
  tags_admin: field(Strings, "Admin-only tags for security warnings and admin metadata"),
  translations: optionalField(Translations, "Translated metadata of the node, by language key")
}

/** The document's example of a node, with its latest version and publisher. */
const nodeExample: Schema.Struct.Encoded<typeof nodeFields> = {
  author: "Lumen Lab",
  banner_url: "https://lumenlab.example.com/film-grade/banner.png",
  created_at: "2024-02-20T10:05:44.000Z",
  description: "Colour grading with film LUTs, grain and halation",
  downloads: 18422,
  repohost_stars: 312,
  icon: "https://lumenlab.example.com/film-grade/icon.png",
  id: "film-grade-nodes",
  latest_version: nodeVersionExample,
  license: "LICENSE",
  name: "Film Grade Nodes",
  preempted_host_node_names: [],
  publisher: publisherExample,
  rating: 4.6,
  repository: "https://git.example.com/lumen-lab/film-grade-nodes",
  status: "NodeStatusActive",
  supported_accelerators: ["cuda", "mps"],
  supported_host_version: ">=0.3.0",
  supported_os: ["linux", "windows", "macos"],
  tags: ["color", "film", "post-processing"],
  tags_admin: [],
  translations: { fr: { name: "Nœuds d'étalonnage film", description: "Étalonnage avec des LUT de film, grain et halo" } }
}

export class Node extends Schema.Class<Node>("Node")(withExamples(nodeFields, nodeExample)) {}

/** A page of nodes (2.7). */
export const NodeList = Schema.Struct({
  limit: field(Schema.Int, "Nodes per page, as served (at most 500)"),
  nodes: field(Schema.Array(Node), "Nodes of this page"),
  page: field(Schema.Int, "Page number, from 1"),
  total: field(Schema.Int, "Number of matching nodes on all pages"),
  totalPages: field(Schema.Int, "Number of pages: total divided by limit, rounded up")
}).annotate({ identifier: "NodeList" }).pipe(
  Schema.annotateEncoded({ examples: [{ limit: 10, nodes: [nodeExample], page: 1, total: 1, totalPages: 1 }] })
)
export type NodeList = typeof NodeList.Type

/** The columns `GET /nodes` sorts by (CONTRACT.md). */
export const sortColumns = [
  "created_at",
  "updated_at",
  "downloads",
  "rating",
  "name",
  "id",
  "search_ranking",
  "repohost_stars"
] as const
export type SortColumn = typeof sortColumns[number]

/** One ordering column of a listing, ascending unless `desc`. */
export interface SortKey {
  readonly column: SortColumn
  readonly desc: boolean
}
