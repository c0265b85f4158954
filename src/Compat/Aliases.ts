/**
 * The names the clients in the field send where the interface says `host`, and their renaming.
 *
 * Why: the existing clients (the host's extension manager, the publishing CLI, the web clients)
 * say `<host-name word>_version`, `supported_<word>_version`, `<host-node word>_search`, ... The
 * words are settings while the contract's schemas are static, so the names are renamed at the
 * HTTP edge (Compat/Rewrite.ts), before the schemas decode, on the routes listed here only.
 * Answers keep the interface's names.
 *
 * When a request carries both an alias and its interface name, the alias wins: a client that
 * speaks the aliases sends an interface name only as an echo of the registry's own answer (the
 * admin front-end sends `{...node, supported_<word>_version: new}` with the node it read), and
 * what it set is the alias.
 */

/**
 * The words of the settings `HOST_NAME_ALIAS`, `HOST_NODE_ALIAS` and `REPOHOST_NAME_ALIAS`; ""
 * turns a word's aliases off (so does an absent repository host word).
 */
export interface AliasWords {
  readonly hostName: string
  readonly hostNode: string
  readonly repohost?: string
  /** `IMAGEVENDOR_PATH_ALIAS`: the image vendor's paths also under `/proxy/<word>/`; "" (or absent) adds none. */
  readonly imageVendorPath?: string
  /** `MUSICVENDOR_PATH_ALIAS`: the music vendor's paths also under `/proxy/<word>/`. */
  readonly musicVendorPath?: string
}

/**
 * The claim's token under the repository host's word: the initials of the word's parts, upper
 * case, then `_TOKEN`, where `_` separates parts and a leading `git` is a part of its own
 * (`github` -> `GH_TOKEN`, what the registry web front-end sends; `gitlab` -> `GL_TOKEN`,
 * `my_host` -> `MH_TOKEN`); a word of one part is kept whole (`bitbucket` -> `BITBUCKET_TOKEN`).
 * Why initials: the default must give exactly the front-end's `GH_TOKEN`, the repository host's
 * own short name.
 */
export const tokenAlias = (word: string): string => {
  const parts = word.split("_").filter((p) => p !== "").flatMap((p, i) =>
    i === 0 && p.startsWith("git") && p.length > 3 ? ["git", p.slice(3)] : [p]
  )
  const stem = parts.length > 1 ? parts.map((p) => p[0]).join("") : (parts[0] ?? word)
  return `${stem.toUpperCase()}_TOKEN`
}

/** Alias -> interface name. */
export type Renames = ReadonlyMap<string, string>

/** A field's values in the clients' word -> the interface's, by field name. */
export type ValueRenames = ReadonlyMap<string, ReadonlyMap<string, string>>

/**
 * Where a route's aliases sit in its JSON body: the keys leading to an object ([] for the top
 * level; an array there has each of its objects renamed), its renamed names and values.
 */
export interface BodyPlace {
  readonly at: ReadonlyArray<string>
  readonly renames: Renames
  readonly values?: ValueRenames
}

/** A route (an endpoint's method and path, as the Api declares them) and where its aliases sit. */
export interface AliasRoute {
  readonly method: string
  readonly path: string
  readonly query?: Renames
  readonly body?: ReadonlyArray<BodyPlace>
}

/** The renames of `[alias, name]` pairs whose word is set; an alias equal to its name renames nothing. */
const renames = (word: string, pairs: (word: string) => ReadonlyArray<readonly [string, string]>): Renames =>
  new Map(word === "" ? [] : pairs(word).filter(([alias, name]) => alias !== name))

const merged = (...maps: ReadonlyArray<Renames>): Renames => new Map(maps.flatMap((m) => [...m]))

/** Every route that takes an aliased name, with the renames the words give; routes left without any are dropped. */
export const aliasRoutes = (words: AliasWords): ReadonlyArray<AliasRoute> => {
  const hostVersion = renames(words.hostName, (w) => [[`${w}_version`, "host_version"]])
  const supported = renames(words.hostName, (w) => [
    [`supported_${w}_version`, "supported_host_version"],
    [`supported_${w}_frontend_version`, "supported_host_frontend_version"]
  ])
  const hostNodeSearch = renames(words.hostNode, (w) => [[`${w}_search`, "host_node_search"]])
  const preempted = renames(words.hostNode, (w) => [[`preempted_${w}_names`, "preempted_host_node_names"]])
  const hostNodeName = renames(words.hostNode, (w) => [[`${w}_name`, "host_node_name"]])
  // the web front-end's host-node editor sends the policy in its word (registry-web src/api/generated.ts, ComfyNodePolicy)
  const prefix = policyPrefix(words.hostNode)
  const policy: ValueRenames = new Map(prefix === undefined ? [] : [[
    "policy",
    new Map(policyStates.map((state) => [`${prefix}${state}`, `HostNodePolicy${state}`]))
  ]])
  const none: Renames = new Map()
  const claimToken = renames(words.repohost ?? "", (w) => [[tokenAlias(w), "VCS_TOKEN"]])
  const routes: ReadonlyArray<AliasRoute> = [
    { method: "GET", path: "/nodes", query: hostVersion },
    { method: "GET", path: "/nodes/:nodeId/install", query: hostVersion },
    { method: "POST", path: "/nodes/resolve", body: [{ at: [], renames: hostVersion }] },
    { method: "GET", path: "/nodes/search", query: hostNodeSearch },
    { method: "GET", path: "/host-nodes", query: hostNodeName },
    {
      method: "POST",
      path: "/publishers/:publisherId/nodes/:nodeId/versions",
      body: [{ at: ["node"], renames: supported }, { at: ["node_version"], renames: supported }]
    },
    { method: "POST", path: "/publishers/:publisherId/nodes", body: [{ at: [], renames: supported }] },
    { method: "PUT", path: "/publishers/:publisherId/nodes/:nodeId", body: [{ at: [], renames: supported }] },
    { method: "PUT", path: "/admin/nodes/:nodeId", body: [{ at: [], renames: merged(supported, preempted) }] },
    { method: "PUT", path: "/admin/nodes/:nodeId/versions/:version", body: [{ at: [], renames: supported }] },
    { method: "POST", path: "/nodes/:nodeId/versions/:version/host-nodes", body: [{ at: [], renames: none, values: policy }] },
    { method: "PUT", path: "/nodes/:nodeId/versions/:version/host-nodes/:hostNodeName", body: [{ at: [], renames: none, values: policy }] },
    { method: "POST", path: "/publishers/:publisherId/nodes/:nodeId/claim-my-node", body: [{ at: [], renames: claimToken }] }
  ]
  return routes.filter((r) => (r.query?.size ?? 0) > 0 || (r.body ?? []).some((p) => p.renames.size > 0 || (p.values?.size ?? 0) > 0))
}

/** The states of a host-node policy, each spelt `HostNodePolicy<state>` by the interface. */
export const policyStates = ["Active", "Banned", "LocalOnly"] as const

/**
 * The prefix of the policy values in the clients' word (`comfy_node` gives `ComfyNodePolicy`), as
 * they read them in answers and send them in requests; none when the word is off or is the
 * interface's own.
 */
export const policyPrefix = (hostNode: string): string | undefined => {
  const word = hostNode.split("_").filter((part) => part !== "").map((part) => part[0]!.toUpperCase() + part.slice(1)).join("")
  return word === "" || word === "HostNode" ? undefined : `${word}Policy`
}

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** The object with its aliases renamed (an alias replacing its name), the very same object when it has none. */
export const renameKeys = (record: Readonly<Record<string, unknown>>, table: Renames): Readonly<Record<string, unknown>> => {
  if (!Object.keys(record).some((key) => table.has(key))) return record
  const aliased = new Set(Object.keys(record).flatMap((key) => table.get(key) ?? []))
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(record)) {
    if (!aliased.has(key)) out[table.get(key) ?? key] = value
  }
  return out
}

/** The JSON body with the aliases of each place renamed; the same value when nothing was renamed. */
export const renameBody = (body: unknown, places: ReadonlyArray<BodyPlace>): unknown =>
  places.reduce((out, place) => renameAt(out, place.at, place), body)

/** The record with the values of `values` renamed; the same record when none is. */
const renameValues = (record: Readonly<Record<string, unknown>>, values: ValueRenames | undefined) => {
  if (values === undefined) return record
  const renamed = Object.entries(record).map(([key, value]): [string, unknown] => {
    const given = typeof value === "string" ? values.get(key)?.get(value) : undefined
    return [key, given ?? value]
  })
  return renamed.some(([key, value]) => value !== record[key]) ? Object.fromEntries(renamed) : record
}

const renameAt = (value: unknown, at: ReadonlyArray<string>, place: BodyPlace): unknown => {
  if (at.length === 0 && Array.isArray(value)) {
    const items = value.map((item) => renameAt(item, at, place))
    return items.some((item, i) => item !== value[i]) ? items : value
  }
  // a body of another shape is left as it is, for the schema to refuse
  if (!isRecord(value)) return value
  if (at.length === 0) return renameValues(renameKeys(value, place.renames), place.values)
  const [key, ...rest] = at as [string, ...Array<string>]
  if (!(key in value)) return value
  const inner = renameAt(value[key], rest, place)
  return inner === value[key] ? value : { ...value, [key]: inner }
}

const decodeQueryName = (part: string): string => {
  try {
    return decodeURIComponent(part.replace(/\+/g, " "))
  } catch {
    return part
  }
}

/**
 * The query string (without `?`) with its aliased parameter names renamed, or the very same
 * string when it has none. Values and every other parameter are kept byte for byte; an alias
 * replaces its name's values.
 */
export const renameQuery = (query: string, table: Renames): string => {
  const pairs = query.split("&").map((pair) => {
    const eq = pair.indexOf("=")
    return { pair, eq, name: decodeQueryName(eq === -1 ? pair : pair.slice(0, eq)) }
  })
  if (!pairs.some((p) => table.has(p.name))) return query
  const aliased = new Set(pairs.flatMap((p) => table.get(p.name) ?? []))
  return pairs
    .filter((p) => !aliased.has(p.name))
    .map((p) => {
      const name = table.get(p.name)
      return name === undefined ? p.pair : encodeURIComponent(name) + (p.eq === -1 ? "" : p.pair.slice(p.eq))
    })
    .join("&")
}

/** The path segment of the host-node routes, as the interface names it. */
const hostNodesSegment = "host-nodes"

/**
 * The segment the clients use in its place: the node word with hyphens, plural, as they call it
 * (`comfy_node` gives `comfy-nodes`); none when the word is off or gives the interface's segment.
 */
export const hostNodesAlias = (words: AliasWords): string | undefined => {
  const segment = `${words.hostNode.replace(/_/g, "-")}s`
  return words.hostNode === "" || segment === hostNodesSegment ? undefined : segment
}

/** The media proxy's neutral prefixes, each with the word its paths also answer under. */
const vendorPrefixes = (words: AliasWords): ReadonlyArray<readonly [string, string]> =>
  ([["/proxy/imagevendor/", words.imageVendorPath ?? ""], ["/proxy/musicvendor/", words.musicVendorPath ?? ""]] as const)
    .filter(([prefix, word]) => word !== "" && `/proxy/${word}/` !== prefix)
    .map(([prefix, word]) => [prefix, `/proxy/${word}/`] as const)

/** Paths the registry served earlier, under the prefix that replaced them: `[prefix now, prefix before]`. */
const earlierPrefixes: ReadonlyArray<readonly [string, string]> = [
  // the API keys moved to the anchor's path; clients of the first one keep working
  ["/customers/api-keys", "/users/api-keys"]
]

/**
 * The other patterns a route pattern answers under, so that the route table sends them to the
 * one route (its handler, errors, caching and the name logs and metrics give it):
 * - a host-node route (one with a `host-nodes` segment) also under the clients' segment;
 * - a route of the media proxy (`/proxy/imagevendor/...`, `/proxy/musicvendor/...`) also under
 *   its vendor's word (`/proxy/<word>/...`), by prefix: every route declared there now or later
 *   gets it with no list to keep;
 * - a route that moved also under its earlier path (`earlierPrefixes`), whatever the words.
 */
export const aliasPatterns = (words: AliasWords) => {
  const alias = hostNodesAlias(words)
  const vendors = vendorPrefixes(words)
  return (pattern: string): ReadonlyArray<string> => {
    const vendor = vendors.find(([prefix]) => pattern.startsWith(prefix))
    if (vendor !== undefined) return [vendor[1] + pattern.slice(vendor[0].length)]
    const moved = earlierPrefixes.find(([now]) => pattern === now || pattern.startsWith(`${now}/`))
    if (moved !== undefined) return [moved[1] + pattern.slice(moved[0].length)]
    if (alias === undefined) return []
    const segments = pattern.split("/")
    return segments.includes(hostNodesSegment)
      ? [segments.map((s) => (s === hostNodesSegment ? alias : s)).join("/")]
      : []
  }
}
