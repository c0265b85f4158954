/**
 * What can go wrong in the CLI, and the one table from a kind of failure to an exit code. Every
 * failure leaves as one line on stderr, `error: <code>: <message>`, and its kind's exit code: the
 * service's typed errors by their HTTP status, the CLI's own by the kind they are raised with,
 * transport failures as network ones.
 */
import { Cause, Data, Schema } from "effect"
import { CliError } from "effect/cli"
import { HttpClientError } from "effect/http"
import { infoOf, isApiError } from "../client.ts"

/** The kinds of failure a script can tell apart by exit code. */
export type Kind = "failed" | "usage" | "auth" | "notFound" | "conflict" | "server" | "network"

/** The exit codes, one per kind (docs/cli.md and `--help` print this table). */
export const exitCodes: { readonly [K in "ok" | Kind]: number } = {
  ok: 0,
  failed: 1,
  usage: 2,
  auth: 3,
  notFound: 4,
  conflict: 5,
  server: 6,
  network: 7
}

/** What each exit code means, in the order of the table. */
export const exitCodeMeanings: ReadonlyArray<readonly [number, string]> = [
  [exitCodes.ok, "success"],
  [exitCodes.failed, "the operation ran but did not succeed (version flagged, checks still pending at --timeout), or a local file failed"],
  [exitCodes.usage, "usage: bad arguments, a bad pyproject.toml, not logged in, an existing install without --force, or a request the service refused as malformed (400, 405, 413, 415)"],
  [exitCodes.auth, "authentication or permission: missing, wrong or revoked token, or a role the caller lacks (401, 403)"],
  [exitCodes.notFound, "not found: no such publisher, node, version or token (404)"],
  [exitCodes.conflict, "conflict: the version or id exists already, or the record's state refuses the change (409)"],
  [exitCodes.server, "server: the service or its upstream failed (5xx, 429), or sent something unexpected (an unsafe or truncated archive, an undeclared answer)"],
  [exitCodes.network, "network: connection refused or reset, DNS failure, no answer within 60 seconds"]
]

/** A failure raised by the CLI itself: its kind (hence exit code), a stable code and one line of text. */
export class CliFailure extends Data.TaggedError("CliFailure")<{
  readonly kind: Kind
  readonly code: string
  readonly message: string
}> {}

export const usage = (code: string, message: string) => new CliFailure({ kind: "usage", code, message })
export const failed = (code: string, message: string) => new CliFailure({ kind: "failed", code, message })
export const serverFault = (code: string, message: string) => new CliFailure({ kind: "server", code, message })
export const networkFault = (code: string, message: string) => new CliFailure({ kind: "network", code, message })

/** The kind of an HTTP status the service answered with. */
export const kindOfStatus = (status: number): Kind =>
  status === 401 || status === 403
    ? "auth"
    : status === 404
    ? "notFound"
    : status === 409
    ? "conflict"
    : status === 429 || status >= 500
    ? "server"
    : status >= 400
    ? "usage"
    : "server"

/** A failure as the CLI reports it. */
export interface Report {
  readonly kind: Kind
  readonly code: string
  readonly message: string
}

/** One line, whatever the message held. */
const oneLine = (text: string) => text.replace(/\s+/g, " ").trim()

const transportCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EPIPE",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT"
])

/** The errno-style code somewhere in an error's cause chain (`fetch failed` hides it). */
const systemCode = (error: unknown, depth = 0): string | undefined => {
  if (typeof error !== "object" || error === null || depth > 5) return undefined
  const code = (error as { code?: unknown }).code
  if (typeof code === "string" && /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/.test(code)) return code
  const nested = (error as { errors?: unknown }).errors
  if (Array.isArray(nested)) {
    for (const e of nested) {
      const found = systemCode(e, depth + 1)
      if (found !== undefined) return found
    }
  }
  return systemCode((error as { cause?: unknown }).cause, depth + 1)
}

/** What a failure of any command is reported as. */
export const reportOf = (error: unknown): Report => {
  if (error instanceof CliFailure) return { kind: error.kind, code: error.code, message: oneLine(error.message) }
  if (isApiError(error)) {
    const info = infoOf(error)
    return { kind: kindOfStatus(info.status), code: info.code, message: oneLine(error.message) }
  }
  if (CliError.isCliError(error)) {
    return { kind: "usage", code: "usage", message: oneLine(cliErrorText(error)) }
  }
  if (HttpClientError.isHttpClientError(error)) {
    const { reason } = error
    const at = `${reason.request.method} ${reason.request.url}`
    if (reason._tag === "TransportError" || reason._tag === "EncodeError" || reason._tag === "InvalidUrlError") {
      const transport = reason._tag === "TransportError"
      const code = systemCode(reason.cause)
      return {
        kind: transport ? "network" : "usage",
        code: transport ? "network_error" : "bad_request",
        message: oneLine(`${at}: ${code ?? errorText(reason.cause) ?? reason._tag.replace(/Error$/, "")}`)
      }
    }
    // a body cut off by the connection is the network's fault
    const cut = systemCode(reason.cause)
    if (cut !== undefined && transportCodes.has(cut)) {
      return { kind: "network", code: "network_error", message: oneLine(`${at}: ${cut}`) }
    }
    // an answer that is not one the contract declares: the status says whose fault it is
    const status = reason.response.status
    return {
      kind: status >= 400 ? kindOfStatus(status) : "server",
      code: status >= 400 ? `http_${status}` : "unexpected_response",
      message: oneLine(`${at} answered ${status}${reason.description ? `: ${reason.description}` : ""}`)
    }
  }
  if (Schema.isSchemaError(error)) {
    return { kind: "server", code: "unexpected_response", message: oneLine(error.message) }
  }
  if (Cause.isTimeoutError(error)) return { kind: "network", code: "timeout", message: oneLine(error.message || "timed out") }
  const code = systemCode(error)
  if (code !== undefined && transportCodes.has(code)) {
    return { kind: "network", code: "network_error", message: oneLine(errorText(error) ?? code) }
  }
  return { kind: "failed", code: code === undefined ? "failed" : code.toLowerCase(), message: oneLine(errorText(error) ?? String(error)) }
}

const errorText = (error: unknown): string | undefined =>
  error instanceof Error ? error.message : typeof error === "string" ? error : undefined

/**
 * The text of a failure of the CLI's parser: the parser's own message, or for a request of help
 * that came with parse errors (Command.run raises those as ShowHelp) the messages of its errors.
 */
const cliErrorText = (error: CliError.CliError): string =>
  error._tag === "ShowHelp" ? error.errors.map((e) => e.message).join(" ") || error.message : error.message

/** The line a failure is printed as. */
export const formatReport = (report: Report): string => `error: ${report.code}: ${report.message}`

/** The exit code a failure ends the process with. */
export const exitCodeOf = (report: Report): number => exitCodes[report.kind]
