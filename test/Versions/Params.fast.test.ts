/**
 * Validation of the parameters and bodies of `GET /versions`, `POST /bulk/nodes/versions` and
 * `GET /host-nodes`, by property: what the schemas accept is exactly what the contract says, page
 * sizes are clamped rather than refused, and a refusal names the parameter or field (the 400's
 * message is the schema's).
 */
import { describe, expect, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import * as fc from "fast-check"
import { ListAllHostNodesParams } from "../../src/HostNodes/Api.ts"
import { maxHostNodePageSize } from "../../src/Domain/HostNode.ts"
import { NodeVersionStatus } from "../../src/Domain/Node.ts"
import { BulkNodeVersionsRequest, maxBulkVersions, maxVersionPageSize } from "../../src/Domain/Versions.ts"
import { ListAllNodeVersionsParams } from "../../src/Versions/Api.ts"
import { forAllSync } from "../support/Property.ts"

const decodeQueue = Schema.decodeUnknownResult(ListAllNodeVersionsParams)
const decodeHostNodes = Schema.decodeUnknownResult(ListAllHostNodesParams)
const decodeBulk = Schema.decodeUnknownResult(BulkNodeVersionsRequest)

/** The refusal's message, which the 400 carries; fails the test when the value was accepted. */
const refusal = <A, E extends { message: string }>(result: Result.Result<A, E>): string =>
  Result.match(result, { onFailure: (e) => e.message, onSuccess: (a) => expect.fail(`accepted: ${JSON.stringify(a)}`) })

const accepted = <A, E>(result: Result.Result<A, E>): A =>
  Result.getOrElse(result, (e) => expect.fail(`refused: ${String(e)}`))

const statuses = NodeVersionStatus.literals
const notAStatus = fc.string({ maxLength: 30 }).filter((s) => !(statuses as ReadonlyArray<string>).includes(s))
const positive = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER })
const notPositive = fc.oneof(
  fc.integer({ min: -1_000_000, max: 0 }).map(String),
  fc.double({ min: 0.01, max: 1e6, noInteger: true, noNaN: true }).map(String),
  fc.constantFrom("", "x", "ten", "NaN", "1,5", "true")
)
const text = (max: number) => fc.string({ maxLength: max }).filter((s) => !s.includes("\u0000"))

describe("GET /versions parameters", () => {
  it("pageSize: any positive integer, served as at most 100", () => forAllSync({ n: positive }, ({ n }) => {
    expect(accepted(decodeQueue({ pageSize: String(n) })).pageSize).toBe(Math.min(n, maxVersionPageSize))
  }))

  it("page and pageSize: zero, negatives, fractions and words are refused, naming the parameter", () => forAllSync({
    value: notPositive,
    key: fc.constantFrom("page", "pageSize")
  }, ({ key, value }) => {
    expect(refusal(decodeQueue({ [key]: value }))).toContain(key)
  }))

  it("statuses: any list of statuses is kept as given", () => forAllSync({
    asked: fc.array(fc.constantFrom(...statuses), { minLength: 1, maxLength: 5 })
  }, ({ asked }) => {
    expect(accepted(decodeQueue({ statuses: asked })).statuses).toEqual(asked)
  }))

  it("statuses: one value that is not a status refuses the list, naming it", () => forAllSync({
    asked: fc.array(fc.constantFrom(...statuses), { maxLength: 4 }),
    bad: notAStatus,
    at: fc.nat()
  }, ({ asked, at, bad }) => {
    const list: Array<string> = [...asked]
    list.splice(at % (list.length + 1), 0, bad)
    expect(refusal(decodeQueue({ statuses: list }))).toContain("statuses")
  }))

  it("include_status_reason: true/1 and false/0 only", () => forAllSync({ s: fc.string({ maxLength: 6 }) }, ({ s }) => {
    const result = decodeQueue({ include_status_reason: s })
    if (["true", "1"].includes(s)) expect(accepted(result).include_status_reason).toBe(true)
    else if (["false", "0"].includes(s)) expect(accepted(result).include_status_reason).toBe(false)
    else expect(refusal(result)).toContain("include_status_reason")
  }))

  it("nodeId and status_reason: any text up to 200 characters; longer is refused, naming it", () => forAllSync({
    key: fc.constantFrom("nodeId", "status_reason"),
    ok: text(200),
    long: fc.string({ minLength: 201, maxLength: 400 })
  }, ({ key, long, ok }) => {
    expect(accepted(decodeQueue({ [key]: ok }))).toEqual({ [key]: ok })
    expect(refusal(decodeQueue({ [key]: long }))).toContain(key)
  }))
})

describe("POST /bulk/nodes/versions body", () => {
  const pair = fc.record({ node_id: text(200), version: text(200) })

  it("any list of pairs up to the maximum is accepted as it is", () => forAllSync({ pairs: fc.array(pair, { maxLength: 50 }) }, ({ pairs }) => {
    expect(accepted(decodeBulk({ node_versions: pairs }))).toEqual({ node_versions: pairs })
  }))

  it("a pair without a field, or with a non-string one, refuses the body, naming the field", () => forAllSync({
    pairs: fc.array(pair, { maxLength: 5 }),
    field: fc.constantFrom("node_id", "version"),
    value: fc.constantFrom(undefined, null, 7, true, ["1.0.0"], {}),
    at: fc.nat()
  }, ({ at, field, pairs, value }) => {
    const list: Array<Record<string, unknown>> = pairs.map((p) => ({ ...p }))
    const broken: Record<string, unknown> = { node_id: "n", version: "1.0.0", [field]: value }
    if (value === undefined) delete broken[field]
    list.splice(at % (list.length + 1), 0, broken)
    expect(refusal(decodeBulk({ node_versions: list }))).toContain(field)
  }))

  it("more pairs than the maximum are refused, saying the maximum", () => {
    const pairs = Array.from({ length: maxBulkVersions + 1 }, () => ({ node_id: "n", version: "1.0.0" }))
    expect(refusal(decodeBulk({ node_versions: pairs }))).toContain(String(maxBulkVersions))
    expect(accepted(decodeBulk({ node_versions: pairs.slice(1) })).node_versions).toHaveLength(maxBulkVersions)
  })
})

describe("GET /host-nodes parameters", () => {
  it("pageSize: any positive integer, served as at most 500", () => forAllSync({ n: positive }, ({ n }) => {
    expect(accepted(decodeHostNodes({ pageSize: String(n) })).pageSize).toBe(Math.min(n, maxHostNodePageSize))
  }))

  it("page and pageSize: anything else is refused, naming the parameter", () => forAllSync({
    value: notPositive,
    key: fc.constantFrom("page", "pageSize")
  }, ({ key, value }) => {
    expect(refusal(decodeHostNodes({ [key]: value }))).toContain(key)
  }))

  it("filters: any text up to 200 characters without NUL; a NUL is refused, naming the filter", () => forAllSync({
    key: fc.constantFrom("node_id", "node_version", "host_node_name"),
    ok: text(200)
  }, ({ key, ok }) => {
    expect(accepted(decodeHostNodes({ [key]: ok }))).toEqual({ [key]: ok })
    expect(refusal(decodeHostNodes({ [key]: `${ok.slice(0, 10)}\u0000` }))).toContain(key)
  }))
})
