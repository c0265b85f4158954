/**
 * The renaming of the clients' aliases (src/Compat/Aliases.ts), as pure functions: objects,
 * bodies and query strings against models (an alias replaces its name), the settings turning
 * words off, and the routes named being the Api's own.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Result } from "effect"
import * as fc from "fast-check"
import { Api } from "../../src/Api.ts"
import { appConfig } from "../../src/Config.ts"
import { aliasPatterns, aliasRoutes, hostNodesAlias, type Renames, renameBody, renameKeys, renameQuery, tokenAlias } from "../../src/Compat/Aliases.ts"
import { forAllSync } from "../support/Property.ts"

const defaults = { hostName: "comfyui", hostNode: "comfy_node", repohost: "github" }
/** The API keys' routes, which moved from /users/api-keys and answer there too, whatever the words. */
const movedKeys = (pattern: string) => pattern.startsWith("/customers/api-keys")
const word = fc.stringMatching(/^[a-z0-9_]{1,12}$/)
const words = fc.record({ hostName: fc.oneof(fc.constant(""), word), hostNode: fc.oneof(fc.constant(""), word), repohost: fc.oneof(fc.constant(""), word) })

const supported = new Map([
  ["supported_comfyui_version", "supported_host_version"],
  ["supported_comfyui_frontend_version", "supported_host_frontend_version"]
]) satisfies Renames
const keys = fc.constantFrom(...supported.keys(), ...supported.values(), "name", "version", "tags")
const jsonValue = fc.oneof(fc.constantFrom(">=0.3.0,<2.0.0", "", "^1.4"), fc.string({ maxLength: 4 }), fc.array(fc.string({ maxLength: 2 }), { maxLength: 2 }))
const record = fc.dictionary(keys, jsonValue, { maxKeys: 6 })

/** The model: each alias carries its value under its name, replacing the name's own. */
const renamedModel = (rec: Readonly<Record<string, unknown>>, table: Renames) => {
  const aliasOf = new Map([...table].map(([alias, name]) => [name, alias]))
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(rec)) {
    const name = table.get(k)
    if (name !== undefined) out[name] = v
    else if (!(aliasOf.has(k) && aliasOf.get(k)! in rec)) out[k] = v
  }
  return out
}

describe("aliasRoutes", () => {
  it("names only routes the Api declares, with their method and path", () => {
    const declared = new Set(Object.values(Api.groups).flatMap((g) => Object.values(g.endpoints).map((e) => `${e.method} ${e.path}`)))
    for (const route of aliasRoutes(defaults)) expect(declared).toContain(`${route.method} ${route.path}`)
  })

  it("gives the default words' aliases the clients send (comfy-cli api.py, ComfyUI-Manager cnr_utils.py, the front-end's comfyRegistryService.ts)", () => {
    const names = aliasRoutes(defaults).flatMap((r) => [...(r.query ?? new Map()), ...(r.body ?? []).flatMap((p) => [...p.renames])])
    expect(new Map(names)).toEqual(new Map([
      ["comfyui_version", "host_version"],
      ["comfy_node_search", "host_node_search"],
      ["comfy_node_name", "host_node_name"],
      ["supported_comfyui_version", "supported_host_version"],
      ["supported_comfyui_frontend_version", "supported_host_frontend_version"],
      ["preempted_comfy_node_names", "preempted_host_node_names"],
      // registry-web pages/publishers/[publisherId]/claim-my-node.tsx sends { GH_TOKEN }
      ["GH_TOKEN", "VCS_TOKEN"]
    ]))
  })

  it("renames the version ranges of the admin version update (registry-web NodeVersionCompatibilityEditModal.tsx)", () => {
    const route = aliasRoutes(defaults).find((r) => r.method === "PUT" && r.path === "/admin/nodes/:nodeId/versions/:version")
    expect(route?.body).toEqual([{ at: [], renames: supported }])
  })

  it("an empty word turns its aliases off; an alias is never an interface name", () => forAllSync([words], ([w]) => {
    const routes = aliasRoutes(w)
    const aliases = routes.flatMap((r) => [...(r.query ?? new Map()), ...(r.body ?? []).flatMap((p) => [...p.renames])])
    if (w.hostName === "" && w.hostNode === "" && w.repohost === "") expect(routes).toEqual([])
    for (const [alias, name] of aliases) {
      expect(alias).not.toBe(name)
      if (name === "VCS_TOKEN") {
        expect(w.repohost).not.toBe("")
        expect(alias).toBe(tokenAlias(w.repohost))
        continue
      }
      const byHostName = ["host_version", "supported_host_version", "supported_host_frontend_version"].includes(name)
      expect((byHostName ? w.hostName : w.hostNode) !== "").toBe(true)
      expect(alias).toContain(byHostName ? w.hostName : w.hostNode)
    }
  }))
})

describe("renameKeys", () => {
  it("renames aliases, an alias replacing its name, and keeps the rest", () => forAllSync([record], ([rec]) => {
    const out = renameKeys(rec, supported)
    expect(out).toEqual(renamedModel(rec, supported))
    if (![...supported.keys()].some((a) => a in rec)) expect(out).toBe(rec)
  }))

  it("the alias wins over the name echoed from an answer (registry-web pages/admin/node-version-compatibility.tsx)", () => {
    const node = { id: "n", supported_host_version: ">=1.0.0", supported_comfyui_version: ">=2.0.0" }
    expect(renameKeys(node, supported)).toEqual({ id: "n", supported_host_version: ">=2.0.0" })
  })
})

describe("renameBody", () => {
  const places = aliasRoutes(defaults).find((r) => r.method === "POST" && r.path.endsWith("/versions"))!.body!

  it("renames on node and node_version alone, as comfy-cli's api.py sends them", () => forAllSync([record, record, record], ([node, nodeVersion, top]) => {
    const body = { ...top, node, node_version: nodeVersion }
    const out = renameBody(body, places) as Record<string, unknown>
    expect(out.node).toEqual(renamedModel(node, supported))
    expect(out.node_version).toEqual(renamedModel(nodeVersion, supported))
    // the top level is not a place of this route
    for (const k of Object.keys(top)) if (k !== "node" && k !== "node_version") expect(out[k]).toEqual(top[k])
  }))

  it("leaves bodies of other shapes as they are", () => {
    for (const body of [null, 3, "x", [1], { node: "x" }, { node: [1] }]) expect(renameBody(body, places)).toBe(body)
  })

  it("spells a host-node policy the interface's way, in a record or in each record of an array, and nothing else", () => {
    const created = aliasRoutes(defaults).find((r) => r.method === "POST" && r.path.endsWith("/host-nodes"))!.body!
    const policies = fc.constantFrom("ComfyNodePolicyActive", "ComfyNodePolicyBanned", "ComfyNodePolicyLocalOnly", "HostNodePolicyActive", "OtherPolicyBanned")
    forAllSync([fc.array(fc.record({ host_node_name: fc.string({ maxLength: 4 }), policy: policies, category: policies }), { maxLength: 4 })], ([records]) => {
      const interfaceWord = (p: string) => p.replace(/^ComfyNodePolicy/, "HostNodePolicy")
      const expected = records.map((r) => ({ ...r, policy: interfaceWord(r.policy) }))
      expect(renameBody(records, created)).toEqual(expected)
      for (const record of records) expect(renameBody(record, created)).toEqual({ ...record, policy: interfaceWord(record.policy) })
    })
    expect(aliasRoutes({ hostName: "comfyui", hostNode: "" }).some((r) => r.path.endsWith("/host-nodes"))).toBe(false)
  })
})

describe("renameQuery", () => {
  const table: Renames = new Map([["comfyui_version", "host_version"]])
  const name = fc.constantFrom("comfyui_version", "host_version", "page", "form_factor", "a b")
  const value = fc.oneof(fc.constantFrom("v0.3.60-1-g05b2453", "unknown", "", "1.0.0"), fc.string({ maxLength: 5 }))
  const pairs = fc.array(fc.tuple(name, value), { maxLength: 6 })
  const encode = (ps: ReadonlyArray<readonly [string, string]>) => ps.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&")
  const valuesOf = (ps: ReadonlyArray<readonly [string, string]>, n: string) => ps.filter(([k]) => k === n).map(([, v]) => v)

  it("renames the parameter as the model says, every other byte kept", () => forAllSync([pairs], ([ps]) => {
    const query = encode(ps)
    const out = renameQuery(query, table)
    const aliased = valuesOf(ps, "comfyui_version").length > 0
    if (!aliased) expect(out).toBe(query)
    const model = ps.flatMap(([k, v]): ReadonlyArray<readonly [string, string]> =>
      k === "comfyui_version" ? [["host_version", v]] : k === "host_version" && aliased ? [] : [[k, v]]
    )
    expect([...new URLSearchParams(out)]).toEqual(model)
  }))

  it("keeps the manager's query apart from the name (ComfyUI-Manager glob/cnr_utils.py)", () => {
    expect(renameQuery("page=1&limit=30&comfyui_version=v0.3.60-1-g05b2453&form_factor=git-linux", table)).toBe(
      "page=1&limit=30&host_version=v0.3.60-1-g05b2453&form_factor=git-linux"
    )
  })
})

describe("the settings HOST_NAME_ALIAS, HOST_NODE_ALIAS, REPOHOST_NAME_ALIAS and ANSWER_ALIASES", () => {
  const read = (env: Record<string, string>) =>
    Effect.runSync(Effect.result(appConfig.parse(ConfigProvider.fromEnv({ env, preserveEmptyStrings: true }))))

  it("default to the clients' words, answers in the interface's alone; empty turns a word off", () => {
    expect(Result.getOrThrow(read({})).aliases).toEqual({ ...defaults, inAnswers: false, imageVendorPath: "", musicVendorPath: "" })
    expect(Result.getOrThrow(read({ HOST_NAME_ALIAS: "", HOST_NODE_ALIAS: "", REPOHOST_NAME_ALIAS: "", ANSWER_ALIASES: "true" })).aliases)
      .toEqual({ hostName: "", hostNode: "", repohost: "", inAnswers: true, imageVendorPath: "", musicVendorPath: "" })
  })

  it("the claim token's key: initials of the word's parts (a leading git is one), a one-part word whole", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["github", "GH_TOKEN"],
      ["gitlab", "GL_TOKEN"],
      ["my_host", "MH_TOKEN"],
      ["bitbucket", "BITBUCKET_TOKEN"],
      ["git", "GIT_TOKEN"]
    ]
    for (const [w, key] of cases) expect(tokenAlias(w), w).toBe(key)
    forAllSync([word], ([w]) => expect(tokenAlias(w)).toMatch(/^[A-Z0-9_]+_TOKEN$/))
  })

  it("take lowercase letters, digits and underscores, and refuse anything else naming the setting", () => forAllSync([fc.string({ maxLength: 8 })], ([raw]) => {
    const result = read({ HOST_NAME_ALIAS: raw })
    if (/^[a-z0-9_]*$/.test(raw.trim())) expect(Result.getOrThrow(result).aliases.hostName).toBe(raw.trim())
    else {
      if (Result.isSuccess(result)) throw new Error(`${JSON.stringify(raw)} was accepted`)
      expect(String(result.failure)).toContain("HOST_NAME_ALIAS must be lowercase letters, digits and underscores")
    }
  }))
})

describe("the host-node paths under the node word", () => {
  const patterns = Object.values(Api.groups).flatMap((g) => Object.values(g.endpoints).map((e) => e.path))

  it("is the word with hyphens, plural; none when off or the interface's own", () => {
    expect(hostNodesAlias(defaults)).toBe("comfy-nodes")
    expect(hostNodesAlias({ hostName: "", hostNode: "custom_piece" })).toBe("custom-pieces")
    expect(hostNodesAlias({ ...defaults, hostNode: "" })).toBeUndefined()
    expect(hostNodesAlias({ ...defaults, hostNode: "host_node" })).toBeUndefined()
  })

  it("aliases exactly the Api's routes with a host-nodes segment, that segment alone", () => forAllSync([words], ([w]) => {
    const alias = hostNodesAlias(w)
    for (const pattern of patterns) {
      const aliased = aliasPatterns(w)(pattern)
      if (movedKeys(pattern)) expect(aliased).toEqual([pattern.replace("/customers/api-keys", "/users/api-keys")])
      else if (alias === undefined || !pattern.split("/").includes("host-nodes")) expect(aliased).toEqual([])
      else expect(aliased).toEqual([pattern.replaceAll("/host-nodes", `/${alias}`)])
    }
  }))

  it("gives the clients' paths by default (ComfyUI_frontend comfyRegistryService.ts, registry-web generated.ts)", () => {
    const aliased = new Set(patterns.flatMap(aliasPatterns(defaults)))
    for (const path of ["/comfy-nodes/:hostNodeName/node", "/nodes/:nodeId/versions/:version/comfy-nodes", "/nodes/:nodeId/versions/:version/comfy-nodes/:hostNodeName"]) {
      expect(aliased.has(path), path).toBe(true)
    }
  })
})

describe("the media proxy's paths under the vendors' words (IMAGEVENDOR_PATH_ALIAS, MUSICVENDOR_PATH_ALIAS)", () => {
  const patterns = Object.values(Api.groups).flatMap((g) => Object.values(g.endpoints).map((e) => e.path))
  const vendorWord = fc.oneof(fc.constant(""), fc.stringMatching(/^[a-z0-9_-]{1,12}$/))
  // routes another change may add under the prefixes: the alias is by prefix, so they get it too
  const future = ["/proxy/imagevendor/v1/ai/image-upscaler", "/proxy/imagevendor/v1/ai/image-relight/:task_id", "/proxy/musicvendor/t2m/generate"]

  it("moves exactly the routes under a vendor's prefix to /proxy/<word>/, the rest of the path kept", () =>
    forAllSync([vendorWord, vendorWord], ([image, music]) => {
      const aliasOf = aliasPatterns({ hostName: "", hostNode: "", imageVendorPath: image, musicVendorPath: music })
      for (const pattern of [...patterns, ...future]) {
        const expected = pattern.startsWith("/proxy/imagevendor/") && image !== "" && image !== "imagevendor"
          ? [pattern.replace("/proxy/imagevendor/", `/proxy/${image}/`)]
          : pattern.startsWith("/proxy/musicvendor/") && music !== "" && music !== "musicvendor"
          ? [pattern.replace("/proxy/musicvendor/", `/proxy/${music}/`)]
          : movedKeys(pattern)
          ? [pattern.replace("/customers/api-keys", "/users/api-keys")]
          : []
        expect(aliasOf(pattern), pattern).toEqual(expected)
      }
    }))

  it("gives the host application's paths with its words (nodes_magnific.py, nodes_sonilo.py)", () => {
    const aliasOf = aliasPatterns({ ...defaults, imageVendorPath: "freepik", musicVendorPath: "sonilo" })
    const aliased = new Set([...patterns, ...future].flatMap(aliasOf))
    for (const path of ["/proxy/freepik/v1/ai/skin-enhancer/creative", "/proxy/freepik/v1/ai/image-style-transfer/:task_id", "/proxy/freepik/v1/ai/image-upscaler", "/proxy/sonilo/v2m/generate", "/proxy/sonilo/t2m/generate"]) {
      expect(aliased.has(path), path).toBe(true)
    }
  })

  it("the settings are empty by default, take lowercase letters, digits, - and _, and refuse the rest naming the setting", () =>
    forAllSync([fc.string({ maxLength: 8 })], ([raw]) => {
      const read = (env: Record<string, string>) =>
        Effect.runSync(Effect.result(appConfig.parse(ConfigProvider.fromEnv({ env, preserveEmptyStrings: true }))))
      const result = read({ MUSICVENDOR_PATH_ALIAS: raw })
      if (/^[a-z0-9_-]*$/.test(raw.trim())) {
        expect(Result.getOrThrow(result).aliases.musicVendorPath).toBe(raw.trim())
        expect(Result.getOrThrow(result).aliases.imageVendorPath).toBe("")
      } else {
        if (Result.isSuccess(result)) throw new Error(`${JSON.stringify(raw)} was accepted`)
        expect(String(result.failure)).toContain("MUSICVENDOR_PATH_ALIAS must be lowercase letters, digits, '-' and '_'")
      }
    }))
})
