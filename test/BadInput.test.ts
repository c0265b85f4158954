/**
 * Bad input never breaks the service: wrong types, out-of-range numbers, unknown sort columns,
 * malformed timestamps and versions, oversized and random query strings, unknown routes and wrong
 * methods are each answered 4xx with an ErrorResponse body (a 400 naming the parameter), or 200
 * when the input happens to be valid — never 5xx. So are the inputs that once answered 500
 * (issue 12): operator-only search text, multipart without a boundary, deeply nested JSON, huge
 * data: URLs; and impossible dates and non-decimal integers are refused, naming the parameter.
 */
import { expect, layer, vi } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { listNodesParams } from "./support/Catalogue.ts"
import { expectErrorBody, getText, parseJson, sendText } from "./support/Http.ts"
import { forAll } from "./support/Property.ts"
import { rawGet, type RawResponse } from "./support/RawHttp.ts"
import { Service } from "./support/Service.ts"

/**
 * The lines the service logs at ERROR while `effect` runs: it runs in this process, and Effect's
 * default logger writes through `console`.
 */
const errorLogsDuring = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => [vi.spyOn(console, "log"), vi.spyOn(console, "error")] as const),
    (spies) =>
      Effect.map(effect, () =>
        spies.flatMap((spy) => spy.mock.calls.map((args) => args.map(String).join(" "))).filter((line) => line.includes("level=ERROR"))),
    (spies) => Effect.sync(() => spies.forEach((spy) => spy.mockRestore()))
  )

/** An answer read as text: through `fetch`, or through the raw socket. */
interface Answer {
  readonly status: number
  readonly headers: Headers | Readonly<Record<string, string>>
  readonly text: string
}

const fromRaw = (r: RawResponse): Answer => ({ status: r.status, headers: r.headers, text: r.body })

const header = (answer: Answer, name: string) =>
  answer.headers instanceof Headers ? answer.headers.get(name) ?? undefined : answer.headers[name]

const describe = (answer: Answer, request: string) => `${request} -> ${answer.status} ${answer.text.slice(0, 300)}`

/** `400 bad_request` whose message names `param`. */
const expectBadRequest = (answer: Answer, param: string, request: string) => {
  expect(answer.status, describe(answer, request)).toBe(400)
  const body = parseJson(answer.text, request) as { message: string }
  expectErrorBody(body, "bad_request")
  expect(body.message, request).toContain(param)
}

const expectNodeList = (answer: Answer, request: string) => {
  expect(answer.status, describe(answer, request)).toBe(200)
  expect(parseJson(answer.text, request)).toEqual({
    limit: expect.any(Number),
    nodes: expect.any(Array),
    page: expect.any(Number),
    total: expect.any(Number),
    totalPages: expect.any(Number)
  })
}

/** The only acceptable outcomes for arbitrary input: a valid list, or a 4xx ErrorResponse. */
const expectListOrClientError = (answer: Answer, request: string) => {
  expect(answer.status, describe(answer, request)).toBeLessThan(500)
  if (answer.status === 200) return expectNodeList(answer, request)
  expect(answer.status, describe(answer, request)).toBeGreaterThanOrEqual(400)
  expectErrorBody(parseJson(answer.text, request))
}

/** Checks every answer, then reports all the unacceptable ones at once. */
const expectAllListOrClientError = (answers: ReadonlyArray<readonly [string, Answer]>) => {
  const unacceptable = answers.filter(([, a]) => !(a.status === 200 || (a.status >= 400 && a.status < 500)))
  expect(unacceptable.map(([request, a]) => describe(a, request))).toEqual([])
  for (const [request, answer] of answers) expectListOrClientError(answer, request)
}

// the simulated vendors: the image and music routes answer without a vendor to call
layer(Service.layer((c) => ({ ...c, vendorMode: "simulated" })), { excludeTestServices: true })("bad input", (it) => {
  it.effect("seeds a small catalogue so that valid queries have something to answer", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* service.writes.upsertPublishers([{ id: "acme", name: "Acme" }])
      yield* service.writes.insertNodes([
        { id: "alpha", publisher_id: "acme", name: "Alpha" },
        { id: "beta", publisher_id: "acme", name: "Beta" }
      ])
      yield* service.writes.insertVersions([{ node_id: "alpha", version: "1.0.0", status: "NodeVersionStatusActive" }])
      expectNodeList(yield* getText(service, "/nodes"), "/nodes")
    }))

  const badValues: ReadonlyArray<readonly [query: string, param: string]> = [
    // wrong types
    ["page=abc", "page"],
    ["page=1.5", "page"],
    ["page=", "page"],
    ["page=NaN", "page"],
    ["page=Infinity", "page"],
    ["page=true", "page"],
    ["limit=1.5", "limit"],
    ["limit=abc", "limit"],
    ["limit=", "limit"],
    ["latest=maybe", "latest"],
    ["latest=", "latest"],
    ["latest=2", "latest"],
    // negative, zero, huge
    ["page=0", "page"],
    ["page=-1", "page"],
    ["page=-0", "page"],
    ["page=1e400", "page"],
    ["page=-1e400", "page"],
    ["page=1000000001", "page"],
    ["page=99999999999999999999", "page"],
    ["limit=0", "limit"],
    ["limit=-5", "limit"],
    ["limit=-1e400", "limit"],
    // unknown sort columns and directions
    ["sort=foo", "sort"],
    ["sort=downloads;up", "sort"],
    ["sort=;desc", "sort"],
    ["sort=", "sort"],
    ["sort=name%3Bdesc%3Bdesc", "sort"],
    ["sort=name&sort=bogus", "sort"],
    ["sort=password", "sort"],
    ["sort=id%3B%20DROP%20TABLE%20nodes", "sort"],
    // malformed timestamps
    ["timestamp=yesterday", "timestamp"],
    ["timestamp=2024-13-01T00:00:00Z", "timestamp"],
    ["timestamp=2024-05-01T25:00:00Z", "timestamp"],
    ["timestamp=2024-05-32", "timestamp"],
    ["timestamp=1714000000", "timestamp"],
    ["timestamp=", "timestamp"],
    ["timestamp=2024-05-01T12:00:00Zjunk", "timestamp"],
    // impossible dates and times (issue 12, finding 12)
    ["timestamp=2020-02-30", "timestamp"],
    ["timestamp=2023-02-29", "timestamp"],
    ["timestamp=2024-04-31T00:00:00Z", "timestamp"],
    ["timestamp=2024-00-10", "timestamp"],
    ["timestamp=2024-05-00", "timestamp"],
    ["timestamp=2024-05-01T23:60:00Z", "timestamp"],
    ["timestamp=2024-05-01T12:00:60Z", "timestamp"],
    ["timestamp=2024-05-01T12:00:00%2B24:00", "timestamp"],
    ["timestamp=2024-05-01T12:00:00-01:60", "timestamp"],
    // integers not written in decimal digits (issue 12, finding 12)
    ["page=0x10", "page"],
    ["page=0b1", "page"],
    ["page=0o7", "page"],
    ["page=1e1", "page"],
    ["page=%2B1", "page"],
    ["page=%201", "page"],
    ["page=1%20", "page"],
    ["page=1.0", "page"],
    ["page=1.", "page"],
    ["page=%EF%BC%91", "page"],
    ["limit=0x10", "limit"],
    ["limit=1e3", "limit"],
    ["limit=1e400", "limit"],
    // invalid host versions
    ["host_version=banana", "host_version"],
    ["host_version=1..2", "host_version"],
    ["host_version=1.2.3.4", "host_version"],
    ["host_version=%3E%3D1.0.0", "host_version"],
    // too long or too many
    [`supported_os=${"x".repeat(201)}`, "supported_os"],
    [`supported_accelerator=${"x".repeat(201)}`, "supported_accelerator"],
    [`form_factor=${"x".repeat(201)}`, "form_factor"],
    [`host_version=1.0.0-${"a".repeat(300)}`, "host_version"],
    [Array.from({ length: 501 }, (_, i) => `node_id=n${i}`).join("&"), "node_id"],
    [Array.from({ length: 9 }, () => "sort=name").join("&"), "sort"]
  ]

  const badCases = badValues.map(([query, param]) => ({ query, param, label: query.length > 60 ? `${query.slice(0, 60)}...` : query }))

  it.effect.each(badCases)("GET /nodes?$label is 400 naming the parameter", ({ query, param }) =>
    Effect.gen(function*() {
      const service = yield* Service
      expectBadRequest(yield* getText(service, `/nodes?${query}`), param, `/nodes?${query.slice(0, 80)}`)
    }))

  it.effect("the same bad values are refused with latest=true (the uncached path) too", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const [query, param] of badValues.filter(([, p]) => p !== "latest")) {
        expectBadRequest(yield* getText(service, `/nodes?latest=true&${query}`), param, `/nodes?latest=true&${query.slice(0, 80)}`)
      }
    }))

  it.effect("bad values on the publisher listings are 400 naming the parameter (after authentication)", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* Effect.promise(() => service.token({ sub: "bad-input-user" }))
      for (
        const [path, param] of [
          ["/publishers/acme/nodes?include_banned=maybe", "include_banned"],
          ["/publishers/acme/nodes/v2?include_banned=yes", "include_banned"],
          ["/publishers/acme/nodes/v2?page=0", "page"],
          ["/publishers/acme/nodes/v2?page=abc", "page"],
          ["/publishers/acme/nodes/v2?limit=-1", "limit"],
          ["/publishers/acme/nodes/v2?page=1e400", "page"]
        ] as const
      ) {
        expectBadRequest(yield* getText(service, path, { token }), param, path)
      }
    }))

  it.effect("values at the bounds are served: huge limits are clamped to 500, the last allowed page is an empty page", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const query of ["limit=501", "limit=9007199254740991", "limit=1000"]) {
        const answer = yield* getText(service, `/nodes?${query}`)
        expectNodeList(answer, query)
        expect(parseJson(answer.text, query)).toMatchObject({ limit: 500 })
      }
      // above Number.MAX_SAFE_INTEGER: clamping or a 400 naming limit are both acceptable
      for (const query of ["limit=99999999999999999999"]) {
        const answer = yield* getText(service, `/nodes?${query}`)
        if (answer.status === 200) expect(parseJson(answer.text, query)).toMatchObject({ limit: 500 })
        else expectBadRequest(answer, "limit", query)
      }
      for (const query of ["page=1000000000", "page=1000000000&limit=500", "page=1000000000&limit=500&latest=true"]) {
        const answer = yield* getText(service, `/nodes?${query}`)
        expectNodeList(answer, query)
        expect(parseJson(answer.text, query)).toMatchObject({ page: 1000000000, nodes: [], total: 2 })
      }
    }))

  it.effect("valid and unknown parameters are served 200", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (
        const query of [
          "latest=true",
          "latest=false",
          "latest=1",
          "latest=0",
          "page=2",
          "timestamp=2024-05-01",
          "timestamp=2024-02-29",
          "timestamp=2000-02-29T23:59:59Z",
          "page=010",
          "timestamp=2024-05-01T12:00:00Z",
          "timestamp=2024-05-01T12:00:00.123%2B02:00",
          "sort=name;desc",
          "sort=name%3Bdesc&sort=id",
          "host_version=1.2.3",
          "host_version=v1.2.3",
          "node_id=alpha&node_id=nope",
          "supported_os=linux&supported_accelerator=cuda&form_factor=git-linux",
          "unknown=1",
          "unknown=%zz",
          "PAGE=abc",
          "page[]=abc",
          ""
        ]
      ) {
        expectNodeList(yield* getText(service, `/nodes?${query}`), query)
      }
    }))

  // --- issue 12, finding 12: strict values ----------------------------------------------------

  const pad = (n: number, width: number) => String(n).padStart(width, "0")
  const leap = (year: number) => year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  const daysIn = (year: number, month: number) => month === 2 ? (leap(year) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31

  /** A date (and time) with one impossible component. */
  const impossibleTimestamp = fc.record({
    year: fc.integer({ min: 0, max: 9999 }),
    month: fc.integer({ min: 1, max: 12 }),
    time: fc.constantFrom("", "T12:00:00Z", "T00:00Z", "T23:59:59.999+02:00", " 08:30:00")
  }).chain(({ month, time, year }) =>
    fc.oneof(
      fc.integer({ min: daysIn(year, month) + 1, max: 99 }).map((day) => `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}${time}`),
      fc.constantFrom(0, 13, 20, 99).map((m) => `${pad(year, 4)}-${pad(m, 2)}-01${time}`),
      fc.constant(`${pad(year, 4)}-${pad(month, 2)}-00${time}`),
      fc.tuple(fc.integer({ min: 24, max: 99 }), fc.integer({ min: 60, max: 99 }), fc.integer({ min: 0, max: 2 })).map(([h, ms, which]) => {
        const [hh, mm, ss] = which === 0 ? [h, 0, 0] : which === 1 ? [0, ms, 0] : [0, 0, ms]
        return `${pad(year, 4)}-${pad(month, 2)}-01T${pad(hh, 2)}:${pad(mm, 2)}:${pad(ss, 2)}Z`
      })
    )
  )

  it.effect(
    "random impossible dates and times are 400 naming timestamp",
    () =>
      forAll(
        [impossibleTimestamp, fc.boolean()],
        ([timestamp, latest]) =>
          Effect.gen(function*() {
            const service = yield* Service
            const query = new URLSearchParams({ timestamp, ...(latest ? { latest: "true" } : {}) }).toString()
            expectBadRequest(yield* getText(service, `/nodes?${query}`), "timestamp", query)
          }),
        { numRuns: 100 }
      )
  )

  it.effect(
    "random valid dates and times, in each accepted form, are served",
    () =>
      forAll(
        [
          fc.date({ min: new Date("0000-01-01T00:00:00Z"), max: new Date("9999-12-31T23:59:59Z"), noInvalidDate: true }),
          fc.constantFrom(
            (iso: string) => iso,
            (iso: string) => iso.slice(0, 10),
            (iso: string) => `${iso.slice(0, 19)}Z`,
            (iso: string) => `${iso.slice(0, 16)}Z`,
            (iso: string) => `${iso.slice(0, 19)}+05:30`,
            (iso: string) => `${iso.slice(0, 19)}-0800`
          )
        ],
        ([date, form]) =>
          Effect.gen(function*() {
            const service = yield* Service
            const query = new URLSearchParams({ timestamp: form(date.toISOString()) }).toString()
            expectNodeList(yield* getText(service, `/nodes?${query}`), query)
          }),
        { numRuns: 100 }
      )
  )

  /** Spellings of `n` that `Number` reads but that are not decimal digits. */
  const nonDecimalSpellings: ReadonlyArray<(n: number) => string> = [
    (n) => `0x${n.toString(16)}`,
    (n) => `0X${n.toString(16).toUpperCase()}`,
    (n) => `0b${n.toString(2)}`,
    (n) => `0o${n.toString(8)}`,
    (n) => `${n}e0`,
    (n) => `${n * 10}E-1`,
    (n) => `+${n}`,
    (n) => ` ${n}`,
    (n) => `${n} `,
    (n) => `\t${n}\n`,
    (n) => `${n}.0`,
    (n) => `${n}.`,
    (n) => `${n}_0`,
    (n) => `${n}n`,
    (n) => String(n).replace(/\d/g, (d) => String.fromCharCode(0xff10 + Number(d)))
  ]

  it.effect(
    "random non-decimal spellings of integers are 400 naming the parameter",
    () =>
      forAll(
        [
          fc.integer({ min: 1, max: 500 }),
          fc.constantFrom(...nonDecimalSpellings),
          fc.constantFrom(
            ...[
              ["/nodes", "page"],
              ["/nodes", "limit"],
              ["/nodes/search", "page"],
              ["/nodes/search", "limit"],
              ["/publishers", "limit"],
              ["/versions", "pageSize"],
              ["/host-nodes", "pageSize"]
            ] as const
          )
        ],
        ([n, spell, [path, param]]) =>
          Effect.gen(function*() {
            const service = yield* Service
            const query = new URLSearchParams({ [param]: spell(n) }).toString()
            expectBadRequest(yield* getText(service, `${path}?${query}`), param, `${path}?${query}`)
          }),
        { numRuns: 150 }
      )
  )

  it.effect("a repeated scalar parameter is a 400 naming it or is served", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (
        const [query, param] of [["page=1&page=2", "page"], ["limit=5&limit=6", "limit"], ["latest=true&latest=false", "latest"]] as const
      ) {
        const answer = yield* getText(service, `/nodes?${query}`)
        if (answer.status === 200) expectNodeList(answer, query)
        else expectBadRequest(answer, param, query)
      }
    }))

  it.effect("oversized query strings (20 KB, 100 KB) are a 4xx ErrorResponse", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const size of [20_000, 100_000]) {
        const request = `fetch, ${size} bytes of query`
        const answer = yield* getText(service, `/nodes?supported_os=${"a".repeat(size)}`)
        expect(answer.status, describe(answer, request)).toBeGreaterThanOrEqual(400)
        expect(answer.status, describe(answer, request)).toBeLessThan(500)
        expectErrorBody(parseJson(answer.text, request))
      }
      for (const size of [20_000, 100_000, 1_000_000]) {
        const request = `raw socket, ${size} bytes of query`
        const answer = fromRaw(yield* rawGet(service.baseUrl, `/nodes?supported_os=${"a".repeat(size)}`))
        expect(answer.status, describe(answer, request)).toBeGreaterThanOrEqual(400)
        expect(answer.status, describe(answer, request)).toBeLessThan(500)
        expectErrorBody(parseJson(answer.text, request))
      }
      // an oversized header counts the same
      const cookie = fromRaw(yield* rawGet(service.baseUrl, "/nodes", [`Cookie: c=${"x".repeat(40_000)}`]))
      expect(cookie.status).toBeGreaterThanOrEqual(400)
      expect(cookie.status).toBeLessThan(500)
      expectErrorBody(parseJson(cookie.text, "oversized header"))
    }))

  it.effect("a long query string under the server's limit is served (unknown parameters ignored)", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectNodeList(yield* getText(service, `/nodes?filler=${"a".repeat(10_000)}`), "10 KB unknown parameter")
      expectNodeList(
        yield* getText(service, `/nodes?${Array.from({ length: 1000 }, (_, i) => `x${i}=${i}`).join("&")}`),
        "1000 unknown parameters"
      )
      expectBadRequest(yield* getText(service, `/nodes?supported_os=${"a".repeat(10_000)}`), "supported_os", "10 KB supported_os")
    }))

  it.effect("percent-encoding garbage in the query is never a 5xx", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const answers: Array<[string, Answer]> = []
      for (
        const query of [
          "%",
          "%%",
          "%zz",
          "page=%zz",
          "page=%",
          "page=1%",
          "sort=%zz",
          "timestamp=%E0%A4%A",
          "host_version=%C0%AF",
          "supported_os=%00",
          "supported_os=%FF%FE",
          "%70age=abc",
          "page=%31",
          "&&&",
          "===",
          "page&limit",
          "node_id=%ED%A0%80",
          "sort=name%00"
        ]
      ) {
        answers.push([query, yield* getText(service, `/nodes?${query}`)])
        answers.push([`raw ${query}`, fromRaw(yield* rawGet(service.baseUrl, `/nodes?${query}`))])
      }
      expectAllListOrClientError(answers)
      // a percent-encoded "page" is still the parameter page
      expectBadRequest(yield* getText(service, "/nodes?%70age=abc"), "page", "%70age=abc")
    }))

  it.effect("malformed percent-encoding in path parameters is a 4xx ErrorResponse", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* Effect.promise(() => service.token({ sub: "path-user" }))
      const answers: Array<[string, Answer]> = []
      for (
        const path of [
          "/nodes/%zz/versions/1.0.0",
          "/nodes/alpha/versions/%",
          "/nodes/%E0%A4%A/versions/%C0%AF",
          "/nodes/%00/versions/1.0.0",
          "/publishers/%zz/nodes",
          "/publishers/%ED%A0%80/nodes/v2",
          "/publishers/%00/nodes",
          "/publishers/acme%00/nodes/v2",
          "/nodes/alpha/versions/1.0.0%00"
        ]
      ) {
        answers.push([path, yield* getText(service, path, { token })])
      }
      // every path listed, so that one report names all the failing ones
      expect(answers.filter(([, a]) => !(a.status >= 400 && a.status < 500)).map(([path, a]) => describe(a, path))).toEqual([])
      for (const [path, answer] of answers) expectErrorBody(parseJson(answer.text, path))
    }))

  it.effect("an unknown route is 404 ErrorResponse", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const path of ["/nope", "/nodes/alpha/unknown", "/publishers/acme/unknown", "/nodes/alpha/versions/1.0.0/extra", "/%zz"]) {
        const answer = yield* getText(service, path)
        expect(answer.status, describe(answer, path)).toBe(404)
        expectErrorBody(parseJson(answer.text, path), "not_found")
      }
      for (const method of ["POST", "DELETE"]) {
        const answer = yield* sendText(service, method, "/nope")
        expect(answer.status, describe(answer, `${method} /nope`)).toBe(404)
        expectErrorBody(parseJson(answer.text, `${method} /nope`), "not_found")
      }
    }))

  it.effect("a wrong method on a known path is 405 ErrorResponse with an Allow header", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (
        const [method, path] of [
          ["DELETE", "/nodes"],
          ["POST", "/nodes"],
          ["PUT", "/nodes"],
          ["PATCH", "/nodes/alpha/versions/1.0.0"],
          ["DELETE", "/nodes/alpha/versions/1.0.0"],
          ["POST", "/health"],
          ["DELETE", "/ready"],
          // an authenticated route: the method is wrong whoever asks
          ["DELETE", "/publishers/acme/nodes"],
          ["POST", "/publishers/acme/nodes/v2"]
        ] as const
      ) {
        const request = `${method} ${path}`
        // an empty body, typed as `fetch` types a string body
        const answer = yield* sendText(service, method, path, { raw: "", headers: { "content-type": "text/plain;charset=UTF-8" } })
        expect(answer.status, describe(answer, request)).toBe(405)
        expectErrorBody(parseJson(answer.text, request))
        expect(header(answer, "allow"), request).toBeDefined()
        expect(header(answer, "allow")!.split(",").map((m) => m.trim()), request).toContain("GET")
      }
    }))

  it.effect("a wrong method on the documentation routes is 405 too", () =>
    Effect.gen(function*() {
      const service = yield* Service
      for (const [method, path] of [["DELETE", "/openapi.json"], ["POST", "/docs"]] as const) {
        const request = `${method} ${path}`
        const answer = yield* sendText(service, method, path)
        expect(answer.status, describe(answer, request)).toBe(405)
        expectErrorBody(parseJson(answer.text, request))
        expect(header(answer, "allow"), request).toContain("GET")
      }
    }))

  it.effect(
    "random values of each known parameter: 200, or 400 naming it (never 5xx)",
    () =>
      forAll(
        [
          fc.constantFrom(...listNodesParams),
          fc.oneof(
            fc.string(),
            fc.string({ unit: "binary", maxLength: 60 }),
            fc.string({ unit: "grapheme", maxLength: 60 }),
            // control characters, NUL included, around ordinary text
            fc.tuple(fc.string({ maxLength: 10 }), fc.string({ unit: fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 3 }))
              .map(([a, b]) => a + b),
            fc.integer().map(String),
            fc.double().map(String),
            fc.bigInt().map(String),
            fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
            fc.constantFrom("true", "false", "1", "0", "-0", "1e400", "0x10", " 1", "1 ", "name;desc", "1.2.3", "v1.2.3")
          ),
          fc.boolean()
        ],
        ([param, value, latest]) =>
          Effect.gen(function*() {
            const service = yield* Service
            const pairs: Array<[string, string]> = [[param, value], ...(latest ? [["latest", "true"] as [string, string]] : [])]
            const query = new URLSearchParams(pairs).toString()
            const answer = yield* getText(service, `/nodes?${query}`)
            if (answer.status === 200) return expectNodeList(answer, query)
            expectBadRequest(answer, param, query)
          }),
        { numRuns: 200 }
      )
  )

  it.effect(
    "control characters (NUL included) in text parameters: 200, or 400 naming the parameter (never 5xx)",
    () =>
      forAll(
        [
          fc.constantFrom("supported_os", "supported_accelerator", "node_id", "host_version", "form_factor", "sort", "timestamp"),
          fc.string({ maxLength: 8 }),
          fc.constantFrom("\u0000", "\u0000\u0000", "\u0001", "\t", "\n", "\r\n", "\u001b", "\u007f", "\u0000x"),
          fc.string({ maxLength: 8 })
        ],
        ([param, before, control, after]) =>
          Effect.gen(function*() {
            const service = yield* Service
            const query = new URLSearchParams([[param, before + control + after], ["latest", "true"]]).toString()
            const answer = yield* getText(service, `/nodes?${query}`)
            if (answer.status === 200) return expectNodeList(answer, query)
            expectBadRequest(answer, param, query)
          }),
        { numRuns: 100 }
      )
  )

  const garbagePiece = fc.oneof(
    fc.constantFrom(
      "%",
      "%zz",
      "%4",
      "%E0%A4%A",
      "%C0%AF",
      "%00",
      "%FF",
      "%ED%A0%80",
      "&",
      "=",
      "+",
      ";",
      "[",
      "]",
      "?",
      "/",
      "\\",
      "..",
      ...listNodesParams
    ),
    fc.string({ maxLength: 20 }),
    fc.string({ unit: "grapheme", maxLength: 10 }),
    fc.string({ unit: "binary", maxLength: 10 })
  )

  it.effect(
    "random query strings (unicode, percent-encoded garbage) via fetch: a list or a 4xx ErrorResponse",
    () =>
      forAll(
        [fc.array(garbagePiece, { maxLength: 30 }).map((pieces) => pieces.join(""))],
        ([query]) =>
          Effect.gen(function*() {
            const service = yield* Service
            expectListOrClientError(yield* getText(service, `/nodes?${query}`), JSON.stringify(query))
          }),
        { numRuns: 200 }
      )
  )

  it.effect(
    "random bytes as the query string (raw socket): a list or a 4xx ErrorResponse",
    () =>
      forAll(
        [fc.uint8Array({ maxLength: 200 }), fc.constantFrom("/nodes?", "/nodes/", "/publishers/", "/")],
        ([bytes, prefix]) =>
          Effect.gen(function*() {
            const service = yield* Service
            const answer = fromRaw(yield* rawGet(service.baseUrl, Buffer.concat([Buffer.from(prefix), bytes])))
            const request = `${prefix}${Buffer.from(bytes).toString("hex")} (hex)`
            expect(answer.status, describe(answer, request)).toBeLessThan(500)
            expect(answer.status, describe(answer, request)).toBeGreaterThanOrEqual(200)
            if (answer.status >= 300) expectErrorBody(parseJson(answer.text, request))
            else expect(parseJson(answer.text, request)).toBeDefined()
          }),
        { numRuns: 200 }
      )
  )

  // --- issue 12, finding 2: client input that answered 500 -------------------------------------

  it.effect("search of operators only (33 hyphens) is 400 naming search; heavy operators around a word are served", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const search = (text: string) => getText(service, `/nodes/search?${new URLSearchParams({ search: text })}`)
      // nothing to look for: no letter or digit
      for (
        const text of [
          "-".repeat(33),
          "-".repeat(200),
          "-",
          "!".repeat(100),
          "\"".repeat(99),
          "-\"\"".repeat(40),
          "- ".repeat(40),
          "-!-&-|-(-)-<".repeat(10),
          "-\"-\"-\"".repeat(20)
        ]
      ) expectBadRequest(yield* search(text), "search", `search=${text.slice(0, 40)}`)
      // a word among them: served (runs of negations reduced, deep nesting parsed)
      for (
        const text of [
          "(".repeat(99) + "a" + ")".repeat(99),
          "-a ".repeat(60),
          Array.from({ length: 35 }, () => "a or").join(" ") + " b",
          `a ${"-".repeat(33)} b`,
          `${"-".repeat(33)}a`
        ]
      ) expectNodeList(yield* search(text), `search=${text.slice(0, 40)}`)
      // a blank text is no criterion
      expectNodeList(yield* search("   "), "search=(blank)")
    }))

  it.effect(
    "random operator-heavy search texts: served when they hold a letter or digit (or are blank), else 400 naming search",
    () =>
      forAll(
        [
          fc.oneof(
            fc.array(fc.constantFrom("-", "!", "&", "|", "(", ")", "\"", " ", "or", "OR", "and", ":*", "<->", "a", "b1", "-a"), { maxLength: 120 }),
            // long runs of negations, spaced by what the parser skips
            fc.tuple(
              fc.array(fc.constantFrom("-", "-", "-", "-", "-", " ", "!", "(", ")", "&", "|", "<"), { minLength: 60, maxLength: 190 }),
              fc.constantFrom("", "a", " b1", "\"a b\"")
            ).map(([run, word]) => [...run, word])
          )
        ],
        ([pieces]) =>
          Effect.gen(function*() {
            const service = yield* Service
            const search = pieces.join("")
            const answer = yield* getText(service, `/nodes/search?${new URLSearchParams({ search })}`)
            if (search.trim() === "" || /[a-z0-9]/i.test(search)) return expectNodeList(answer, JSON.stringify(search))
            expectBadRequest(answer, "search", JSON.stringify(search))
          }),
        { numRuns: 100 }
      )
  )

  /** Every JSON endpoint the tests below send bodies to, with a caller allowed to reach it. */
  const jsonEndpoints = [
    ["POST", "/publishers"],
    ["PUT", "/publishers/acme"],
    ["POST", "/publishers/acme/nodes"],
    // publish, as the CLI sends it (comfy-cli: comfy_cli/registry/api.py, publish_node_version)
    ["POST", "/publishers/acme/nodes/alpha/versions"],
    ["POST", "/bulk/nodes/versions"],
    ["POST", "/proxy/imagevendor/v1/ai/image-style-transfer"]
  ] as const

  it.effect("multipart/form-data without a boundary on a JSON endpoint is 415 unsupported_media_type", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* Effect.promise(() => service.token({ sub: "multipart-user" }))
      for (const [method, path] of jsonEndpoints) {
        for (const contentType of ["multipart/form-data", "multipart/form-data; charset=utf-8", "multipart/form-data; boundary="]) {
          const request = `${method} ${path} (${contentType})`
          const answer = yield* sendText(service, method, path, { token, raw: "{}", headers: { "content-type": contentType } })
          expect(answer.status, describe(answer, request)).toBe(415)
          expectErrorBody(parseJson(answer.text, request), "unsupported_media_type")
        }
      }
    }))

  it.effect("a body of another media type (XML, bytes, zip) on a JSON endpoint is 415 at once, JSON types are read", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* Effect.promise(() => service.token({ sub: "multipart-user" }))
      for (const [method, path] of jsonEndpoints) {
        for (const contentType of ["application/xml", "application/octet-stream", "application/zip", "image/png"]) {
          const request = `${method} ${path} (${contentType})`
          const answer = yield* sendText(service, method, path, { token, raw: "<a/>", headers: { "content-type": contentType } })
          expect(answer.status, describe(answer, request)).toBe(415)
          expectErrorBody(parseJson(answer.text, request), "unsupported_media_type")
        }
        // JSON under a structured-syntax type or a text type is read as JSON: never a 415
        for (const contentType of ["application/merge-patch+json", "text/plain; charset=utf-8"]) {
          const answer = yield* sendText(service, method, path, { token, raw: "{}", headers: { "content-type": contentType } })
          expect(answer.status, `${method} ${path} (${contentType})`).not.toBe(415)
        }
      }
    }))

  it.effect("multipart/form-data without a boundary on the music endpoint (multipart is its type) is 400", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* Effect.promise(() => service.token({ sub: "multipart-user" }))
      for (const contentType of ["multipart/form-data", "multipart/form-data; boundary="]) {
        const request = `POST music (${contentType})`
        const answer = yield* sendText(service, "POST", "/proxy/musicvendor/v2m/generate", {
          token,
          raw: "--x\r\n\r\n--x--\r\n",
          headers: { "content-type": contentType }
        })
        expect(answer.status, describe(answer, request)).toBe(400)
        expectErrorBody(parseJson(answer.text, request), "bad_request")
      }
    }))

  it.effect(
    "random JSON nesting: deeper than 64 levels is 400 naming the nesting, up to 64 is decoded as usual",
    () =>
      forAll(
        [fc.integer({ min: 1, max: 5000 }), fc.constantFrom(...([["[", "]"], ['{"a":', "}"], ['{"name":[', "]}"]] as const))],
        ([depth, [open, close]]) =>
          Effect.gen(function*() {
            const service = yield* Service
            const token = yield* Effect.promise(() => service.token({ sub: "nesting-user" }))
            const raw = open.repeat(depth) + "1" + close.repeat(depth)
            const levels = depth * (open === '{"name":[' ? 2 : 1)
            const request = `POST /publishers nested ${levels} levels`
            const answer = yield* sendText(service, "POST", "/publishers", { token, raw })
            expect(answer.status, describe(answer, request)).toBe(400)
            const body = parseJson(answer.text, request) as { message: string }
            expectErrorBody(body, "bad_request")
            expect(body.message.includes("nests deeper than 64"), describe(answer, request)).toBe(levels > 64)
          }),
        { numRuns: 60 }
      )
  )

  /** Base64 of `bytes` in the forms accepted: standard or URL-safe alphabet, padded or not. */
  const base64Forms = (bytes: Uint8Array) => {
    const standard = Buffer.from(bytes).toString("base64")
    return [standard, standard.replace(/=+$/, ""), Buffer.from(bytes).toString("base64url")]
  }

  it.effect(
    "random data: URLs in an image field: valid ones served, one bad character anywhere a 400 naming the field",
    () =>
      forAll(
        [
          fc.uint8Array({ minLength: 1, maxLength: 3000 }),
          fc.nat(),
          fc.constantFrom("image/png", "image/jpeg", "image/webp;charset=x", "image/svg+xml;a=b;c=d"),
          fc.constantFrom("!", "*", " ", "\n", ".", ",", "é", "\u0000"),
          fc.nat()
        ],
        ([bytes, formIndex, type, bad, at]) =>
          Effect.gen(function*() {
            const service = yield* Service
            const token = yield* Effect.promise(() => service.token({ sub: "image-user" }))
            const forms = base64Forms(bytes)
            const data = forms[formIndex % forms.length]!
            const valid = `data:${type};base64,${data}`
            const path = "/proxy/imagevendor/v1/ai/image-style-transfer"
            const served = yield* sendText(service, "POST", path, { token, body: { image: valid, reference_image: data } })
            expect(served.status, describe(served, valid.slice(0, 60))).toBe(200)

            const position = at % data.length
            const broken = `data:${type};base64,${data.slice(0, position)}${bad}${data.slice(position + 1)}`
            const refused = yield* sendText(service, "POST", path, { token, body: { image: "https://images.example/a.png", reference_image: broken } })
            expect(refused.status, describe(refused, broken.slice(0, 60))).toBe(400)
            expect((parseJson(refused.text, broken.slice(0, 60)) as { message: string }).message).toContain("reference_image")
          }),
        { numRuns: 60 }
      )
  )

  it.effect("the reproductions of issue 12 are answered 4xx, and none is logged at ERROR", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* Effect.promise(() => service.token({ sub: "log-user" }))
      const emptySub = yield* Effect.promise(() => service.token({ sub: "" }))
      const publish = "/publishers/acme/nodes/alpha/versions"
      const statuses: Array<number> = []
      const errors = yield* errorLogsDuring(Effect.gen(function*() {
        for (
          const [method, path, options] of [
            ["GET", `/nodes/search?search=${"-".repeat(33)}`, {}],
            ["POST", publish, { token, raw: "{}", headers: { "content-type": "multipart/form-data" } }],
            ["POST", publish, { token, raw: "[".repeat(3000) + "]".repeat(3000) }],
            ["POST", "/proxy/imagevendor/v1/ai/skin-enhancer/creative", { token, body: { image: `data:image/png;base64,${"A".repeat(12 * 1024 * 1024)}!` } }],
            ["GET", "/publishers/acme/nodes", { token: emptySub }],
            ["GET", "/nodes?timestamp=2020-02-30", {}],
            ["GET", "/nodes?page=0x10", {}]
          ] as const
        ) {
          statuses.push((yield* sendText(service, method, path, options)).status)
        }
      }))
      expect(errors).toEqual([])
      expect(statuses).toEqual([400, 415, 400, 400, 401, 400, 400])
    }))

  it.effect("JSON nested 3,000 and 100,000 levels deep is 400 bad_request with a short message", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* Effect.promise(() => service.token({ sub: "nesting-user" }))
      for (const depth of [3_000, 100_000]) {
        for (const [open, close] of [["[", "]"], ['{"a":', "}"]] as const) {
          const raw = open.repeat(depth) + "1" + close.repeat(depth)
          for (const [method, path] of jsonEndpoints) {
            const request = `${method} ${path} nested ${depth} levels of ${open}`
            const answer = yield* sendText(service, method, path, { token, raw })
            expect(answer.status, describe(answer, request)).toBe(400)
            const body = parseJson(answer.text, request) as { message: string }
            expectErrorBody(body, "bad_request")
            expect(body.message.length, request).toBeLessThan(300)
          }
        }
      }
    }))

  it.effect("a 12 MB data: URL in an image field: served when valid, 400 naming the field when not, 413 over the body limit", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* Effect.promise(() => service.token({ sub: "image-user" }))
      const style = "/proxy/imagevendor/v1/ai/image-style-transfer"
      const url = "https://images.example/b.png"
      const huge = `data:image/png;base64,${"A".repeat(12 * 1024 * 1024)}`

      const valid = yield* sendText(service, "POST", style, { token, body: { image: huge, reference_image: url } })
      expect(valid.status, describe(valid, "a valid 12 MB data: URL")).toBe(200)

      const refused = [
        [style, { image: `${huge}!`, reference_image: url }, "image"],
        [style, { image: url, reference_image: `${huge}\n` }, "reference_image"],
        [style, { image: `data:image/png;base64,!${huge.slice(23)}`, reference_image: url }, "image"],
        ["/proxy/imagevendor/v1/ai/skin-enhancer/creative", { image: `${huge}A` }, "image"],
        ["/proxy/imagevendor/v1/ai/skin-enhancer/faithful", { image: `data:${"a".repeat(12 * 1024 * 1024)}` }, "image"],
        ["/proxy/imagevendor/v1/ai/skin-enhancer/flexible", { image: `${"A".repeat(12 * 1024 * 1024)}*` }, "image"]
      ] as const
      for (const [path, body, fieldName] of refused) {
        const request = `POST ${path} with a broken 12 MB image in ${fieldName}`
        const answer = yield* sendText(service, "POST", path, { token, body })
        expect(answer.status, describe(answer, request)).toBe(400)
        const error = parseJson(answer.text, request) as { message: string }
        expectErrorBody(error, "bad_request")
        expect(error.message, request).toContain(fieldName)
      }

      const overLimit = yield* sendText(service, "POST", style, { token, body: { image: `${huge}${"A".repeat(5 * 1024 * 1024)}`, reference_image: url } })
      expect(overLimit.status, describe(overLimit, "a 17 MB data: URL")).toBe(413)
      expectErrorBody(parseJson(overLimit.text, "a 17 MB data: URL"), "payload_too_large")
    }))
})
