/** Reviews of nodes: a user gives a node 1 to 5 stars. */
import { ParseResult, Schema } from "effect"

export const Star = Schema.Literal(1, 2, 3, 4, 5)
export type Star = typeof Star.Type

const starMeaning = "Stars given to the node: an integer from 1 to 5"

/**
 * `star` in a query string, as the clients send it (`star=4`): exactly one digit from 1 to 5.
 * Other spellings of those numbers (`4.0`, `04`, ` 4`) are refused with the rest, as not integers
 * in the form the document promises.
 */
export const StarParam = Schema.transformOrFail(
  Schema.String.annotations({ jsonSchema: { type: "integer", minimum: 1, maximum: 5, description: starMeaning } }),
  Star,
  {
    strict: true,
    decode: (s, _, ast) =>
      /^[1-5]$/.test(s)
        ? ParseResult.succeed(Number(s) as Star)
        : ParseResult.fail(new ParseResult.Type(ast, s, "expected an integer from 1 to 5")),
    encode: (star) => ParseResult.succeed(String(star))
  }
).annotations({ description: starMeaning })
