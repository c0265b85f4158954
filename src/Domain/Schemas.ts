import { Schema, SchemaTransformation } from "effect"

/** An optional field: absent when it has no value, never `null` or `undefined` on the wire. */
export const optional = <S extends Schema.Top>(schema: S) => Schema.optionalKey(schema)

/**
 * A required field with what it means, for /openapi.json. The description belongs to the field,
 * not to its schema: on a schema it would become the "Expected ..." of validation messages in
 * place of the constraint, and on a named schema (DateTime, Int, NodeStatus, ...) it would
 * rewrite the shared component. It goes on the encoded side of the field, where the document is
 * derived from (on a transformation's decoded side it would not reach the document).
 */
export const field = <S extends Schema.Top>(schema: S, description: string): S["Rebuild"] =>
  schema.rebuild(Schema.flip(Schema.flip(schema).annotateKey({ description })).ast)

/** An optional field (see `optional`) with what it means (see `field`). */
export const optionalField = <S extends Schema.Top>(schema: S, description: string) =>
  field(optional(schema), description)

/**
 * The fields of a Schema.Class with the document's examples, written as on the wire (JSON, dates
 * as ISO strings): the document is derived from the encoded side, where they are kept as given.
 * `Schema.Class<Node>("Node")(withExamples(nodeFields, nodeExample))`.
 */
export const withExamples = <F extends Schema.Struct.Fields>(
  fields: F,
  ...examples: readonly [Schema.Struct.Encoded<F>, ...Array<Schema.Struct.Encoded<F>>]
) => Schema.Struct(fields).pipe(Schema.annotateEncoded({ examples }))

/**
 * A filter that holds for every value and only tells the document what the schema is: `fragment`
 * replaces what the generator derives where they overlap (ApiDocument.ts folds it in).
 */
export const documentedAs = (fragment: { readonly [key: string]: Schema.Json }, annotations?: { readonly description?: string; readonly readOnly?: boolean }) =>
  Schema.makeFilter<unknown>(() => true, { ...annotations, toJsonSchema: () => ({ ...fragment }) })

/**
 * A request body that refuses the fields it does not declare, at every depth: `400` naming the
 * field (Http/Failures.ts). Effect 4 sets excess-property handling per decode, not per schema: the
 * endpoints that take such a body say so with `HttpApi.PayloadParseOptions` (`refusingBody`);
 * this marks the schema for the reader and the document, which says `additionalProperties: false`
 * of every object not marked otherwise. Decided per body: docs/compatibility.md, "Unknown fields".
 */
export const refusingUnknownFields = <S extends Schema.Top>(schema: S): S["Rebuild"] =>
  schema.annotate({ refusesUnknownFields: true })

/**
 * The parse options of an endpoint whose body refuses unknown fields (`refusingUnknownFields`):
 * `endpoint.annotate(HttpApi.PayloadParseOptions, refusingBody)`.
 */
export const refusingBody = { onExcessProperty: "error" } as const

/**
 * A request body (or an object inside one) that takes fields it does not declare and ignores
 * them, as Schema decodes by default: the clients in the field send such fields there. The
 * document says `additionalProperties: true` (or what the others must be).
 */
export const ignoringUnknownFields = <S extends Schema.Top>(
  schema: S,
  others: boolean | { readonly [key: string]: Schema.Json } = true
) => schema.check(documentedAs({ additionalProperties: others }))

/**
 * An output-only field of a request body: any value is accepted and ignored, so that a client may
 * send back what it read. The document states the field's real type, read-only, and says that it
 * is ignored.
 */
export const ignoredOnInput = (jsonSchema: { readonly [key: string]: Schema.Json }, meaning: string) =>
  Schema.Json.check(documentedAs(jsonSchema, { readOnly: true, description: `${meaning}: output only, ignored on input` }))

/**
 * A moment: a `Date` inside the service, ISO 8601 with `Z` and millisecond precision on the wire
 * (`toISOString`), as the service writes every time.
 */
export const Timestamp = Schema.String.annotate({ format: "date-time" }).pipe(
  Schema.decodeTo(Schema.Date, SchemaTransformation.dateFromString)
).annotate({ identifier: "DateTime" })

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
const JsonScalar = Schema.Union([Schema.String, Schema.Finite, Schema.Boolean, Schema.Null])
export const JsonObject: Schema.Codec<JsonObject> = Schema.Record(
  Schema.String,
  Schema.suspend((): Schema.Codec<JsonValue> => JsonValue)
).annotate({ identifier: "JsonObject", description: "A JSON object" })
export const JsonValue: Schema.Codec<JsonValue> = Schema.Union([
  JsonScalar,
  JsonObject,
  Schema.Array(Schema.Union([JsonScalar, JsonObject]))
]).annotate({ identifier: "JsonValue", description: "A JSON value; an array holds no array directly" })

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
export const IsoDateTimeFromString = Schema.String.annotate({ format: "date-time" }).check(
  Schema.makeFilter(isIsoDateTime, { message: "expected an ISO 8601 date-time such as 2024-05-01T12:00:00Z" })
).pipe(Schema.decodeTo(Schema.Date, SchemaTransformation.dateFromString))

/**
 * A non-negative integer written in decimal digits only: `Number` would also read `0x10`, `1e3`,
 * ` 1` and `1.0`, spellings no client means as a count.
 */
export const DecimalIntegerString = Schema.String.check(
  Schema.makeFilter((s: string) => /^[0-9]+$/.test(s), { message: "expected an integer written in decimal digits" })
)

/** PostgreSQL text cannot hold NUL: refused at the edge, naming the field, rather than by the database. */
export const NoNul = Schema.String.check(
  Schema.makeFilter((s: string) => !s.includes("\u0000"), { message: "must not contain NUL characters" })
)

/** A client-given string of bounded length (the field is named in the 400 when it is not). */
export const Text = (max: number) => NoNul.check(Schema.isMaxLength(max))
export const NonEmptyText = (max: number) => NoNul.check(Schema.isMinLength(1), Schema.isMaxLength(max))

/** A path segment naming a record. */
export const PathParam = NonEmptyText(200)
export const TextList = (maxItems: number, maxLength: number) => Schema.Array(Text(maxLength)).check(Schema.isMaxLength(maxItems))

/** A UUID in text form: an id that is not one names no record (and must not reach a `::uuid` cast). */
export const isUuid = (s: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s)

/**
 * A UUID as the service writes them (ids of records, tasks, keys): any 8-4-4-4-12 hexadecimal id,
 * as before Effect 4, whose `isUUID` also demands a version and a variant digit.
 */
export const Uuid = Schema.String.check(
  Schema.isPattern(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/u, {
    expected: "a UUID",
    toJsonSchema: () => ({ format: "uuid", pattern: "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$" })
  })
)

