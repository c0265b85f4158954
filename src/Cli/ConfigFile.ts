/**
 * The CLI's saved login: the service's base URL and a bearer token, in a JSON file only its owner
 * may read (0600, in a directory created 0700), because the token is a credential.
 *
 * Where: `REGISTRY_CONFIG` if set, else `$XDG_CONFIG_HOME/registry/config.json`, else
 * `~/.config/registry/config.json`.
 */
import { Config, Effect, FileSystem, Option, Schema } from "effect"
import { randomBytes } from "node:crypto"
import * as os from "node:os"
import * as path from "node:path"
import { failed, usage } from "./Failure.ts"

export const SavedLogin = Schema.Struct({
  url: Schema.String,
  token: Schema.optional(Schema.String)
})
export type SavedLogin = typeof SavedLogin.Type

const fileMode = 0o600
const directoryMode = 0o700

/** The configuration file's path, from the environment. */
export const configPath: Effect.Effect<string> = Effect.gen(function*() {
  const explicit = yield* Config.option(Config.NonEmptyString("REGISTRY_CONFIG"))
  if (Option.isSome(explicit)) return path.resolve(explicit.value)
  const xdg = yield* Config.option(Config.NonEmptyString("XDG_CONFIG_HOME"))
  const base = Option.getOrElse(xdg, () => path.join(os.homedir(), ".config"))
  return path.join(base, "registry", "config.json")
}).pipe(Effect.orDie)

const decode = Schema.decodeUnknownEffect(Schema.fromJsonString(SavedLogin))
const encode = (login: SavedLogin) => JSON.stringify(login, null, 2) + "\n"

/** The saved login, if there is one. */
export const readLogin = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const file = yield* configPath
  const text = yield* fs.readFileString(file).pipe(
    Effect.map(Option.some),
    Effect.catchIf((e) => e.reason._tag === "NotFound", () => Effect.succeed(Option.none<string>())),
    Effect.mapError((e) => failed("config_unreadable", `cannot read ${file}: ${e.message}`))
  )
  if (Option.isNone(text)) return Option.none<SavedLogin>()
  return Option.some(
    yield* decode(text.value).pipe(
      Effect.mapError(() => usage("bad_config", `${file} is not a saved login: run login again`))
    )
  )
})

/**
 * Saves the login: written to a new file in the same directory, created exclusively with mode
 * 0600, then renamed over the old one. The token is never readable by others, not even for a
 * moment, and an existing file with a looser mode is replaced by a 0600 one.
 */
export const writeLogin = (login: SavedLogin) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const file = yield* configPath
    const dir = path.dirname(file)
    const temporary = path.join(dir, `.${path.basename(file)}.${randomBytes(6).toString("hex")}.tmp`)
    yield* Effect.gen(function*() {
      if (!(yield* fs.exists(dir))) yield* fs.makeDirectory(dir, { recursive: true, mode: directoryMode })
      yield* fs.writeFileString(temporary, encode(login), { mode: fileMode, flag: "wx" })
      // the mode given at creation is masked by the umask; this makes it exactly 0600
      yield* fs.chmod(temporary, fileMode)
      yield* fs.rename(temporary, file)
    }).pipe(
      Effect.tapError(() => fs.remove(temporary).pipe(Effect.ignore)),
      Effect.mapError((e) => failed("config_unwritable", `cannot write ${file}: ${e.message}`))
    )
    return file
  })
