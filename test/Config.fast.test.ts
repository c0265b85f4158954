/**
 * The settings, each declared once in src/Config.ts: the variables it reads are the table of
 * docs/operating.md, and the rules between settings (derived defaults, floors) hold for any value given.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Result } from "effect"
import * as fc from "fast-check"
import * as fs from "node:fs"
import * as path from "node:path"
import { appConfig } from "../src/Config.ts"
import { forAllSync } from "./support/Property.ts"

const read = (env: Record<string, string>) =>
  Result.getOrThrow(Effect.runSync(Effect.result(appConfig.parse(ConfigProvider.fromEnv({ env, preserveEmptyStrings: true })))))

/** Every variable the configuration asks for when none is set (fallbacks included). */
const variablesRead = (): ReadonlySet<string> => {
  const names = new Set<string>()
  Effect.runSync(appConfig.parse(ConfigProvider.make((at) => {
    names.add(at.join("."))
    return Effect.succeed(undefined)
  })))
  return names
}

/** The variables of the first column of the table in docs/operating.md, "Settings". */
const variablesDocumented = (): ReadonlySet<string> => {
  const page = fs.readFileSync(path.join(import.meta.dirname, "..", "docs", "operating.md"), "utf8")
  const table = page.slice(page.indexOf("## Settings"), page.indexOf("## Logs"))
  const cells = [...table.matchAll(/^\| ((?:`[A-Z0-9_]+`(?:, )?)+) \|/gm)].map((m) => m[1]!)
  return new Set(cells.flatMap((cell) => [...cell.matchAll(/`([A-Z0-9_]+)`/g)].map((m) => m[1]!)))
}

/** Read but not rows of the table, each for a reason. */
const undocumentedOnPurpose = new Set([
  // the SDK's own variable, named in S3_REGION's default
  "AWS_REGION",
  // tests only: the crash-consistency test's (docs/design/publishing.md, "Crash-consistent archives")
  "FAULT_INJECT_STORAGE"
])

const domain = fc.domain().map((d) => d.toLowerCase())

describe("the configuration", () => {
  it("reads exactly the variables of docs/operating.md's table", () => {
    const readNames = variablesRead()
    const documented = variablesDocumented()
    expect(documented.size).toBeGreaterThan(50)
    expect([...readNames].filter((name) => !documented.has(name)).sort()).toEqual([...undocumentedOnPurpose].sort())
    expect([...documented].filter((name) => !readNames.has(name))).toEqual([])
  })

  it("derives PUBLIC_BASE_URL from PORT, and drops a given one's trailing slashes", () =>
    forAllSync({ port: fc.integer({ min: 1, max: 65535 }), host: domain, slashes: fc.string({ unit: fc.constant("/"), maxLength: 3 }) }, ({ port, host, slashes }) => {
      expect(read({ PORT: String(port) }).publicBaseUrl).toBe(`http://localhost:${port}`)
      expect(read({ PORT: String(port), PUBLIC_BASE_URL: `https://${host}${slashes}` }).publicBaseUrl).toBe(`https://${host}`)
    }))

  it("derives METRICS_HOST from HOST, and STORAGE_DIR from DATA_DIR", () =>
    forAllSync({ host: fc.ipV4(), other: fc.ipV4(), dir: fc.stringMatching(/^[a-z0-9_./-]{1,24}$/) }, ({ host, other, dir }) => {
      expect(read({ HOST: host }).metrics.host).toBe(host)
      expect(read({ HOST: host, METRICS_HOST: other }).metrics.host).toBe(other)
      expect(read({ DATA_DIR: dir }).storage.dir).toBe(path.join(path.resolve(dir), "archives"))
      expect(read({ DATA_DIR: dir, STORAGE_DIR: `${dir}/elsewhere` }).storage.dir).toBe(path.resolve(dir, "elsewhere"))
    }))

  it("derives REPOHOST_WEB_HOST from REPOHOST_API_URL's host without `api.`, in lowercase", () =>
    forAllSync({ host: domain, given: domain }, ({ host, given }) => {
      const apiUrl = `https://API.${host.toUpperCase()}/`
      const repohost = read({ REPOHOST_API_URL: apiUrl }).repohost
      expect(repohost).toEqual({ apiUrl: `https://API.${host.toUpperCase()}`, timeoutMillis: 10_000, webHost: host })
      expect(read({ REPOHOST_API_URL: apiUrl, REPOHOST_WEB_HOST: given.toUpperCase() }).repohost.webHost).toBe(given)
    }))

  it("sends spans to the traces URL, else to the general endpoint's /v1/traces", () =>
    forAllSync({ base: domain, traces: domain }, ({ base, traces }) => {
      expect(read({}).tracing.tracesUrl._tag).toBe("None")
      expect(read({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://${base}:4318/` }).tracing.tracesUrl).toEqual(
        read({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://${base}:4318/v1/traces` }).tracing.tracesUrl
      )
      const both = read({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://${base}:4318`, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://${traces}/t` })
      expect(both.tracing.tracesUrl).toEqual(read({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://${traces}/t` }).tracing.tracesUrl)
    }))

  it("RATE_LIMIT_ANONYMOUS_PER_MINUTE: 600 unless set, any count read back, 0 off; a negative number or a word refused naming it", () => {
    expect(read({}).rateLimit.anonymousPerWindow).toBe(600)
    expect(read({}).rateLimit.windowMillis).toBe(60_000)
    forAllSync([fc.integer({ min: 0, max: 2 ** 31 - 1 })], ([n]) => {
      expect(read({ RATE_LIMIT_ANONYMOUS_PER_MINUTE: String(n) }).rateLimit.anonymousPerWindow).toBe(n)
    })
    for (const wrong of ["-1", "ten", "1.5"]) {
      expect(() => read({ RATE_LIMIT_ANONYMOUS_PER_MINUTE: wrong })).toThrow(/RATE_LIMIT_ANONYMOUS_PER_MINUTE/)
    }
  })

  it("never lets a zero or negative number turn a limit, a duration or an interval off", () => {
    const numeric = [...variablesRead()].filter((name) => /_(SECONDS|BYTES|LIMIT|DELAY)$/.test(name))
    expect(numeric.length).toBeGreaterThan(20)
    // zero on purpose: no cache, no skew allowed, nothing drained after a refusal
    const zeroAllowed = new Set(["listCacheTtlMillis", "auth.clockSkewSeconds", "refusedBodies.drainBytes"])
    forAllSync([fc.tuple(...numeric.map(() => fc.integer({ min: -100_000, max: 100_000 })))], ([values]) => {
      const config = read(Object.fromEntries(numeric.map((name, i) => [name, String(values[i])])))
      const numbers = (value: unknown, at: string): Array<readonly [string, number]> =>
        typeof value === "number"
          ? [[at, value]]
          : value !== null && typeof value === "object" && !(Symbol.iterator in value) && !("_tag" in value)
          ? Object.entries(value).flatMap(([key, inner]) => numbers(inner, at === "" ? key : `${at}.${key}`))
          : []
      for (const [at, value] of numbers(config, "").filter(([at]) => at !== "port")) {
        expect(value, at).toBeGreaterThanOrEqual(zeroAllowed.has(at) ? 0 : 1)
      }
    })
  })
})
