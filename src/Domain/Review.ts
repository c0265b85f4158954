/** Reviews of nodes: a user gives a node 1 to 5 stars. */
import { Effect, Schema, SchemaIssue, SchemaTransformation } from "effect"
import { documentedAs } from "./Schemas.ts"

export const Star = Schema.Literals([1, 2, 3, 4, 5])
export type Star = typeof Star.Type

const starMeaning = "Stars given to the node: an integer from 1 to 5"

/**
 * `star` in a query string, as the clients send it (`star=4`): exactly one digit from 1 to 5.
 * Other spellings of those numbers (`4.0`, `04`, ` 4`) are refused with the rest, as not integers
 * in the form the document promises.
 */
export const StarParam = Schema.String.check(
  documentedAs({ type: "integer", minimum: 1, maximum: 5, description: starMeaning })
).pipe(
  Schema.decodeTo(
    Star,
    SchemaTransformation.transformEffect({
      decode: (s: string, options) =>
        /^[1-5]$/.test(s)
          ? Effect.succeed(Star.literals[Number(s) - 1]!)
          : Effect.fail(new SchemaIssue.InvalidValue({ message: "expected an integer from 1 to 5" }, s, options)),
      encode: (star: Star) => Effect.succeed(String(star))
    })
  )
)
