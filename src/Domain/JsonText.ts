import { HttpServerResponse } from "@effect/platform"

/**
 * An answer whose body is JSON already rendered (by PostgreSQL, see Catalog/Repo.ts): handlers
 * return it as is rather than decoding and re-encoding it.
 */
export const jsonText = (body: string, status = 200) =>
  HttpServerResponse.text(body, { status, contentType: "application/json" })
