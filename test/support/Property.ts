/**
 * Property tests on fast-check's arbitraries. @effect/vitest 4's `it.prop` and `it.effect.prop`
 * take only Effect's own Arbitrary and schemas; the suite's generators are fast-check's, so a
 * property test is an ordinary test that checks its property with fast-check:
 *
 * `it.effect("...", () => forAll({ steps: fc.array(step) }, ({ steps }) => Effect.gen(...), { numRuns: 20 }), { timeout })`
 *
 * Arbitraries are given as a tuple (the property gets the values as a tuple) or as a record (it
 * gets a record). Each run is an Effect in the test's own context (its layer's services), with a
 * scope of its own; a run that fails, or answers `false`, falsifies the property.
 */
import { Effect, type Scope } from "effect"
import * as fc from "fast-check"

export type Arbitraries =
  | ReadonlyArray<fc.Arbitrary<unknown>>
  | { readonly [key: string]: fc.Arbitrary<unknown> }

/** The values that `Arbs` generate, in its shape. */
export type Values<Arbs extends Arbitraries> = { -readonly [K in keyof Arbs]: Arbs[K] extends fc.Arbitrary<infer T> ? T : never }

const combined = <const Arbs extends Arbitraries>(arbitraries: Arbs): fc.Arbitrary<Values<Arbs>> => {
  const made: fc.Arbitrary<unknown> = Array.isArray(arbitraries)
    ? fc.tuple(...(arbitraries as ReadonlyArray<fc.Arbitrary<unknown>>))
    : fc.record(arbitraries as { readonly [key: string]: fc.Arbitrary<unknown> })
  return made as fc.Arbitrary<Values<Arbs>>
}

/** Checks `property` on the values fast-check generates (100 runs unless `parameters` say otherwise). */
export const forAll = <const Arbs extends Arbitraries, A, E, R>(
  arbitraries: Arbs,
  property: (values: Values<Arbs>) => Effect.Effect<A, E, R>,
  parameters: fc.Parameters<[Values<Arbs>]> = {}
): Effect.Effect<void, never, Exclude<R, Scope.Scope>> =>
  Effect.flatMap(Effect.context<Exclude<R, Scope.Scope>>(), (context) =>
    Effect.promise((signal) =>
      fc.assert(
        fc.asyncProperty(combined(arbitraries), (values) =>
          Effect.runPromiseWith(context)(Effect.scoped(property(values)), { signal }).then((a) => (a as unknown) !== false)),
        parameters
      )
    ))

/** `forAll` for a property that is plain code: it throws (a failed `expect`) or answers `false` to falsify. */
export const forAllSync = <const Arbs extends Arbitraries>(
  arbitraries: Arbs,
  property: (values: Values<Arbs>) => unknown,
  parameters: fc.Parameters<[Values<Arbs>]> = {}
): void => fc.assert(fc.property(combined(arbitraries), (values) => property(values) !== false), parameters)
