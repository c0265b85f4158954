/**
 * The registry a command talks to, through the typed client only: the saved login's URL and
 * token, which `REGISTRY_URL` and `REGISTRY_TOKEN` override (for scripts and CI that never log in).
 */
import { Config, Duration, Effect, type FileSystem, Option } from "effect"
import type { HttpClient } from "effect/http"
import { makeClient, type RegistryClient } from "../client.ts"
import { readLogin } from "./ConfigFile.ts"
import { type CliFailure, networkFault, usage } from "./Failure.ts"

export interface Target {
  readonly baseUrl: string
  readonly token: Option.Option<string>
}

/** A variable of the environment, when set and not empty. */
export const fromEnv = (name: string) => Effect.orDie(Config.option(Config.NonEmptyString(name)))

/** Where the registry is and the bearer token to send, if any. */
export const target: Effect.Effect<Target, CliFailure, FileSystem.FileSystem> = Effect.gen(function*() {
  const login = yield* readLogin
  const url = Option.orElse(yield* fromEnv("REGISTRY_URL"), () => Option.map(login, (l) => l.url))
  if (Option.isNone(url)) {
    return yield* usage("not_logged_in", "no service URL: run `registry login --url <base> --token <jwt>` first (or set REGISTRY_URL)")
  }
  const token = Option.orElse(yield* fromEnv("REGISTRY_TOKEN"), () => Option.flatMap(login, (l) => Option.fromUndefinedOr(l.token)))
  return { baseUrl: url.value, token }
})

/**
 * A client for `at`: with its bearer token, or with a publisher's personal access token (`pat`,
 * sent in the publish body only).
 */
export const clientAt = (at: Target, pat?: string): Effect.Effect<RegistryClient, never, HttpClient.HttpClient> =>
  makeClient({
    baseUrl: at.baseUrl,
    auth: pat !== undefined ? { pat } : Option.getOrUndefined(Option.map(at.token, (bearer) => ({ bearer })))
  })

/** A client for the target, with its bearer token. */
export const client: Effect.Effect<RegistryClient, CliFailure, FileSystem.FileSystem | HttpClient.HttpClient> = Effect.flatMap(
  target,
  (at) => clientAt(at)
)

/** How long one call of the API may take before it counts as a network failure. */
const callTimeout = Duration.seconds(60)

/** A call of the API, bounded by `callTimeout`. */
export const call = <A, E, R>(what: string, effect: Effect.Effect<A, E, R>) =>
  Effect.timeoutOrElse(effect, {
    duration: callTimeout,
    orElse: () => Effect.fail(networkFault("timeout", `${what}: no answer within ${Duration.format(callTimeout)}`))
  })
