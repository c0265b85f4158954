/**
 * Rows into records. A repository selects the columns a Domain record is made of and decodes each
 * row with a schema of those columns that builds the record (`SqlSchema.findOne/findAll`), so a
 * row that does not make a record fails loudly instead of travelling on as a hand-asserted type.
 *
 * A record nested in another (a node's publisher) travels as `to_jsonb` of the same column list,
 * so one row schema reads it both ways; only its timestamps differ in form (`DbTime`).
 */
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import { Array as Arr, Effect, Option, Predicate, Schema, SchemaGetter, SchemaTransformation } from "effect"

/** A nullable column: NULL is an absent field, never `null`. */
export const nullable = <S extends Schema.Constraint>(schema: S) =>
  Schema.optionalKey(Schema.NullOr(schema)).pipe(Schema.decodeTo(
    Schema.optionalKey(Schema.toType(schema)),
    SchemaTransformation.transformOptional<S["Type"], S["Type"] | null>({
      decode: Option.filter(Predicate.isNotNull),
      encode: (value) => value
    })
  ))

/**
 * A `timestamptz`: a `Date` as a column, an ISO 8601 string inside `to_jsonb`. Both are cut to
 * the millisecond, as the fast path's `iso_time` cuts them.
 */
export const DbTime = Schema.Union([Schema.Date, Schema.DateFromString])

/**
 * The schema of rows that make `Record`: the columns' schema, then `build` from a decoded row.
 * Rows are only read: encoding one back is refused.
 */
export const rowsOf = <Columns extends Schema.Struct.Fields, Record extends Schema.Constraint>(
  columns: Columns,
  record: Record,
  build: (row: Schema.Struct.Type<Columns>) => Record["Type"]
) =>
  Schema.Struct(columns).pipe(Schema.decodeTo(Schema.toType(record), {
    decode: SchemaGetter.transform(build),
    encode: SchemaGetter.forbidden(() => "rows are read, not written")
  }))

/**
 * A failing statement, or a row that does not make its record, is the service's fault: a defect
 * (answered 500 and logged), never a domain answer.
 */
export const orDieOnDatabase = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.catchIf(
    effect,
    (e): e is Extract<E, SqlError | Schema.SchemaError> => isSqlError(e) || Schema.isSchemaError(e),
    Effect.die,
    Effect.fail
  )

/**
 * A statement refused by a foreign key check (SQLSTATE 23503), such as the nodes' trigger of
 * migration 0009 refusing a node of a deleted publisher, fails with `answer()` instead: a
 * domain answer, since a concurrent write made it, not the service.
 */
export const onForeignKeyViolation = <E2>(answer: () => E2) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | E2, R> =>
  Effect.catchIf(
    effect,
    (e) => isSqlError(e) && sqlState(e) === "23503",
    () => Effect.fail(answer())
  )

/** The SQLSTATE PostgreSQL answered a failed statement with (on the driver's cause of the error). */
export const sqlState = (error: SqlError): string | undefined => {
  const cause: unknown = error.reason.cause
  return Predicate.hasProperty(cause, "code") && typeof cause.code === "string" ? cause.code : undefined
}

/** Rows per INSERT: PostgreSQL takes at most 65,535 parameters a statement. */
const rowsPerInsert = 1000

/** `items` in batches small enough for one INSERT each, none empty (`sql.insert` takes no empty list). */
export const chunks = <A>(items: ReadonlyArray<A>): Array<Arr.NonEmptyArray<A>> => Arr.chunksOf(items, rowsPerInsert)
