/**
 * The clients' words in answers (src/Compat/Answers.ts), as a property over any JSON: the names
 * added are exactly the table's for the interface names present, each holding its interface
 * name's value; nothing else changes but a host-node policy's spelling; adding twice adds nothing;
 * empty words add nothing and give back the very same value.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { addsNames, answerAliases, withClientNames } from "../../src/Compat/Answers.ts"
import { forAllSync } from "../support/Property.ts"

const defaults = { hostName: "comfyui", hostNode: "comfy_node", repohost: "github" }
const table = answerAliases(defaults)
const beside = new Map([...table.node, ...table.version, ...table.hostNode])

const policies = ["HostNodePolicyActive", "HostNodePolicyBanned", "HostNodePolicyLocalOnly"]

/** JSON whose objects often hold the interface's names, and policies. */
const answer = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.jsonValue({ maxDepth: 1 }),
    fc.array(tie("value"), { maxLength: 3 }),
    tie("record")
  ),
  record: fc.dictionary(
    fc.oneof(fc.constantFrom(...beside.keys(), "policy", "id"), fc.string({ maxLength: 6 })),
    fc.oneof(tie("value"), fc.constantFrom(...policies)),
    { maxKeys: 5 }
  )
})).value

/** The value with every key the renaming added taken out again, and policies spelt the interface's way. */
const withoutAdded = (before: unknown, after: unknown): unknown => {
  if (Array.isArray(after)) return after.map((item, i) => withoutAdded((before as Array<unknown>)[i], item))
  if (typeof after !== "object" || after === null) {
    return typeof after === "string" ? after.replace(/^ComfyNodePolicy/, "HostNodePolicy") : after
  }
  const original = before as Record<string, unknown>
  return Object.fromEntries(
    Object.entries(after).filter(([key]) => key in original).map(([key, value]) => [key, withoutAdded(original[key], value)])
  )
}

describe("withClientNames", () => {
  const rename = withClientNames(table)

  it("adds each present interface name's clients' name with its value, changes policies' spelling only, once", () =>
    forAllSync([answer], ([value]) => {
      const renamed = rename(value)
      expect(withoutAdded(value, renamed)).toEqual(value)
      expect(rename(renamed)).toEqual(renamed)
      const check = (before: unknown, after: unknown): void => {
        if (Array.isArray(before)) return before.forEach((item, i) => check(item, (after as Array<unknown>)[i]))
        if (typeof before !== "object" || before === null) return
        const out = after as Record<string, unknown>
        for (const [key, inner] of Object.entries(before)) {
          check(inner, out[key])
          const alias = beside.get(key)
          if (alias !== undefined && !(alias in before)) expect(out[alias]).toEqual(out[key])
          if (key === "policy" && typeof inner === "string" && policies.includes(inner)) {
            expect(out[key]).toBe(inner.replace("HostNode", "ComfyNode"))
          }
        }
      }
      check(value, renamed)
    }))

  it("with every word empty adds nothing, and gives back the very same value", () =>
    forAllSync([answer], ([value]) => {
      const none = answerAliases({ hostName: "", hostNode: "", repohost: "" })
      expect(addsNames(none)).toBe(false)
      expect(withClientNames(none)(value)).toBe(value)
    }))

  it("names the default words as the clients read them", () => {
    expect(table).toEqual({
      node: [
        ["supported_host_version", "supported_comfyui_version"],
        ["supported_host_frontend_version", "supported_comfyui_frontend_version"],
        ["preempted_host_node_names", "preempted_comfy_node_names"],
        ["repohost_stars", "github_stars"]
      ],
      version: [
        ["supported_host_version", "supported_comfyui_version"],
        ["supported_host_frontend_version", "supported_comfyui_frontend_version"],
        ["host_node_extract_status", "comfy_node_extract_status"]
      ],
      hostNode: [["host_node_name", "comfy_node_name"], ["host_nodes", "comfy_nodes"]],
      policyPrefix: "ComfyNodePolicy"
    })
  })
})
