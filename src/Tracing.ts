/**
 * Spans on every service and repository method, so that a tracer sees each call.
 *
 * `traced("Feature.method")(function*(...) {...})` is `Effect.fn("Feature.method")` without the
 * caller's stack trace: `Effect.fn` allocates an `Error` on every call to point the span at its
 * call site, and with two or three traced calls per request that allocation was the largest part
 * of what tracing cost a request (docs/architecture.md, "Layers", Spans). Failures keep their own traces.
 * Effect 4's `Effect.fn` still does (effect/internal/effect.ts, `makeFn`: a `new Error()` per call
 * for the call-site frame, and its span options have no `captureStackTrace`), so this stays.
 */
import { Effect, References } from "effect"

const spanOptions = { captureStackTrace: false } as const

/**
 * `Effect.withSpan(name)` without the caller's stack trace: for effects that are not a method's
 * body. With tracing off (`References.TracerEnabled`, false when no tracer is configured:
 * Observability/Otel.ts) the effect runs as it is: Effect would still make a no-op span and a
 * context holding it for each call.
 */
export const span = (name: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => fiber.getRef(References.TracerEnabled) ? Effect.withSpan(effect, name, spanOptions) : effect)

export const traced = (name: string) =>
<Eff extends Effect.Effect<any, any, any>, AEff, Args extends Array<any>>(
  body: (...args: Args) => Generator<Eff, AEff, never>
) => {
  const run = Effect.fnUntraced(body)
  const inSpan = span(name)
  return (...args: Args) => inSpan(run(...args))
}
