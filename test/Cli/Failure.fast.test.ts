/**
 * The one table from failures to exit codes: every error class of the contract by its status,
 * the CLI's own failures by kind, transport failures as network ones; and the one line printed.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Schema } from "effect"
import { CliError } from "effect/cli"
import { HttpClientError, HttpClientRequest, HttpClientResponse } from "effect/http"
import { apiErrors, NotFound, VersionExists } from "../../src/client.ts"
import { exitCodeMeanings, exitCodeOf, exitCodes, formatReport, kindOfStatus, reportOf, usage } from "../../src/Cli/Failure.ts"

const request = HttpClientRequest.get("http://127.0.0.1:9/nodes")

describe("exit codes", () => {
  it("the table: 0 ok, 1 failed, 2 usage, 3 auth, 4 not found, 5 conflict, 6 server, 7 network", () => {
    expect(exitCodes).toEqual({ ok: 0, failed: 1, usage: 2, auth: 3, notFound: 4, conflict: 5, server: 6, network: 7 })
    expect(exitCodeMeanings.map(([code]) => code)).toEqual([0, 1, 2, 3, 4, 5, 6, 7])
  })

  it("every error class of the contract maps by its status", () => {
    const expected = (status: number) =>
      status === 401 || status === 403 ? 3 : status === 404 ? 4 : status === 409 ? 5 : status === 429 || status >= 500 ? 6 : 2
    for (const ErrorClass of apiErrors) {
      const error = new ErrorClass({ message: `a ${ErrorClass.code}` })
      const report = reportOf(error)
      expect(report, ErrorClass.code).toEqual({ kind: kindOfStatus(ErrorClass.status), code: ErrorClass.code, message: `a ${ErrorClass.code}` })
      expect(exitCodeOf(report), ErrorClass.code).toBe(expected(ErrorClass.status))
    }
  })

  it("the line names the code: error: <code>: <message>, on one line", () => {
    const line = formatReport(reportOf(new VersionExists({ message: "Version 1.0.0 of node x\nalready exists" })))
    expect(line).toBe("error: version_exists: Version 1.0.0 of node x already exists")
    expect(formatReport(reportOf(new NotFound({ message: "No node x" })))).toBe("error: not_found: No node x")
  })

  it("a refused connection or a reset is a network failure", () => {
    const refused = new HttpClientError.HttpClientError({
      reason: new HttpClientError.TransportError({
        request,
        cause: Object.assign(new TypeError("fetch failed"), { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) })
      })
    })
    expect(reportOf(refused)).toMatchObject({ kind: "network", code: "network_error" })
    expect(reportOf(refused).message).toContain("ECONNREFUSED")
    expect(exitCodeOf(reportOf(refused))).toBe(7)
    expect(exitCodeOf(reportOf(new Cause.TimeoutError("slow")))).toBe(7)
  })

  it("an answer the contract does not declare is judged by its status", () => {
    const answer = (status: number) =>
      new HttpClientError.HttpClientError({
        reason: new HttpClientError.StatusCodeError({
          request,
          response: HttpClientResponse.fromWeb(request, new Response("<html>", { status }))
        })
      })
    expect(reportOf(answer(502))).toMatchObject({ kind: "server", code: "http_502" })
    expect(reportOf(answer(401))).toMatchObject({ kind: "auth", code: "http_401" })
    expect(reportOf(answer(200))).toMatchObject({ kind: "server", code: "unexpected_response" })
    const undecodable = Schema.decodeUnknownResult(Schema.Number)("x")
    expect(undecodable._tag === "Failure" && reportOf(undecodable.failure)).toMatchObject({ kind: "server", code: "unexpected_response" })
  })

  it("bad arguments are usage failures, with the parser's text on one line", () => {
    const missing = new CliError.ValidationError({ message: "Expected to find option: '--name'" })
    expect(reportOf(missing)).toEqual({ kind: "usage", code: "usage", message: "Expected to find option: '--name'" })
    expect(exitCodeOf(reportOf(usage("bad_manifest", "x")))).toBe(2)
  })

  it("anything else fails with 1, naming what it can", () => {
    expect(reportOf(Object.assign(new Error("EACCES: permission denied"), { code: "EACCES" }))).toMatchObject({ kind: "failed", code: "eacces" })
    expect(exitCodeOf(reportOf(new Error("boom")))).toBe(1)
  })
})
