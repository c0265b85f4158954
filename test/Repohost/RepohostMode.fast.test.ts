/**
 * REPOHOST_MODE: `live` unless the operator sets exactly `simulated`; any other value stops the
 * start-up naming the setting, rather than falling back to either mode.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Result } from "effect"
import * as fc from "fast-check"
import { appConfig } from "../../src/Config.ts"
import { forAllSync } from "../support/Property.ts"

const read = (env: Record<string, string>) =>
  Effect.runSync(Effect.result(appConfig.parse(ConfigProvider.fromEnv({ env, preserveEmptyStrings: true }))))

describe("the setting REPOHOST_MODE", () => {
  it("is live by default, simulated when set so, and apart from VENDOR_MODE", () => {
    expect(Result.getOrThrow(read({})).repohostMode).toBe("live")
    expect(Result.getOrThrow(read({ REPOHOST_MODE: "simulated" })).repohostMode).toBe("simulated")
    expect(Result.getOrThrow(read({ REPOHOST_MODE: "live" })).repohostMode).toBe("live")
    expect(Result.getOrThrow(read({ VENDOR_MODE: "simulated" })).repohostMode).toBe("live")
  })

  it("refuses any other value, naming the setting", () =>
    forAllSync([fc.string({ maxLength: 12 }).filter((s) => s !== "live" && s !== "simulated")], ([raw]) => {
      const result = read({ REPOHOST_MODE: raw })
      if (Result.isSuccess(result)) throw new Error(`${JSON.stringify(raw)} was accepted as ${result.success.repohostMode}`)
      expect(String(result.failure)).toContain("REPOHOST_MODE")
    }))
})
