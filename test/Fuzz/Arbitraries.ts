/**
 * fast-check arbitraries read off the OpenAPI document: a value valid against a JSON schema
 * (`valueOf`), and the odd values a fuzzer throws at a field instead (`oddValue`). Refs are
 * resolved against the document's `#/components/schemas`.
 */
import * as fc from "fast-check"

export type JsonSchema = {
  readonly $ref?: string
  readonly type?: string | ReadonlyArray<string>
  readonly enum?: ReadonlyArray<unknown>
  readonly const?: unknown
  readonly anyOf?: ReadonlyArray<JsonSchema>
  readonly oneOf?: ReadonlyArray<JsonSchema>
  readonly properties?: Readonly<Record<string, JsonSchema>>
  readonly required?: ReadonlyArray<string>
  readonly items?: JsonSchema
  readonly minItems?: number
  readonly maxItems?: number
  readonly minLength?: number
  readonly maxLength?: number
  readonly minimum?: number
  readonly maximum?: number
  readonly pattern?: string
  readonly format?: string
}

export type Schemas = Readonly<Record<string, JsonSchema>>

/** The schema a `$ref` names, or the schema itself. */
export const resolve = (schemas: Schemas, schema: JsonSchema): JsonSchema =>
  schema.$ref === undefined ? schema : resolve(schemas, schemas[schema.$ref.replace("#/components/schemas/", "")] ?? {})

/** Strings a parser, a database or a path router may choke on. */
export const oddStrings: ReadonlyArray<string> = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "é✨🧪",
  "\ud800",
  "\u202e\u0301",
  "x".repeat(10_000),
  "' OR 1=1 --",
  "\"; DROP TABLE nodes; --",
  "%",
  "_",
  "\\",
  "-".repeat(40),
  "!!!&|:*<->()",
  "a:* & !b | (c <-> d)",
  "../../etc/passwd",
  "..%2F..%2Fetc",
  "%2F",
  "a/b",
  "%00",
  "${jndi:x}",
  "<script>alert(1)</script>",
  "9".repeat(40),
  "-1",
  "0x10",
  "1e309",
  "NaN",
  "2020-02-30",
  "null",
  "true"
]

/** Numbers at and past every edge. */
export const oddNumbers: ReadonlyArray<number | bigint> = [
  0,
  -1,
  -2147483649,
  2147483648,
  Number.MAX_SAFE_INTEGER + 2,
  1e308,
  -1e308,
  0.5,
  -0.0,
  99999999999999999999999999999n
]

/** Any odd value: a string, a number, or a value of the wrong JSON type. */
export const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(...oddStrings),
  fc.constantFrom(...oddNumbers),
  fc.constantFrom(null, true, false, [], {}, [1, "a"], { a: { b: [null] } })
)

const stringOf = (s: JsonSchema): fc.Arbitrary<string> => {
  if (s.format === "date-time") return fc.date({ min: new Date(2000, 0, 1), max: new Date(2100, 0, 1), noInvalidDate: true }).map((d) => d.toISOString())
  if (s.format === "uri" || s.format === "url") return fc.constantFrom("https://images.example/a.png", "http://127.0.0.1:9/x")
  if (s.pattern !== undefined) return fc.stringMatching(new RegExp(s.pattern)).filter((x) => x.length <= (s.maxLength ?? Infinity))
  const min = s.minLength ?? 0
  return fc.string({ minLength: min, maxLength: Math.min(s.maxLength ?? 30, min + 30), unit: "grapheme" })
}

const numberOf = (s: JsonSchema, integer: boolean): fc.Arbitrary<number> => {
  const min = s.minimum ?? -1_000
  const max = s.maximum ?? Math.max(min, 0) + 1_000
  return integer ? fc.integer({ min, max }) : fc.double({ min, max, noNaN: true, noDefaultInfinity: true })
}

/** A value valid against `schema` (recursion is cut at `depth`: objects then keep only what is required). */
export const valueOf = (schemas: Schemas, schema: JsonSchema, depth = 4): fc.Arbitrary<unknown> => {
  const s = resolve(schemas, schema)
  if (s.const !== undefined) return fc.constant(s.const)
  if (s.enum !== undefined) return fc.constantFrom(...s.enum)
  const choices = s.anyOf ?? s.oneOf
  if (choices !== undefined) {
    const usable = depth > 0 ? choices : choices.filter((c) => resolve(schemas, c).type !== "array" && c.$ref === undefined)
    return fc.oneof(...(usable.length > 0 ? usable : choices.slice(0, 1)).map((c) => valueOf(schemas, c, depth - 1)))
  }
  const type = Array.isArray(s.type) ? s.type[0] : s.type
  switch (type) {
    case "string":
      return stringOf(s)
    case "integer":
      return numberOf(s, true)
    case "number":
      return numberOf(s, false)
    case "boolean":
      return fc.boolean()
    case "null":
      return fc.constant(null)
    case "array":
      return depth <= 0 && (s.minItems ?? 0) === 0 ? fc.constant([]) : fc.array(valueOf(schemas, s.items ?? {}, depth - 1), {
        minLength: s.minItems ?? 0,
        maxLength: Math.min(s.maxItems ?? 3, (s.minItems ?? 0) + 3)
      })
    case "object":
    case undefined: {
      const props = s.properties ?? {}
      const required = s.required ?? []
      const keys = Object.keys(props).filter((k) => depth > 0 || required.includes(k))
      if (keys.length === 0) return type === undefined ? fc.constantFrom("x", 1, true) : fc.constant({})
      return fc.record(Object.fromEntries(keys.map((k) => [k, valueOf(schemas, props[k]!, depth - 1)])), {
        requiredKeys: keys.filter((k) => required.includes(k))
      })
    }
    default:
      return fc.constant(null)
  }
}

/** A value of the wrong JSON type for `schema`. */
export const wrongType = (schemas: Schemas, schema: JsonSchema): fc.Arbitrary<unknown> => {
  const type = resolve(schemas, schema).type
  const all: ReadonlyArray<unknown> = ["text", 12, -3.5, true, null, [], { a: 1 }]
  const wrong = all.filter((v) =>
    type === undefined ? false : !(
      (type === "string" && typeof v === "string") ||
      ((type === "integer" || type === "number") && typeof v === "number") ||
      (type === "boolean" && typeof v === "boolean") ||
      (type === "array" && Array.isArray(v)) ||
      (type === "object" && typeof v === "object" && v !== null && !Array.isArray(v))
    )
  )
  return wrong.length > 0 ? fc.constantFrom(...wrong) : oddValue
}

/** A value past one of `schema`'s bounds: too long, too short, too big, too small, or not in its enum. */
export const outOfRange = (schemas: Schemas, schema: JsonSchema): fc.Arbitrary<unknown> => {
  const s = resolve(schemas, schema)
  const past: Array<unknown> = []
  if (s.maxLength !== undefined) past.push("y".repeat(s.maxLength + 1))
  if (s.minLength !== undefined && s.minLength > 0) past.push("")
  if (s.maximum !== undefined) past.push(s.maximum + 1)
  if (s.minimum !== undefined) past.push(s.minimum - 1, s.minimum - 1e12)
  if (s.maxItems !== undefined) past.push(Array.from({ length: s.maxItems + 1 }, () => "z"))
  if (s.enum !== undefined) past.push("NotAValue")
  return past.length > 0 ? fc.constantFrom(...past) : oddValue
}
