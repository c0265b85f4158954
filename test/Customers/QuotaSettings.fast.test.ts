/**
 * The quota settings and the RateLimit fields, without a service: QUOTA_OPERATIONS_PER_DAY read
 * back as written for random lists and refused (naming the entry) when one entry is broken;
 * empty limits are no limit; the fields of draft-ietf-httpapi-ratelimit-headers well formed for
 * random limits.
 */
import { expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Option, Result } from "effect"
import * as fc from "fast-check"
import { appConfig, operationQuota, parseOperationQuotas } from "../../src/Config.ts"
import { quotaFields } from "../../src/Customers/Metering.ts"
import { forAllSync } from "../support/Property.ts"

const operation = fc.stringMatching(/^[a-z0-9][a-z0-9/_-]{0,20}$/)
const count = fc.integer({ min: 0, max: 1_000_000_000 })

it("QUOTA_OPERATIONS_PER_DAY: a default and operation=number entries read back as written", () =>
  forAllSync({ fallback: fc.option(count, { nil: undefined }), entries: fc.uniqueArray(fc.tuple(operation, count), { selector: ([o]) => o, maxLength: 6 }) }, ({ fallback, entries }) => {
    const raw = [...(fallback === undefined ? [] : [String(fallback)]), ...entries.map(([o, n]) => ` ${o} = ${n} `)].join(",")
    const parsed = Result.getOrThrow(parseOperationQuotas(raw))
    for (const [o, n] of entries) expect(operationQuota(parsed, o)).toEqual(Option.some(n))
    expect(operationQuota(parsed, "not-named/op")).toEqual(fallback === undefined ? Option.none() : Option.some(fallback))
  }))

it("QUOTA_OPERATIONS_PER_DAY: a broken entry is refused, naming it", () =>
  forAllSync({ bad: fc.constantFrom("-1", "1.5", "x", "op=", "=3", "Op=3", "op=1e3", "op=0x10"), entries: fc.array(fc.tuple(operation, count), { maxLength: 3 }) }, ({ bad, entries }) => {
    const raw = [...entries.map(([o, n]) => `${o}=${n}`), bad].join(",")
    const refused = parseOperationQuotas(raw)
    expect(Result.isFailure(refused)).toBe(true)
    if (Result.isFailure(refused)) expect(refused.failure).toContain(`"${bad}"`)
  }))

/** The settings of `env`, an empty variable a value (as the service reads its environment, Config.ts `environment`). */
const settings = (env: Record<string, string>) =>
  Effect.runSyncExit(appConfig.parse(ConfigProvider.fromEnv({ env, preserveEmptyStrings: true })))

it("empty limits are no limit; the defaults are 500 a day, 10 in flight, 5 GiB a day", () => {
  const defaults = settings({})
  expect(Exit.isSuccess(defaults)).toBe(true)
  if (Exit.isSuccess(defaults)) {
    expect(operationQuota(defaults.value.quotas.operationsPerDay, "image-style-transfer")).toEqual(Option.some(500))
    expect(defaults.value.quotas.tasksInFlight).toEqual(Option.some(10))
    expect(defaults.value.quotas.uploadBytesPerDay).toEqual(Option.some(5 * 1024 ** 3))
  }
  const empty = settings({ QUOTA_OPERATIONS_PER_DAY: "", QUOTA_TASKS_IN_FLIGHT: "", QUOTA_UPLOAD_BYTES_PER_DAY: "" })
  expect(Exit.isSuccess(empty)).toBe(true)
  if (Exit.isSuccess(empty)) {
    expect(operationQuota(empty.value.quotas.operationsPerDay, "video-to-music")).toEqual(Option.none())
    expect(empty.value.quotas.tasksInFlight).toEqual(Option.none())
    expect(empty.value.quotas.uploadBytesPerDay).toEqual(Option.none())
  }
  expect(Exit.isFailure(settings({ QUOTA_TASKS_IN_FLIGHT: "ten" }))).toBe(true)
})

it("RateLimit-Policy and RateLimit are structured-field lists of one named item", () =>
  forAllSync({
    quota: fc.constantFrom("day" as const, "flight" as const),
    operation: fc.constantFrom("image-style-transfer", "video-to-music", "media-upload"),
    limit: count,
    remaining: fc.integer({ min: -5, max: 1_000_000_000 }),
    reset: fc.double({ min: 0, max: 86_400, noNaN: true })
  }, ({ quota, operation, limit, remaining, reset }) => {
    const fields = quotaFields(quota, operation, limit, remaining, reset)
    const item = /^"([a-z-]+)";/
    const policy = fields["ratelimit-policy"]
    const now = fields["ratelimit"]
    expect(policy).toMatch(/^"[a-z-]+";q=\d+;qu="(requests|content-bytes|concurrent-requests)"(;w=86400)?$/)
    expect(now).toMatch(/^"[a-z-]+";r=\d+;t=\d+$/)
    expect(item.exec(policy)![1]).toBe(item.exec(now)![1])
    expect(policy).toContain(`;q=${limit};`)
    expect(now).toContain(`;r=${Math.max(0, remaining)};`)
    expect(policy.endsWith(";w=86400")).toBe(quota === "day")
  }))
