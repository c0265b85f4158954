/**
 * A strict reader of the Prometheus text exposition format 0.0.4, written from the format's
 * description (not from our renderer): every line is a `# HELP`, a `# TYPE` or a sample of the
 * family last typed, and anything else fails the test.
 */
export interface ParsedSample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

export interface ParsedFamily {
  readonly name: string
  readonly type: string
  help: string | undefined
  readonly samples: Array<ParsedSample>
}

const name = "[a-zA-Z_:][a-zA-Z0-9_:]*"
const helpLine = new RegExp(`^# HELP (${name}) (.*)$`)
const typeLine = new RegExp(`^# TYPE (${name}) (counter|gauge|histogram|summary|untyped)$`)
const escapedText = String.raw`(?:[^"\\\n]|\\[\\"n])*`
const label = `[a-zA-Z_][a-zA-Z0-9_]*="${escapedText}"`
const value = String.raw`[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]Inf|NaN`
const sampleLine = new RegExp(`^(?<name>${name})(?:\\{(?<labels>${label}(?:,${label})*)?\\})? (?<value>${value})(?: -?\\d+)?$`)
const eachLabel = new RegExp(`([a-zA-Z_][a-zA-Z0-9_]*)="(${escapedText})"`, "g")

const unescape = (text: string) => text.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c))

const parseValue = (text: string) =>
  text === "+Inf" ? Infinity : text === "-Inf" ? -Infinity : text === "NaN" ? NaN : Number(text)

/** The sample names a family of `type` may hold. */
const namesOf = (family: string, type: string) =>
  type === "histogram" ? [`${family}_bucket`, `${family}_sum`, `${family}_count`] : [family]

/** The families of an exposition, by name; throws on the first line that breaks the format. */
export const parseExposition = (text: string): Map<string, ParsedFamily> => {
  if (text !== "" && !text.endsWith("\n")) throw new Error("an exposition ends with a line feed")
  const families = new Map<string, ParsedFamily>()
  let current: ParsedFamily | undefined
  const help = new Map<string, string>()
  for (const [i, line] of (text === "" ? [] : text.slice(0, -1).split("\n")).entries()) {
    const fail = (why: string) => new Error(`line ${i + 1} ${why}: ${JSON.stringify(line)}`)
    const h = helpLine.exec(line)
    if (h) {
      help.set(h[1]!, unescape(h[2]!))
      continue
    }
    const t = typeLine.exec(line)
    if (t) {
      if (families.has(t[1]!)) throw fail("types a family twice")
      current = { name: t[1]!, type: t[2]!, help: help.get(t[1]!), samples: [] }
      families.set(current.name, current)
      continue
    }
    const s = sampleLine.exec(line)
    if (!s) throw fail("is not a HELP, TYPE or sample line")
    const { name: sampleName, labels: labelText, value: valueText } = s.groups!
    if (current === undefined || !namesOf(current.name, current.type).includes(sampleName!)) throw fail("is outside its family")
    const labels: Record<string, string> = {}
    for (const [, key, raw] of (labelText ?? "").matchAll(eachLabel)) {
      if (key! in labels) throw fail("repeats a label")
      labels[key!] = unescape(raw!)
    }
    current.samples.push({ name: sampleName!, labels, value: parseValue(valueText!) })
  }
  for (const family of families.values()) family.help ??= help.get(family.name)
  return families
}

/** The value of the sample `sampleName` whose labels include `labels`; 0 when there is none (a series not yet seen). */
export const valueOf = (
  families: Map<string, ParsedFamily>,
  family: string,
  labels: Readonly<Record<string, string>> = {},
  sampleName = family
) =>
  families.get(family)?.samples.find((s) =>
    s.name === sampleName && Object.entries(labels).every(([k, v]) => s.labels[k] === v)
  )?.value ?? 0
