/** How many bodies the service has compressed so far (Web/Compression.ts), for tests that count them. */
import { Effect, Metric } from "effect"
import { compressions } from "../../src/Http/Coding.ts"

export const compressionsSoFar = Effect.map(Metric.value(compressions), (state) => state.count)
