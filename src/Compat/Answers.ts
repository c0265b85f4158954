/**
 * The clients' words in answers (`ANSWER_ALIASES=true`, docs/compatibility.md).
 *
 * Why: the clients in the field read `supported_<host word>_version`, `<node word>_extract_status`,
 * `preempted_<node word>_names`, `<node word>_name`, `<repository host word>_stars` and the
 * host-node policy under `<NodeWord>Policy…`. Given only the interface's names they read nothing:
 * the host application never sees a version range and so never flags a conflict, the web
 * front-end shows no stars. With the setting on, each such field is answered under the clients'
 * name right after the interface's (both stand side by side), and a policy value, which cannot
 * have two spellings at once, takes the clients' word. Off, nothing here runs.
 *
 * The same table serves both renderings: the catalogue's pages built by PostgreSQL add the
 * clients' names in their statements (Catalog/NodePages.ts), every other JSON answer is given
 * them at the edge (Http/AnswerAliases.ts).
 */
import { type AliasWords, policyPrefix, policyStates } from "./Aliases.ts"

/** The words of HOST_NAME_ALIAS, HOST_NODE_ALIAS and REPOHOST_NAME_ALIAS, all three given; "" leaves that word's names out. */
export type AnswerWords = Required<Pick<AliasWords, "hostName" | "hostNode" | "repohost">>

/** `[interface name, the clients' name]`: the field is answered under both, the clients' right after. */
export type Beside = ReadonlyArray<readonly [string, string]>

/** What the answers add, by record. Every interface name here is also the column that holds the field. */
export interface AnswerAliases {
  readonly node: Beside
  readonly version: Beside
  readonly hostNode: Beside
  /** The policy values' prefix in the clients' word (`ComfyNodePolicy`), or undefined to keep the interface's. */
  readonly policyPrefix: string | undefined
}

const pairs = (word: string, make: (word: string) => Beside): Beside =>
  word === "" ? [] : make(word).filter(([name, alias]) => name !== alias)

/** The clients' names of each record for these words. */
export const answerAliases = (words: AnswerWords): AnswerAliases => {
  const supported = pairs(words.hostName, (w) => [
    ["supported_host_version", `supported_${w}_version`],
    ["supported_host_frontend_version", `supported_${w}_frontend_version`]
  ])
  return {
    node: [
      ...supported,
      ...pairs(words.hostNode, (w) => [["preempted_host_node_names", `preempted_${w}_names`]]),
      ...pairs(words.repohost, (w) => [["repohost_stars", `${w}_stars`]])
    ],
    version: [...supported, ...pairs(words.hostNode, (w) => [["host_node_extract_status", `${w}_extract_status`]])],
    // a page of records is `comfy_nodes` to the web front-end (registry-web src/api/generated.ts, ListComfyNodes200)
    hostNode: pairs(words.hostNode, (w) => [["host_node_name", `${w}_name`], ["host_nodes", `${w}s`]]),
    policyPrefix: policyPrefix(words.hostNode)
  }
}

const interfacePolicy = new RegExp(`^HostNodePolicy(${policyStates.join("|")})$`)

/**
 * An encoded answer with the clients' names added: every object that has an interface name of the
 * table gets the clients' name right after it (unless it has it already), and a `policy` holding
 * a host-node policy takes the clients' spelling. Returns the very same value when nothing changes.
 */
export const withClientNames = (aliases: AnswerAliases): ((value: unknown) => unknown) => {
  const beside = new Map([...aliases.node, ...aliases.version, ...aliases.hostNode])
  const { policyPrefix } = aliases
  const visit = (value: unknown): unknown => {
    if (Array.isArray(value)) {
      let changed = false
      const items = value.map((item) => {
        const out = visit(item)
        changed ||= out !== item
        return out
      })
      return changed ? items : value
    }
    if (typeof value !== "object" || value === null) return value
    let changed = false
    const out: Record<string, unknown> = {}
    for (const [key, inner] of Object.entries(value)) {
      let field = visit(inner)
      if (key === "policy" && policyPrefix !== undefined && typeof field === "string") {
        const match = interfacePolicy.exec(field)
        if (match !== null) field = `${policyPrefix}${match[1]}`
      }
      changed ||= field !== inner
      out[key] = field
      const alias = beside.get(key)
      if (alias !== undefined && !(alias in value)) {
        out[alias] = field
        changed = true
      }
    }
    return changed ? out : value
  }
  return visit
}

/** Whether the table adds anything at all. */
export const addsNames = (aliases: AnswerAliases) =>
  aliases.node.length + aliases.version.length + aliases.hostNode.length > 0 || aliases.policyPrefix !== undefined
