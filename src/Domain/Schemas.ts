import { Schema } from "effect"

/** An optional field: absent when it has no value, never `null` or `undefined` on the wire. */
export const optional = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })

/**
 * A required field with what it means, for /openapi.json. The description belongs to the field,
 * not to its schema: on a schema it would become the "Expected ..." of validation messages in
 * place of the constraint ("a string at most 200 character(s) long"), and on a named schema
 * (DateTime, Int, NodeStatus, ...) it would rewrite the shared component.
 */
export const field = <S extends Schema.Schema.All>(schema: S, description: string) =>
  Schema.propertySignature(schema).annotations({ description })

/** An optional field (see `optional`) with what it means (see `field`). */
export const optionalField = <S extends Schema.Schema.Any>(schema: S, description: string) =>
  optional(schema).annotations({ description })

/**
 * The `examples` annotation of a Schema.Class, as decoded values: JSONSchema encodes them for the
 * document (and silently leaves out one that does not encode). The caller types them against the
 * class's fields: TypeScript cannot check them against the class in its own `extends` clause.
 */
export const classExamples = <A>(...values: readonly [A, ...Array<A>]): Schema.Annotations.Schema<any> => ({
  examples: values
})

/**
 * A request body that refuses the fields it does not declare, at every depth: `400` naming the
 * field (Errors.ts). The document says `additionalProperties: false`, as it does of every object
 * not marked otherwise. Decided per body: docs/compatibility.md, "Unknown fields".
 */
export const refusingUnknownFields = <S extends Schema.Annotable.All>(schema: S): Schema.Annotable.Self<S> =>
  schema.annotations({ parseOptions: { onExcessProperty: "error" } })

/**
 * A request body (or an object inside one) that takes fields it does not declare and ignores
 * them, as Schema decodes by default: the clients in the field send such fields there. The
 * document says `additionalProperties: true` (or what the others must be).
 */
export const ignoringUnknownFields = <S extends Schema.Annotable.All>(
  schema: S,
  others: boolean | object = true
): Schema.Annotable.Self<S> => schema.annotations({ jsonSchema: { additionalProperties: others } })

/**
 * An output-only field of a request body: any value is accepted and ignored (`Schema.Unknown`), so
 * that a client may send back what it read. The document states the field's real type
 * (`jsonSchema`), read-only, and says that it is ignored.
 */
export const ignoredOnInput = (jsonSchema: object, meaning: string) =>
  Schema.Unknown.annotations({
    jsonSchema: { ...jsonSchema, readOnly: true, description: `${meaning}: output only, ignored on input` }
  })

/**
 * A moment: a `Date` inside the service, ISO 8601 with `Z` and millisecond precision on the wire
 * (`toISOString`), as the service writes every time.
 */
export const Timestamp = Schema.Date.annotations({
  identifier: "DateTime",
  jsonSchema: { type: "string", format: "date-time" }
})

export const Strings = Schema.Array(Schema.String)

/**
 * A JSON value, typed for clients where `Schema.Unknown` would give them `unknown`: anything but an
 * array directly inside an array (`[[1]]`; `[{"a": [1]}]` is fine). That one shape is left out
 * because types generated from a schema recursive through arrays do not compile
 * (openapi-typescript writes `JsonValue: ... | JsonValue[]`, which TypeScript refuses).
 */
export type JsonScalar = string | number | boolean | null
export type JsonValue = JsonScalar | JsonObject | ReadonlyArray<JsonScalar | JsonObject>
export interface JsonObject {
  readonly [key: string]: JsonValue
}
const JsonScalar = Schema.Union(Schema.String, Schema.Number, Schema.Boolean, Schema.Null)
export const JsonObject: Schema.Schema<JsonObject> = Schema.Record({
  key: Schema.String,
  value: Schema.suspend((): Schema.Schema<JsonValue> => JsonValue)
}).annotations({ identifier: "JsonObject", description: "A JSON object" })
export const JsonValue: Schema.Schema<JsonValue> = Schema.Union(
  JsonScalar,
  JsonObject,
  Schema.Array(Schema.Union(JsonScalar, JsonObject))
).annotations({ identifier: "JsonValue", description: "A JSON value; an array holds no array directly" })

const isoDateTime =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):?(\d{2}))?)?$/i

const isLeapYear = (year: number) => year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
const daysInMonth = (year: number, month: number) =>
  month === 2 ? (isLeapYear(year) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31

/**
 * `s` is an ISO 8601 date-time whose every component exists: `Date.parse` alone rolls
 * 2020-02-30 over to March 1st, so the day is checked against its month.
 */
const isIsoDateTime = (s: string) => {
  const m = isoDateTime.exec(s)
  if (m === null || Number.isNaN(Date.parse(s))) return false
  const [year, month, day, hour = 0, minute = 0, second = 0, offsetHour = 0, offsetMinute = 0] = m.slice(1).map((part) =>
    part === undefined ? undefined : Number(part)
  )
  return month! >= 1 && month! <= 12 && day! >= 1 && day! <= daysInMonth(year!, month!) &&
    hour <= 23 && minute <= 59 && second <= 59 && offsetHour <= 23 && offsetMinute <= 59
}

/** An ISO 8601 date or date-time given by a client, decoded to a valid Date. */
export const IsoDateTimeFromString = Schema.String.annotations({
  jsonSchema: { type: "string", format: "date-time" }
}).pipe(
  Schema.filter(isIsoDateTime, {
    message: () => "expected an ISO 8601 date-time such as 2024-05-01T12:00:00Z"
  }),
  Schema.compose(Schema.Date, { strict: false })
)

/**
 * A non-negative integer written in decimal digits only: `Number` would also read `0x10`, `1e3`,
 * ` 1` and `1.0`, spellings no client means as a count.
 */
export const DecimalIntegerString = Schema.String.pipe(
  Schema.filter((s) => /^[0-9]+$/.test(s), { message: () => "expected an integer written in decimal digits" })
)

/** PostgreSQL text cannot hold NUL: refused at the edge, naming the field, rather than by the database. */
export const NoNul = Schema.String.pipe(
  Schema.filter((s) => !s.includes("\u0000"), { message: () => "must not contain NUL characters" })
)

/** A client-given string of bounded length (the field is named in the 400 when it is not). */
export const Text = (max: number) => NoNul.pipe(Schema.maxLength(max))
export const NonEmptyText = (max: number) => NoNul.pipe(Schema.minLength(1), Schema.maxLength(max))

/** A path segment naming a record. */
export const PathParam = NonEmptyText(200)
export const TextList = (maxItems: number, maxLength: number) => Schema.Array(Text(maxLength)).pipe(Schema.maxItems(maxItems))

/** A UUID in text form: an id that is not one names no record (and must not reach a `::uuid` cast). */
export const isUuid = (s: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s)
