/**
 * What an endpoint tells the HTTP edge about itself (src/Http/Routes.ts reads these annotations
 * when it builds the route table), so that a feature declares its route's needs beside the route
 * rather than in a list of the edge's.
 */
import { Context } from "effect"

/**
 * The handler reads the request body itself, as a stream, under its own limits (uploads): the
 * edge neither reads it nor bounds its arrival, and a client that leaves stops the handler.
 */
export class StreamedBody extends Context.Service<StreamedBody, true>()("registry/StreamedBody") {}

/**
 * The edge validates this endpoint's answers: a strong ETag of the body, this Cache-Control, and
 * 304 when `If-None-Match` names the tag (Http/Conditional.ts).
 */
export class Revalidated extends Context.Service<Revalidated, string>()("registry/Revalidated") {}
