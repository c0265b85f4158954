import { Schema } from "effect"

/** The body of every non-2xx answer (2.8): a stable snake_case code and a human message. */
export const ErrorResponse = Schema.Struct({
  error: Schema.String,
  message: Schema.String
}).annotate({ identifier: "ErrorResponse" })
export type ErrorResponse = typeof ErrorResponse.Type
