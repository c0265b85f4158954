/**
 * `X-Request-Id`: the id a client or a proxy gave the request, when it is sane, or a new one. It is
 * echoed on the answer and annotates every log line of the request (AccessLog.ts).
 */
import { randomUUID } from "node:crypto"

export const requestIdHeader = "x-request-id"

/**
 * 1 to 128 visible ASCII characters: enough for the ids proxies and tracing tools make, and
 * nothing that could break a log line (no spaces, no control characters) or fill the logs.
 */
const sane = /^[\x21-\x7e]{1,128}$/

/** The request's id: `given` when sane, else a random UUID (v4, lowercase). */
export const requestIdOf = (given: string | undefined): string =>
  given !== undefined && sane.test(given) ? given : randomUUID()
