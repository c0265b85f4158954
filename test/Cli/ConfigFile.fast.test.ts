/**
 * The saved login: where it lives, and that the token is only ever in a 0600 file inside a
 * directory created 0700, even when the file existed with a looser mode or the umask is loose.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { configPath, readLogin, writeLogin } from "../../src/Cli/ConfigFile.ts"
import { reportOf } from "../../src/Cli/Failure.ts"
import { target } from "../../src/Cli/Session.ts"

const tempDir = Effect.acquireRelease(
  Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "registry-config-"))),
  (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
)

/** The environment as these variables, and nothing else. */
const env = (vars: Record<string, string>) =>
  Layer.merge(NodeServices.layer, ConfigProvider.layer(ConfigProvider.fromEnv({ env: vars })))

const modeOf = (file: string) => Effect.promise(() => fs.stat(file).then((s) => s.mode & 0o777))

describe("the config file", () => {
  it.effect("REGISTRY_CONFIG, else $XDG_CONFIG_HOME/registry, else ~/.config/registry", () =>
    Effect.gen(function*() {
      expect(yield* configPath.pipe(Effect.provide(env({ REGISTRY_CONFIG: "/x/c.json", XDG_CONFIG_HOME: "/xdg" })))).toBe("/x/c.json")
      expect(yield* configPath.pipe(Effect.provide(env({ XDG_CONFIG_HOME: "/xdg" })))).toBe("/xdg/registry/config.json")
      expect(yield* configPath.pipe(Effect.provide(env({})))).toBe(path.join(os.homedir(), ".config", "registry", "config.json"))
    }))

  it.effect("a new file is 0600 in a new 0700 directory, even under a loose umask", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = path.join(dir, "nested", "registry", "config.json")
      const previous = process.umask(0o000)
      yield* Effect.addFinalizer(() => Effect.sync(() => process.umask(previous)))
      const written = yield* writeLogin({ url: "http://r", token: "secret" }).pipe(Effect.provide(env({ XDG_CONFIG_HOME: path.join(dir, "nested") })))
      expect(written).toBe(file)
      expect(yield* modeOf(file)).toBe(0o600)
      expect(yield* modeOf(path.dirname(file))).toBe(0o700)
      expect(yield* modeOf(path.join(dir, "nested"))).toBe(0o700)
      expect(JSON.parse(yield* Effect.promise(() => fs.readFile(file, "utf8")))).toEqual({ url: "http://r", token: "secret" })
      // no temporary file left beside it
      expect(yield* Effect.promise(() => fs.readdir(path.dirname(file)))).toEqual(["config.json"])
    }))

  it.effect("an existing world-readable file is replaced by a 0600 one; an existing directory keeps its mode", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* Effect.promise(() => fs.chmod(dir, 0o755))
      const file = path.join(dir, "config.json")
      yield* Effect.promise(() => fs.writeFile(file, "{}", { mode: 0o644 }))
      yield* Effect.promise(() => fs.chmod(file, 0o666))
      const layer = env({ REGISTRY_CONFIG: file })
      yield* writeLogin({ url: "http://r", token: "t2" }).pipe(Effect.provide(layer))
      expect(yield* modeOf(file)).toBe(0o600)
      expect(yield* modeOf(dir)).toBe(0o755)
      expect(yield* readLogin.pipe(Effect.provide(layer))).toEqual(Option.some({ url: "http://r", token: "t2" }))
    }))

  it.effect("no file: not logged in (usage); a broken file: a usage failure naming it", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = path.join(dir, "config.json")
      const layer = env({ REGISTRY_CONFIG: file })
      expect(yield* readLogin.pipe(Effect.provide(layer))).toEqual(Option.none())
      const notLoggedIn = reportOf(yield* Effect.flip(target.pipe(Effect.provide(layer))))
      expect(notLoggedIn).toMatchObject({ kind: "usage", code: "not_logged_in" })
      expect(notLoggedIn.message).toContain("registry login --url")
      yield* Effect.promise(() => fs.writeFile(file, "not json"))
      const broken = reportOf(yield* Effect.flip(readLogin.pipe(Effect.provide(layer))))
      expect(broken).toMatchObject({ kind: "usage", code: "bad_config" })
      expect(broken.message).toContain(file)
    }))
})
