/**
 * `CORS_ORIGINS` (Web/Origins.ts): `*` alone, or a list of origins serialized as browsers send
 * them in `Origin`; anything else is a configuration error naming the setting.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Result } from "effect"
import * as fc from "fast-check"
import { appConfig } from "../../src/Config.ts"
import { parseCorsOrigins } from "../../src/Config.ts"
import { forAllSync } from "../support/Property.ts"

// not `xx--…`: such a label is punycode (`xn--a` is refused as a host), a spelling of another name
const label = fc.stringMatching(/^[a-z]([a-z0-9-]{0,10}[a-z0-9])?$/).filter((l) => l.slice(2, 4) !== "--")
const host = fc.oneof(
  fc.array(label, { minLength: 1, maxLength: 3 }).map((labels) => labels.join(".")),
  fc.constantFrom("localhost", "127.0.0.1", "[::1]")
)
const origin = fc.record({
  scheme: fc.constantFrom("http", "https"),
  host,
  port: fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined })
}).map(({ scheme, host, port }) => new URL(`${scheme}://${host}${port === undefined ? "" : `:${port}`}`).origin)

/** Variations on an origin's spelling that name the same origin. */
const spelling = fc.constantFrom(
  (o: string) => o,
  (o: string) => `${o}/`,
  (o: string) => o.toUpperCase().replace(/^HTTP(S?):/, "http$1:"),
  (o: string) => ` ${o} `
)

/** Entries that are not an origin: a path, a query, a fragment, a user, a wildcard, another scheme, no scheme. */
const notAnOrigin = fc.oneof(
  origin.map((o) => `${o}/app`),
  origin.map((o) => `${o}?x=1`),
  origin.map((o) => `${o}#top`),
  origin.map((o) => o.replace("://", "://user@")),
  origin.map((o) => o.replace("://", "://*.")),
  origin.map((o) => o.replace(/^https?:/, "ftp:")),
  origin.map((o) => o.replace(/^https?:\/\//, "")),
  fc.constantFrom("null", "*.example.com", "http://", "https://exa mple.com", "http://host:99999")
)

const refused = (raw: string) => {
  const parsed = parseCorsOrigins(raw)
  if (Result.isSuccess(parsed)) expect.fail(`"${raw}" was accepted as ${String(parsed.success)}`)
  expect(parsed.failure).toContain("CORS_ORIGINS")
}

describe("CORS_ORIGINS", () => {
  it("empty or unset turns CORS off; `*` alone is any origin", () => {
    expect(parseCorsOrigins("")).toEqual(Result.succeed(new Set()))
    expect(parseCorsOrigins(" , ")).toEqual(Result.succeed(new Set()))
    expect(parseCorsOrigins(" * ")).toEqual(Result.succeed("*"))
  })

  it("a list of origins, however spelt, is the set of their serializations", () =>
    forAllSync([fc.array(fc.tuple(origin, spelling), { minLength: 1, maxLength: 5 })], ([entries]) => {
      const parsed = parseCorsOrigins(entries.map(([o, spell]) => spell(o)).join(","))
      expect(parsed).toEqual(Result.succeed(new Set(entries.map(([o]) => o))))
    }))

  it("an entry that is not an origin, anywhere in the list, is refused naming the setting and the entry", () =>
    forAllSync([fc.array(origin, { maxLength: 3 }), notAnOrigin, fc.nat()], ([good, bad, at]) => {
      const entries = [...good]
      entries.splice(at % (good.length + 1), 0, bad)
      refused(entries.join(","))
      expect(Result.getFailure(parseCorsOrigins(entries.join(",")))).toEqual(expect.objectContaining({ value: expect.stringContaining(bad.trim()) }))
    }))

  it("`*` among origins is refused", () =>
    forAllSync([fc.array(origin, { minLength: 1, maxLength: 3 })], ([origins]) => {
      refused([...origins, "*"].join(","))
    }))

  it.effect("a malformed setting fails the configuration at start-up, naming CORS_ORIGINS", () =>
    Effect.gen(function*() {
      const provider = (value: string) => ConfigProvider.fromEnv({ env: { CORS_ORIGINS: value }, preserveEmptyStrings: true })
      const error = yield* Effect.flip(appConfig.parse(provider("https://app.example/path")))
      expect(String(error)).toContain("CORS_ORIGINS")
      const config = yield* appConfig.parse(provider("https://app.example, http://localhost:5173"))
      expect(config.corsOrigins).toEqual(new Set(["https://app.example", "http://localhost:5173"]))
    }))
})
