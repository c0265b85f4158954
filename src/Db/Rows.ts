/**
 * Rows into records. A repository selects the columns a Domain record is made of and decodes each
 * row with a schema of those columns that builds the record (`SqlSchema.findOne/findAll`), so a
 * row that does not make a record fails loudly instead of travelling on as a hand-asserted type.
 *
 * A record nested in another (a node's publisher) travels as `to_jsonb` of the same column list,
 * so one row schema reads it both ways; only its timestamps differ in form (`DbTime`).
 */
import type { SqlError } from "@effect/sql"
import { Effect, ParseResult, Predicate, Schema } from "effect"

/** A nullable column: NULL is an absent field, never `null`. */
export const nullable = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true, nullable: true })

/**
 * A `timestamptz`: a `Date` as a column, an ISO 8601 string inside `to_jsonb`. Both are cut to
 * the millisecond, as the fast path's `iso_time` cuts them.
 */
export const DbTime = Schema.Union(Schema.DateFromSelf, Schema.DateFromString)

/**
 * The schema of rows that make `Record`: the columns' schema, then `build` from a decoded row.
 * Rows are only read: encoding one back is refused.
 */
export const rowsOf = <Columns extends Schema.Struct.Fields, A, I, R>(
  columns: Columns,
  record: Schema.Schema<A, I, R>,
  build: (row: Schema.Struct.Type<Columns>) => A
) =>
  Schema.transformOrFail(Schema.Struct(columns), Schema.typeSchema(record), {
    strict: true,
    decode: (row) => ParseResult.succeed(build(row as Schema.Struct.Type<Columns>)),
    encode: (record, _, ast) => ParseResult.fail(new ParseResult.Forbidden(ast, record, "rows are read, not written"))
  })

/**
 * A failing statement, or a row that does not make its record, is the service's fault: a defect
 * (answered 500 and logged), never a domain answer.
 */
export const orDieOnDatabase = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, SqlError.SqlError | ParseResult.ParseError>, R> =>
  Effect.catchIf(
    effect,
    (e): e is Extract<E, SqlError.SqlError | ParseResult.ParseError> =>
      Predicate.isTagged(e, "SqlError") || Predicate.isTagged(e, "ParseError"),
    Effect.die
  ) as Effect.Effect<A, Exclude<E, SqlError.SqlError | ParseResult.ParseError>, R>

/**
 * A statement refused by a foreign key check (SQLSTATE 23503), such as the nodes' trigger of
 * migration 0009 refusing a node of a deleted publisher, fails with `answer()` instead: a
 * domain answer, since a concurrent write made it, not the service.
 */
export const onForeignKeyViolation = <E2>(answer: () => E2) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | E2, R> =>
  Effect.catchIf(
    effect,
    (e) => Predicate.isTagged(e, "SqlError") && ((e as unknown as SqlError.SqlError).cause as { code?: string } | undefined)?.code === "23503",
    () => Effect.fail(answer())
  )

/** Rows per INSERT: PostgreSQL takes at most 65,535 parameters a statement. */
const rowsPerInsert = 1000

/** `items` in batches small enough for one INSERT each. */
export const chunks = <A>(items: ReadonlyArray<A>): Array<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += rowsPerInsert) out.push(items.slice(i, i + rowsPerInsert))
  return out
}
