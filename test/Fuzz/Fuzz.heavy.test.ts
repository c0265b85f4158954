/**
 * The schema-driven fuzzer (issue 12): every operation of the service's own `/openapi.json` gets
 * at least 100 requests, valid and mutated, as no one, a garbage token, a user, a publisher owner,
 * a site admin, or an API key. No answer may be a 5xx; every error body is one of the document's
 * error responses (ErrorResponse `{error, message}`, the code its status declares); every 2xx body
 * is valid against the schema declared for it (Ajv, JSON Schema 2020-12); and nothing is logged at
 * ERROR while it runs, since no request here is the service's fault.
 *
 * The vendors and the repository host are the loopback fakes of test/support, so the proxy and
 * claim routes answer as they do in production (a 502/503/504 there would be the service's doing,
 * not an absent vendor's, and fails the run like any 5xx). The fuzzer has its own service and
 * database: its deletes, bans and claims touch nothing else.
 *
 * Requests come from fast-check with a fixed seed (FUZZ_SEED overrides it): a failure prints the
 * request and its seed, and the same seed sends the same requests again.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { Service } from "../support/Service.ts"
import { captureLogs, type Document, fuzzOne, FuzzLayer, operationsOf, seed, seedCatalogue, validators } from "./Harness.ts"
import { type Operation, requestOf } from "./Requests.ts"

// from before the service starts: ERROR lines are counted while fuzzing
const logs = captureLogs()

const requestsPerOperation = 100
/** Requests in flight at once: enough to finish in time, few enough for two shared cores. */
const concurrency = 6

layer(FuzzLayer, { excludeTestServices: true, timeout: 120_000 })("schema-driven fuzzer", (it) => {
  it.effect(`every operation of /openapi.json, ${requestsPerOperation} requests each: no 5xx, errors are ErrorResponses, 2xx bodies match their schemas`, () =>
    Effect.gen(function*() {
      const service = yield* Service
      const doc = (yield* Effect.promise(() => service.fetch("/openapi.json").then((r) => r.json()))) as Document
      const operations = operationsOf(doc)
      const { context: ctx, credentials } = yield* seedCatalogue(service, doc.components.schemas)
      const check = validators(doc.components.schemas)

      // reads first, then writes, deletes last: each meets as much of the catalogue as it can
      const rank = (op: Operation) => ["GET", "POST", "PUT", "DELETE"].indexOf(op.method)
      const ordered = [...operations].sort((a, b) => rank(a) - rank(b))
      // an operation with two body types shares its hundred between them
      const variants = (op: Operation) => operations.filter((o) => o.method === op.method && o.path === op.path).length
      const jobs = ordered.flatMap((op, i) =>
        fc.sample(requestOf(ctx, op), { seed: seed + i, numRuns: Math.ceil(requestsPerOperation / variants(op)) })
          .map((req) => ({ op, req }))
      )
      const logsBefore = logs.count()
      const outcomes = yield* Effect.forEach(
        jobs,
        ({ op, req }) => Effect.promise(() => fuzzOne(service, check, credentials, op, req)),
        { concurrency }
      )
      const errorLines = logs.errorLinesSince(logsBefore)

      const problems = outcomes.flatMap((o) => (o.problem === undefined ? [] : [o.problem]))
      const sent = outcomes.filter((o) => o.status > 0).length
      const sentTo = new Map<string, number>()
      outcomes.forEach((o, i) => {
        const { op } = jobs[i]!
        if (o.status > 0) sentTo.set(`${op.method} ${op.path}`, (sentTo.get(`${op.method} ${op.path}`) ?? 0) + 1)
      })
      expect(problems.slice(0, 40), `${problems.length} problems in ${sent} requests`).toEqual([])
      expect(errorLines.slice(0, 10), "ERROR lines logged while fuzzing").toEqual([])
      // every operation had its hundred requests answered
      const distinct = new Set(operations.map((op) => `${op.method} ${op.path}`))
      const short = [...distinct].filter((op) => (sentTo.get(op) ?? 0) < requestsPerOperation)
      expect(short.map((op) => `${op}: ${sentTo.get(op) ?? 0}`), "operations answered fewer than their hundred").toEqual([])
      expect(distinct.size).toBeGreaterThanOrEqual(50)
    }), { timeout: 300_000 })
})
