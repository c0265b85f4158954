/**
 * The exposition renderer of src/Observability/Prometheus.ts against random families and
 * random Effect histograms, read back by the strict reader of test/support/Prometheus.ts: label
 * values with backslashes, quotes and line feeds come back as they were, help texts too, and a
 * histogram's buckets are cumulative and end at `+Inf` with its count.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Metric } from "effect"
import * as fc from "fast-check"
import { type Family, familiesOf, formatValue, render } from "../../src/Observability/Prometheus.ts"
import { parseExposition } from "../support/Prometheus.ts"
import { forAll, forAllSync } from "../support/Property.ts"

/** Text with the characters the format escapes over-represented. */
const tricky = fc.array(fc.oneof(fc.constantFrom("\\", "\"", "\n", "\\n", "{", "}", ",", "=", " ", "é", "🙂"), fc.string()), { maxLength: 8 })
  .map((parts) => parts.join(""))

const labelNames = fc.uniqueArray(fc.stringMatching(/^[a-z_][a-z0-9_]{0,8}$/).filter((n) => n !== "le"), { maxLength: 4 })

const value = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(Infinity, -Infinity, NaN, 0, -0))

const family: fc.Arbitrary<Family> = fc.record({
  name: fc.stringMatching(/^[a-z_][a-z0-9_]{0,12}$/),
  help: tricky,
  type: fc.constantFrom("counter" as const, "gauge" as const),
  samples: labelNames.chain((names) =>
    fc.array(
      fc.record({
        labels: fc.tuple(...names.map((n) => tricky.map((v) => [n, v] as const))),
        value
      }),
      { maxLength: 4 }
    )
  )
})

const sameNumber = (a: number, b: number) => Object.is(a, b) || (a === 0 && b === 0) || (Number.isNaN(a) && Number.isNaN(b))

describe("Prometheus exposition", () => {
  it("label values and help texts round-trip through escaping", () => forAllSync([fc.uniqueArray(family, { selector: (f) => f.name, maxLength: 5 })], ([families]) => {
    const parsed = parseExposition(render(families))
    expect([...parsed.keys()]).toEqual(families.map((f) => f.name))
    for (const f of families) {
      const read = parsed.get(f.name)!
      expect(read.type).toBe(f.type)
      expect(read.help).toBe(f.help)
      expect(read.samples.map((s) => s.labels)).toEqual(f.samples.map((s) => Object.fromEntries(s.labels)))
      read.samples.forEach((s, i) => expect(sameNumber(s.value, f.samples[i]!.value)).toBe(true))
    }
  }))

  it("escapes backslash, double quote and line feed in label values, and backslash and line feed in help", () => {
    const text = render([{ name: "x", help: "a\\b\nc\"", type: "gauge", samples: [{ labels: [["path", "C:\\dir\n\"q\""]], value: 1 }] }])
    expect(text).toBe("# HELP x a\\\\b\\nc\"\n# TYPE x gauge\nx{path=\"C:\\\\dir\\n\\\"q\\\"\"} 1\n")
  })

  it("spells infinities and NaN as Prometheus does", () => {
    expect([Infinity, -Infinity, NaN, 1.5, 0].map(formatValue)).toEqual(["+Inf", "-Inf", "NaN", "1.5", "0"])
  })

  let histograms = 0
  it.effect(
    "an Effect histogram renders cumulative buckets ending at +Inf with its count, and its sum",
    () =>
      forAll(
        [fc.uniqueArray(fc.double({ min: 0.001, max: 1000, noNaN: true }), { minLength: 1, maxLength: 6 }), fc.array(fc.double({ min: 0, max: 2000, noNaN: true }), { minLength: 1, maxLength: 50 })],
        ([bounds, values]) =>
          Effect.gen(function*() {
            // a name of its own per run: Effect's registry is global to the process
            const name = `prop_histogram_${++histograms}`
            const histogram = Metric.histogram(name, { description: "random values", boundaries: Metric.boundariesFromIterable(bounds) }).pipe(
              Metric.withAttributes({ kind: "a\"b" })
            )
            for (const v of values) yield* Metric.update(histogram, v)
            const pairs = (yield* Metric.snapshot).filter((p) => p.id === name)
            const read = parseExposition(render(familiesOf(pairs))).get(name)!
            expect(read.type).toBe("histogram")
            const buckets = read.samples.filter((s) => s.name === `${name}_bucket`)
            const les = buckets.map((b) => Number(b.labels.le === "+Inf" ? Infinity : b.labels.le))
            expect(les).toEqual([...bounds].sort((a, b) => a - b).concat(Infinity))
            buckets.forEach((b, i) => {
              expect(b.labels.kind).toBe("a\"b")
              expect(b.value).toBe(values.filter((v) => v <= les[i]!).length)
              if (i > 0) expect(b.value).toBeGreaterThanOrEqual(buckets[i - 1]!.value)
            })
            expect(buckets.at(-1)!.value).toBe(values.length)
            expect(read.samples.find((s) => s.name === `${name}_count`)!.value).toBe(values.length)
            expect(read.samples.find((s) => s.name === `${name}_sum`)!.value).toBeCloseTo(values.reduce((a, b) => a + b, 0), 6)
          })
      )
  )

  it.effect("a counter without `_total` gets it, and its description becomes its help", () =>
    Effect.gen(function*() {
      yield* Metric.update(Metric.counter("renderer_test_requests", { description: "what it counts", incremental: true }).pipe(Metric.withAttributes({ k: "v" })), 1)
      const pairs = (yield* Metric.snapshot).filter((p) => p.id === "renderer_test_requests")
      expect(render(familiesOf(pairs))).toBe(
        "# HELP renderer_test_requests_total what it counts\n# TYPE renderer_test_requests_total counter\nrenderer_test_requests_total{k=\"v\"} 1\n"
      )
    }))

  it.effect("a counter that can go down (not `incremental`) is a gauge, without `_total`", () =>
    Effect.gen(function*() {
      // the shape of Effect 3's `effect_fiber_active`, which /metrics showed as a counter
      const active = Metric.counter("renderer_test_active_total", { description: "what is running" })
      yield* Metric.update(active, 3)
      yield* Metric.update(active, -2)
      const pairs = (yield* Metric.snapshot).filter((p) => p.id === "renderer_test_active_total")
      expect(render(familiesOf(pairs))).toBe(
        "# HELP renderer_test_active what is running\n# TYPE renderer_test_active gauge\nrenderer_test_active 1\n"
      )
    }))

  it.effect("Effect's fiber metrics, when enabled: the active count is a gauge, the rest counters", () =>
    Effect.gen(function*() {
      yield* Effect.forEach([1, 2, 3], (n) => Effect.forkChild(Effect.succeed(n)).pipe(Effect.flatMap(Fiber.join)))
      const families = parseExposition(render(familiesOf(yield* Metric.snapshot)))
      expect(families.get("child_fibers_active")?.type).toBe("gauge")
      expect(families.get("child_fibers_started_total")?.type).toBe("counter")
      for (const family of families.values()) {
        if (family.type !== "counter") expect(family.name, `${family.name} is a ${family.type}`).not.toMatch(/_total$/)
      }
    }).pipe(Effect.provide(Metric.enableRuntimeMetricsLayer)))
})
