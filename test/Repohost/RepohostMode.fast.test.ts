/**
 * REPOHOST_MODE: `live` unless the operator sets exactly `simulated`; any other value stops the
 * start-up naming the setting, rather than falling back to either mode.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, FastCheck as fc } from "effect"
import { appConfig } from "../../src/Config.ts"

const read = (env: Record<string, string>) =>
  Effect.runSync(Effect.either(Effect.withConfigProvider(appConfig, ConfigProvider.fromMap(new Map(Object.entries(env))))))

describe("the setting REPOHOST_MODE", () => {
  it("is live by default, simulated when set so, and apart from VENDOR_MODE", () => {
    expect(Either.getOrThrow(read({})).repohostMode).toBe("live")
    expect(Either.getOrThrow(read({ REPOHOST_MODE: "simulated" })).repohostMode).toBe("simulated")
    expect(Either.getOrThrow(read({ REPOHOST_MODE: "live" })).repohostMode).toBe("live")
    expect(Either.getOrThrow(read({ VENDOR_MODE: "simulated" })).repohostMode).toBe("live")
  })

  it.prop("refuses any other value, naming the setting", [fc.string({ maxLength: 12 }).filter((s) => s !== "live" && s !== "simulated")], ([raw]) => {
    const result = read({ REPOHOST_MODE: raw })
    if (Either.isRight(result)) throw new Error(`${JSON.stringify(raw)} was accepted as ${result.right.repohostMode}`)
    expect(String(result.left)).toContain("REPOHOST_MODE")
  })
})
