/**
 * Stub layers for service-level tests: a service whose methods are the ones a test gives; calling
 * any other dies, naming it, so a test states exactly what its subject may use.
 */
import { Cause, ConfigProvider, type Context, Effect, Exit, Layer } from "effect"
import { AppConfig, type AppConfigShape, appConfig } from "../../src/Config.ts"

/** `tag`'s service made of `methods`; any other member is a function that dies when called. */
export const stub = <I, S extends object>(tag: Context.Key<I, S>, methods: Partial<S>): Layer.Layer<I> =>
  Layer.succeed(
    tag,
    new Proxy(methods, {
      get: (target, key) => {
        if (key in target) return target[key as keyof typeof target]
        // not a thenable, not an Effect: only named members are stubbed
        if (typeof key !== "string" || key === "then") return undefined
        return () => Effect.die(new Error(`${tag.key}.${key} is not stubbed in this test`))
      }
    }) as S
  )

/** The defaults of every setting (the environment ignored), with some replaced. */
export const testConfig = (overrides: (c: AppConfigShape) => AppConfigShape = (c) => c): Layer.Layer<AppConfig> =>
  Layer.effect(
    AppConfig,
    appConfig.pipe(
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: {} })),
      Effect.map(overrides),
      Effect.orDie
    )
  )

/** The `_tag` of an exit's failure (`"Success"` or the cause's kind otherwise), for `toBe` on a typed failure. */
export const failureTag = <A, E>(exit: Exit.Exit<A, E>): string => {
  if (Exit.isSuccess(exit)) return exit._tag
  const [only, ...more] = exit.cause.reasons
  return only !== undefined && more.length === 0 && Cause.isFailReason(only) ? (only.error as { readonly _tag: string })._tag : exit._tag
}
