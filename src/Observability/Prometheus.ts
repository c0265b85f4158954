/**
 * The Prometheus text exposition format (version 0.0.4): metric families as `/metrics` serves
 * them, and Effect's metric registry read into families. The service defines counters, gauges
 * and histograms only; other kinds of Effect metric are not rendered. A counter is a value that
 * only goes up; anything that can go down is rendered as a gauge, and only counters end in `_total`.
 */
import type { Metric } from "effect"

/** One line of a family: `<name><suffix>{<labels>} <value>`. */
export interface Sample {
  /** Appended to the family's name: `_bucket`, `_sum`, `_count` of a histogram. */
  readonly suffix?: string
  readonly labels: ReadonlyArray<readonly [name: string, value: string]>
  readonly value: number
}

export interface Family {
  readonly name: string
  readonly help: string
  readonly type: "counter" | "gauge" | "histogram"
  readonly samples: ReadonlyArray<Sample>
}

/** The content type of what `render` writes. */
export const contentType = "text/plain; version=0.0.4; charset=utf-8"

/** Metric and label names may hold letters, digits and underscores (and colons, metrics only), and no leading digit. */
export const metricName = (raw: string) => raw.replace(/[^a-zA-Z0-9_:]/g, "_").replace(/^(?=[0-9])/, "_")
const labelName = (raw: string) => raw.replace(/[^a-zA-Z0-9_]/g, "_").replace(/^(?=[0-9])/, "_")

const escapeHelp = (text: string) => text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")
export const escapeLabelValue = (text: string) => text.replace(/\\/g, "\\\\").replace(/"/g, "\\\"").replace(/\n/g, "\\n")

/** A sample value as Prometheus reads it: `+Inf`, `-Inf` and `NaN` spelled its way. */
export const formatValue = (value: number) =>
  Number.isNaN(value) ? "NaN" : value === Infinity ? "+Inf" : value === -Infinity ? "-Inf" : String(value)

const renderLabels = (labels: Sample["labels"]) =>
  labels.length === 0
    ? ""
    : `{${labels.map(([name, value]) => `${labelName(name)}="${escapeLabelValue(value)}"`).join(",")}}`

/** The families as one exposition, each with its HELP and TYPE lines, ending with a newline. */
export const render = (families: ReadonlyArray<Family>): string =>
  families.map((family) => {
    const name = metricName(family.name)
    const lines = [`# HELP ${name} ${escapeHelp(family.help)}`, `# TYPE ${name} ${family.type}`]
    for (const sample of family.samples) {
      lines.push(`${name}${sample.suffix ?? ""}${renderLabels(sample.labels)} ${formatValue(sample.value)}`)
    }
    return lines.join("\n") + "\n"
  }).join("")

/** A counter's name ends in `_total`, as Prometheus expects. */
const counterName = (name: string) => name.endsWith("_total") ? name : `${name}_total`

/** A gauge's name does not: `_total` promises a value that never goes down. */
const gaugeName = (name: string) => name.replace(/_total$/, "")

const histogramSamples = (labels: Sample["labels"], state: Metric.HistogramState): Array<Sample> => [
  // Effect keeps the buckets cumulative, the last one at +Inf, as the format wants them
  ...state.buckets.map(([le, count]): Sample => ({ suffix: "_bucket", labels: [...labels, ["le", formatValue(le)]], value: count })),
  { suffix: "_sum", labels, value: state.sum },
  { suffix: "_count", labels, value: state.count }
]

/** One metric of the registry (a name under one set of tags) as a family of its own, or `undefined` for a kind not rendered. */
const familyOf = (metric: Metric.Metric.Snapshot): Family | undefined => {
  const labels = Object.entries(metric.attributes ?? {})
  const help = metric.description ?? metric.id
  switch (metric.type) {
    case "Counter":
      // an Effect counter not declared `incremental` takes negative updates: it can go down, so
      // it is a gauge to Prometheus, whose rate() reads any decrease of a counter as a restart
      return metric.state.incremental
        ? { name: counterName(metric.id), help, type: "counter", samples: [{ labels, value: Number(metric.state.count) }] }
        : { name: gaugeName(metric.id), help, type: "gauge", samples: [{ labels, value: Number(metric.state.count) }] }
    case "Gauge":
      return { name: gaugeName(metric.id), help, type: "gauge", samples: [{ labels, value: Number(metric.state.value) }] }
    case "Histogram":
      return { name: metric.id, help, type: "histogram", samples: histogramSamples(labels, metric.state) }
    default:
      return undefined
  }
}

/** The registry's metrics as families, one per name (its series, one per set of tags, together), sorted by name. */
export const familiesOf = (metrics: ReadonlyArray<Metric.Metric.Snapshot>): Array<Family> => {
  const byName = new Map<string, Family>()
  for (const metric of metrics) {
    const family = familyOf(metric)
    if (family === undefined) continue
    const known = byName.get(family.name)
    byName.set(family.name, known === undefined ? family : { ...known, samples: [...known.samples, ...family.samples] })
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name))
}
