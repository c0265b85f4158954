/**
 * Shared pieces of the catalogue read-side tests: strict decoders of the wire format, the listings
 * read page by page, direct SQL for what the wire format does not show (stored timestamps, version
 * ids), and a JS model of which nodes a listing holds and in what order.
 */
import { Effect, Schema } from "effect"
import * as fc from "fast-check"
import semver from "semver"
import { expect } from "vitest"
import type { NodeInput, VersionInput } from "../../scripts/lib/Seeder.ts"
import { Node, NodeList, NodeVersion, type NodeVersionStatus, type SortColumn } from "../../src/Domain/Node.ts"
import type { PublisherStatus } from "../../src/Domain/Publisher.ts"
import { query } from "./Db.ts"
import { expectStatus, get } from "./Http.ts"
import type { Running } from "./Service.ts"

// --- the wire format, held exact ---------------------------------------------------------------

/**
 * A decoder of exactly the wire format of `schema`: it fails on any field the schema does not
 * know, on `null`s and on missing required fields, and answers the wire form as it came (times as
 * ISO strings), checked against the schema's decoding too.
 */
export const decodeExact = <A, I>(schema: Schema.Codec<A, I>) => (u: unknown): I => {
  expectNoNulls(u)
  Schema.decodeUnknownSync(schema)(u, { onExcessProperty: "error" })
  return u as I
}

/** A node, and a page of them, as the wire carries them. */
export type WireNode = typeof Node.Encoded
export type WireNodeList = typeof NodeList.Encoded

export const decodeNodeList = decodeExact(NodeList)
export const decodeNodes = decodeExact(Schema.Array(Node))
export const decodeVersion = decodeExact(NodeVersion)

/** Absent values are omitted on the wire, never `null` (CONTRACT.md, Conventions). */
export const expectNoNulls = (u: unknown, at = "$"): void => {
  if (u === null) expect.fail(`null at ${at}`)
  if (Array.isArray(u)) u.forEach((x, i) => expectNoNulls(x, `${at}[${i}]`))
  else if (typeof u === "object" && u !== undefined) {
    for (const [k, v] of Object.entries(u)) expectNoNulls(v, `${at}.${k}`)
  }
}

/** ISO 8601 with `Z` and milliseconds. */
export const isoMillis = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

// --- HTTP --------------------------------------------------------------------------------------

/** The query parameters of `GET /nodes`, as the contract's table lists them (CONTRACT.md). */
export const listNodesParams = [
  "page",
  "limit",
  "supported_os",
  "supported_accelerator",
  "timestamp",
  "latest",
  "sort",
  "node_id",
  "host_version",
  "form_factor"
] as const

export type QueryValue = string | number | boolean | ReadonlyArray<string> | undefined
export type Query = Readonly<Record<string, QueryValue>>

/** A query string with repeated keys for arrays, in the order given. */
export const queryString = (q: Query): string => {
  const params = new URLSearchParams()
  for (const [key, value] of Object.entries(q)) {
    if (value === undefined) continue
    if (Array.isArray(value)) for (const v of value) params.append(key, v)
    else params.append(key, String(value))
  }
  const s = params.toString()
  return s === "" ? "" : `?${s}`
}

/** A 200 page of `GET /nodes` (or a publisher's v2 listing), decoded strictly. */
export const getPage = (service: Running, path: string, q: Query, token?: string, decode = decodeNodeList) =>
  Effect.gen(function*() {
    const answer = expectStatus(yield* get(service, path + queryString(q), { token }), 200, `${path}${queryString(q)}`)
    expect(answer.headers.get("content-type")).toMatch(/^application\/json/)
    return decode(answer.body)
  })

/**
 * A page that may carry fields beside the interface's (the clients' words, ANSWER_ALIASES): those
 * are kept as sent, every other field is held to the wire format.
 */
export const decodeNodeListWithExtras = (u: unknown): WireNodeList => {
  expectNoNulls(u)
  Schema.decodeUnknownSync(NodeList)(u, { onExcessProperty: "ignore" })
  return u as WireNodeList
}

/**
 * Every page of a listing from 1 until one past the end, checking on each that `page`,
 * `limit`, `total` and `totalPages` agree; answers the nodes in the order served.
 */
export const walkPages = (service: Running, path: string, q: Query, limit: number, token?: string) =>
  Effect.gen(function*() {
    const first = yield* getPage(service, path, { ...q, page: 1, limit }, token)
    const total = first.total
    const served = Math.min(limit, 500)
    const totalPages = Math.ceil(total / served)
    const nodes: Array<WireNode> = []
    for (let page = 1; page <= totalPages + 1; page++) {
      const p = page === 1 ? first : yield* getPage(service, path, { ...q, page, limit }, token)
      expect({ page: p.page, limit: p.limit, total: p.total, totalPages: p.totalPages }).toEqual({
        page,
        limit: served,
        total,
        totalPages
      })
      expect(p.nodes.length).toBe(Math.max(0, Math.min(served, total - (page - 1) * served)))
      nodes.push(...p.nodes)
    }
    return { total, totalPages, nodes }
  })

export const ids = (nodes: ReadonlyArray<WireNode>): Array<string> => nodes.map((n) => n.id)

export const sleep = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

// --- SQL, for what the wire format does not show ------------------------------------------------

/** The stored `updated_at` of every node, in microseconds (the wire format has no such field). */
export const updatedAtMicros = (service: Running) =>
  Effect.map(
    query<{ id: string; micros: string }>(
      service,
      `SELECT id, (extract(epoch FROM updated_at) * 1000000)::bigint::text AS micros FROM nodes`
    ),
    (rows) => new Map(rows.map((r) => [r.id, BigInt(r.micros)]))
  )

export const versionId = (service: Running, nodeId: string, version: string) =>
  Effect.map(
    query<{ id: string }>(service, `SELECT id::text FROM node_versions WHERE node_id = $1 AND version = $2`, [nodeId, version]),
    (rows) => {
      if (rows.length !== 1) expect.fail(`no stored version ${nodeId}@${version}`)
      return rows[0]!.id
    }
  )

// --- the model ---------------------------------------------------------------------------------

export interface ModelPublisher {
  readonly id: string
  status: PublisherStatus
}

export type ModelNode = { -readonly [K in keyof NodeInput]: NodeInput[K] } & {
  /** Stored `updated_at` in microseconds, when an order by it is to be modelled. */
  updatedAt?: bigint
}

/** What the database holds, as the tests wrote it. */
export class Catalogue {
  readonly publishers = new Map<string, ModelPublisher>()
  readonly nodes = new Map<string, ModelNode>()
  readonly versions: Array<VersionInput> = []

  /** Writes publishers, nodes and versions through the service's own writer and records them. */
  add(
    service: Running,
    data: {
      readonly publishers?: ReadonlyArray<{ id: string; status?: PublisherStatus; name?: string }>
      readonly nodes?: ReadonlyArray<NodeInput>
      readonly versions?: ReadonlyArray<VersionInput>
    }
  ) {
    const self = this
    return Effect.gen(function*() {
      if (data.publishers && data.publishers.length > 0) {
        yield* service.writes.upsertPublishers(data.publishers)
        for (const p of data.publishers) self.publishers.set(p.id, { id: p.id, status: p.status ?? "PublisherStatusActive" })
      }
      if (data.nodes && data.nodes.length > 0) {
        // one node a call: a batch of insertNodes takes its columns from its first node (see
        // ListNodes.test.ts, "a batch of nodes with different optional fields")
        for (const n of data.nodes) yield* service.writes.insertNodes([n])
        for (const n of data.nodes) self.nodes.set(n.id, { ...n })
      }
      if (data.versions && data.versions.length > 0) {
        yield* service.writes.insertVersions(data.versions)
        self.versions.push(...data.versions)
      }
    })
  }

  /** Listed by `GET /nodes`: the node and its publisher active. */
  listed(n: ModelNode): boolean {
    return (n.status ?? "NodeStatusActive") === "NodeStatusActive" &&
      this.publishers.get(n.publisher_id)?.status === "PublisherStatusActive"
  }

  /** The version that is `latest_version` of the node, given the host version asked for. */
  latestVersion(nodeId: string, hostVersion?: string): VersionInput | undefined {
    const candidates = this.versions.filter((v) =>
      v.node_id === nodeId && v.status === "NodeVersionStatusActive" &&
      (hostVersion === undefined || admitsHost(v, hostVersion))
    )
    return candidates.sort((a, b) => semver.rcompare(a.version, b.version))[0]
  }

  /**
   * Kept by the host-version filter: a node with no installable (Active) version makes no claim
   * and stays; one with some stays when one of them admits the host.
   */
  keptFor(nodeId: string, hostVersion: string): boolean {
    return this.latestVersion(nodeId) === undefined || this.latestVersion(nodeId, hostVersion) !== undefined
  }

  /** The nodes `GET /nodes` answers for a query, in the order it must answer them. */
  expected(q: ModelQuery): Array<ModelNode> {
    const os = q.supported_os?.toLowerCase()
    const accelerator = q.supported_accelerator?.toLowerCase()
    return [...this.nodes.values()]
      .filter((n) => this.listed(n))
      .filter((n) => os === undefined || declares(n.supported_os, os))
      .filter((n) => accelerator === undefined || declares(n.supported_accelerators, accelerator))
      .filter((n) => q.node_id === undefined || q.node_id.includes(n.id))
      .filter((n) => q.host_version === undefined || this.keptFor(n.id, q.host_version))
      .sort(compareNodes(q.sort ?? []))
  }
}

export interface ModelQuery {
  readonly supported_os?: string
  readonly supported_accelerator?: string
  readonly node_id?: ReadonlyArray<string>
  readonly host_version?: string
  readonly sort?: ReadonlyArray<SortKey>
}

/** A node declaring no value matches every value (CONTRACT.md). */
const declares = (declared: ReadonlyArray<string> | undefined, wanted: string) =>
  declared === undefined || declared.length === 0 || declared.some((d) => d.toLowerCase() === wanted)

/** A version without `supported_host_version` admits every host. */
export const admitsHost = (v: VersionInput, hostVersion: string): boolean => {
  const range = v.supported_host_version?.trim()
  if (!range) return true
  return semver.satisfies(hostVersion.replace(/^v/i, ""), range, { includePrerelease: true })
}

export interface SortKey {
  readonly column: SortColumn
  readonly desc: boolean
}

export const sortParam = (k: SortKey) => (k.desc ? `${k.column};desc` : k.column)

/** Byte order of the UTF-8 texts (what `COLLATE "C"` means). */
export const compareBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"))

const compareValues = (a: string | number | bigint, b: string | number | bigint): number =>
  typeof a === "string" && typeof b === "string" ? compareBytes(a, b) : a < b ? -1 : a > b ? 1 : 0

const sortValue = (n: ModelNode, column: SortColumn): string | number | bigint | undefined => {
  switch (column) {
    case "created_at":
      return n.created_at === undefined ? expect.fail(`model node ${n.id} has no created_at`) : n.created_at.getTime()
    case "updated_at":
      return n.updatedAt ?? expect.fail(`model node ${n.id} has no updatedAt`)
    case "downloads":
      return n.downloads ?? 0
    case "repohost_stars":
      return n.repohost_stars ?? 0
    case "rating":
      return n.rating
    case "search_ranking":
      return n.search_ranking
    case "name":
      return n.name
    case "id":
      return n.id
  }
}

/** The requested keys (absent values last, in both directions), then the id ascending. */
export const compareNodes = (sort: ReadonlyArray<SortKey>) => {
  const keys: ReadonlyArray<SortKey> = sort.length > 0
    ? sort
    : [{ column: "search_ranking", desc: false }, { column: "downloads", desc: true }]
  return (a: ModelNode, b: ModelNode): number => {
    for (const { column, desc } of keys) {
      const x = sortValue(a, column)
      const y = sortValue(b, column)
      if (x === undefined && y === undefined) continue
      if (x === undefined) return 1
      if (y === undefined) return -1
      const c = compareValues(x, y)
      if (c !== 0) return desc ? -c : c
    }
    return compareBytes(a.id, b.id)
  }
}

// --- random catalogues -------------------------------------------------------------------------

/** A version's status, active twice as often as each other one (deleted included). */
export const arbVersionStatus = fc.constantFrom<NodeVersionStatus>(
  "NodeVersionStatusActive",
  "NodeVersionStatusActive",
  "NodeVersionStatusPending",
  "NodeVersionStatusFlagged",
  "NodeVersionStatusDeleted",
  "NodeVersionStatusBanned"
)
