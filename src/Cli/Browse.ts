/**
 * The read commands: `search`, `versions` and `nodes`, as tables, or with `--json` as the JSON the
 * service returned (encoded back through the contract's schemas, so scripts can rely on it).
 */
import { Effect, Option, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { type Node, NodeList, NodeVersion, NodeVersionStatus, Node as NodeSchema } from "../Domain/Node.ts"
import { day, jsonOption, print, printJson, shortStatus, table } from "./Output.ts"
import { call, client } from "./Session.ts"

const page = Flag.Int("page").pipe(Flag.withDescription("Page number, from 1"), Flag.withDefault(1))
const limit = Flag.Int("limit").pipe(Flag.withDescription("Nodes per page (at most 500)"), Flag.withDefault(20))

const nodeRows = (nodes: ReadonlyArray<Node>) =>
  table(
    ["ID", "VERSION", "PUBLISHER", "DOWNLOADS", "DESCRIPTION"],
    nodes.map((n) => [n.id, n.latest_version?.version ?? "-", n.publisher.id, String(n.downloads), n.description ?? n.name ?? ""])
  )

const printPage = (list: NodeList) =>
  Effect.gen(function*() {
    if (list.nodes.length === 0) return yield* print("No nodes.")
    yield* print(nodeRows(list.nodes))
    yield* print(`page ${list.page} of ${Math.max(list.totalPages, 1)} (${list.total} ${list.total === 1 ? "node" : "nodes"})`)
  })

export const search = Command.make(
  "search",
  { text: Argument.String("text"), page, limit, json: jsonOption },
  ({ text, page, limit, json }) =>
    Effect.gen(function*() {
      const registry = yield* client
      const found = yield* call("search", registry.api.catalog.searchNodes({ query: { search: text, page, limit } }))
      yield* json ? printJson(NodeList, found) : printPage(found)
    })
).pipe(Command.withDescription("Search nodes by id, name, description, author, tags and host-node names"))

const statusNames = NodeVersionStatus.literals.map(shortStatus)

export const versions = Command.make(
  "versions",
  {
    node: Argument.String("node"),
    status: Flag.Literals("status", statusNames).pipe(
      Flag.withDescription("Only versions in this status (repeatable); default Active"),
      Flag.atLeast(0)
    ),
    json: jsonOption
  },
  ({ node, status, json }) =>
    Effect.gen(function*() {
      const registry = yield* client
      const statuses = status.length === 0
        ? ["NodeVersionStatusActive" as const]
        : status.map((s) => `NodeVersionStatus${s}` as NodeVersionStatus)
      const found = yield* call("list versions", registry.api.catalog.listNodeVersions({ params: { nodeId: node }, query: { statuses } }))
      if (json) return yield* printJson(Schema.Array(NodeVersion), found)
      if (found.length === 0) return yield* print(`No versions of ${node}.`)
      yield* print(table(
        ["VERSION", "STATUS", "CREATED", "DEPRECATED", "CHANGELOG"],
        found.map((v) => [
          v.version,
          shortStatus(v.status) + (v.status_reason === undefined ? "" : `: ${v.status_reason}`),
          day(v.createdAt),
          v.deprecated ? "yes" : "",
          v.changelog ?? ""
        ])
      ))
    })
).pipe(Command.withDescription("List a node's versions, newest first"))

export const nodes = Command.make(
  "nodes",
  {
    publisher: Flag.String("publisher").pipe(
      Flag.withDescription("Only this publisher's nodes (needs login; members also see banned ones)"),
      Flag.optional
    ),
    page,
    limit,
    json: jsonOption
  },
  ({ publisher, page, limit, json }) =>
    Effect.gen(function*() {
      const registry = yield* client
      if (Option.isSome(publisher)) {
        const list = yield* call(
          "list nodes",
          registry.api.publisherNodes.listNodesForPublisher({ params: { publisherId: publisher.value }, query: { include_banned: false } })
        )
        if (json) return yield* printJson(Schema.Array(NodeSchema), list)
        return yield* print(list.length === 0 ? `No nodes of ${publisher.value}.` : nodeRows(list))
      }
      const list = yield* call("list nodes", registry.api.catalog.listAllNodes({ query: { page, limit, sort: [], latest: false } }))
      yield* json ? printJson(NodeList, list) : printPage(list)
    })
).pipe(Command.withDescription("List nodes: all of them (paginated), or one publisher's"))
