/**
 * Download statistics (issue 30, item 5): GET /nodes/{nodeId}/downloads over real HTTP on real
 * PostgreSQL. Installs come from chosen loopback addresses (support/FromAddress.ts), so the
 * dedupe (one download per client address, node and version an hour) is the real one.
 *
 * Past hours are made in SQL: the installs of a test happen in the current hour, and the test then
 * moves its node's rows of the current hour back by whole hours, as if they had been counted then.
 * The roll-up is the real job, queued through graphile-worker's own `add_job` and waited for.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { randomUUID } from "node:crypto"
import { defaultRangeDays, maxRangeDays } from "../../src/Downloads/Api.ts"
import { foldGraceMinutes } from "../../src/Downloads/Repo.ts"
import { rollupTask } from "../../src/Downloads/Rollup.ts"
import { query } from "../support/Db.ts"
import { eventually } from "../support/Eventually.ts"
import { fromAddress, publishFrom } from "../support/FromAddress.ts"
import { expectBadRequest, expectError, expectStatus, get } from "../support/Http.ts"
import { clearOfHourEnd } from "../support/Hours.ts"
import { forAll } from "../support/Property.ts"
import { type Running, Service } from "../support/Service.ts"
import { zipOf } from "../support/Zip.ts"
import { makePublisher, type Publisher, upload } from "../Publishing/Flow.ts"

interface Series {
  readonly node_id: string
  readonly version?: string
  readonly from: string
  readonly to: string
  readonly total: number
  readonly days: ReadonlyArray<{ readonly date: string; readonly downloads: number }>
}

const hourMillis = 3_600_000
const dayMillis = 24 * hourMillis
const dayOf = (millis: number) => new Date(millis).toISOString().slice(0, 10)
const today = () => dayOf(Date.now())
const daysAgo = (n: number) => dayOf(Date.now() - n * dayMillis)
/** The day of the hour that began `hoursAgo` hours before the current one. */
const dayOfHoursAgo = (hoursAgo: number) => dayOf((Math.floor(Date.now() / hourMillis) - hoursAgo) * hourMillis)

const versions = ["1.0.0", "1.1.0"] as const

let publisher: Publisher | undefined
/** A new node of the suite's publisher, with both `versions` installable. */
const freshNode = (service: Running) =>
  Effect.gen(function*() {
    publisher ??= yield* makePublisher(service, "stats")
    const node = `dl-${randomUUID().slice(0, 8)}`
    const zip = yield* Effect.promise(() => zipOf({ "pkg/__init__.py": "NODES = {}\n" }))
    for (const version of versions) {
      const answer = yield* publishFrom(service, "127.0.0.1", publisher.id, node, version, publisher.pat)
      expect(answer.status).toBe(201)
      expectStatus(yield* upload(service, (answer.body as { signedUrl: string }).signedUrl, zip), 200, "upload")
    }
    return node
  })

const installFrom = (service: Running, address: string, node: string, version?: string) =>
  Effect.map(
    fromAddress(service, address, "GET", `/nodes/${node}/install${version === undefined ? "" : `?version=${version}`}`),
    (answer) => expect(answer.status).toBe(200)
  )

const downloadsOf = (service: Running, node: string, params: Record<string, string> = {}) =>
  get(service, `/nodes/${node}/downloads${Object.keys(params).length === 0 ? "" : `?${new URLSearchParams(params)}`}`)

const seriesOf = (service: Running, node: string, params: Record<string, string> = {}) =>
  Effect.map(downloadsOf(service, node, params), (answer) => expectStatus(answer, 200, `downloads of ${node}`).body as Series)

/** The node's lifetime counter, as GET /nodes/{nodeId} answers it. */
const lifetimeOf = (service: Running, node: string) =>
  Effect.map(get(service, `/nodes/${node}`), (answer) => (expectStatus(answer, 200, node).body as { downloads?: number }).downloads ?? 0)

/** Moves the node's rows of the current hour `hours` back, as if they had been counted then. */
const backdate = (service: Running, node: string, hours: number) =>
  query(service, `UPDATE install_counts SET hour = hour - make_interval(hours => $2)
                  WHERE node_id = $1 AND hour = date_trunc('hour', now())`, [node, hours])

/** Runs the roll-up job now (graphile-worker's own add_job), and waits until it has run. */
const rollUp = (service: Running) =>
  Effect.gen(function*() {
    const key = `test-${randomUUID()}`
    // the payload graphile-worker's crontab gives the jobs it queues
    const payload = JSON.stringify({ _cron: { ts: new Date().toISOString(), backfilled: false } })
    yield* query(service, `SELECT graphile_worker.add_job($1, $2::json, job_key => $3)`, [rollupTask.identifier, payload, key])
    const { value } = yield* eventually(
      query(service, "SELECT 1 FROM graphile_worker.jobs WHERE key = $1", [key]),
      (rows) => rows.length === 0,
      20_000,
      25
    )
    expect(value).toEqual([])
  })

/** Raw rows the roll-up should have folded (hours that ended its grace ago or earlier). */
const foldableRows = (service: Running) =>
  query(service, `SELECT 1 FROM install_counts WHERE hour < date_trunc('hour', now() - make_interval(mins => $1))`, [foldGraceMinutes])

/** The node's counts per day and version as the service answers them, over `from`..today. */
const figures = (service: Running, node: string, from: string) =>
  Effect.gen(function*() {
    const all = yield* seriesOf(service, node, { from })
    const perVersion = yield* Effect.forEach(versions, (version) => seriesOf(service, node, { from, version }))
    return { all, perVersion, lifetime: yield* lifetimeOf(service, node) }
  })

layer(Service.layer(), { excludeTestServices: true })("download statistics", (it) => {
  it.effect("installs are counted per day and per version, once per address and hour; a roll-up changes no figure", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* clearOfHourEnd(90)
      const node = yield* freshNode(service)

      // three from one address (the newest version, counted once), one from another, one pinned
      for (let i = 0; i < 3; i++) yield* installFrom(service, "127.0.0.2", node)
      yield* installFrom(service, "127.0.0.3", node)
      yield* installFrom(service, "127.0.0.2", node, "1.0.0")
      const now = yield* seriesOf(service, node)
      expect(now.days).toHaveLength(defaultRangeDays)
      expect(now.from).toBe(daysAgo(defaultRangeDays - 1))
      expect(now.to).toBe(today())
      expect(now.days.at(-1)).toEqual({ date: today(), downloads: 3 })
      expect(now.total).toBe(3)
      expect((yield* seriesOf(service, node, { version: "1.1.0" })).total).toBe(2)
      expect((yield* seriesOf(service, node, { version: "1.0.0" })).total).toBe(1)
      expect(yield* lifetimeOf(service, node)).toBe(3)

      // those installs were two days ago; the same address counts again in this hour
      yield* backdate(service, node, 48)
      yield* installFrom(service, "127.0.0.2", node)
      const from = daysAgo(3)
      const before = yield* figures(service, node, from)
      const twoDaysAgo = dayOfHoursAgo(48)
      expect(before.all.days).toEqual(
        Array.from({ length: 4 }, (_, i) => daysAgo(3 - i)).map((date) => ({
          date,
          downloads: (date === twoDaysAgo ? 3 : 0) + (date === today() ? 1 : 0)
        }))
      )
      expect(before.perVersion.map((s) => s.total)).toEqual([1, 3])
      expect(before.lifetime).toBe(4)

      // the roll-up folds the past hours' rows and deletes them; this hour's stay; twice is once
      yield* rollUp(service)
      expect(yield* foldableRows(service)).toEqual([])
      expect(yield* query(service, "SELECT version, day::text, downloads::int FROM download_days WHERE node_id = $1 ORDER BY version", [node]))
        .toEqual([{ version: "1.0.0", day: twoDaysAgo, downloads: 1 }, { version: "1.1.0", day: twoDaysAgo, downloads: 2 }])
      expect(yield* query(service, "SELECT 1 FROM install_counts WHERE node_id = $1", [node])).toHaveLength(1)
      expect(yield* figures(service, node, from)).toEqual(before)
      yield* rollUp(service)
      expect(yield* figures(service, node, from)).toEqual(before)

      // this hour's row still dedupes
      yield* installFrom(service, "127.0.0.2", node)
      expect(yield* figures(service, node, from)).toEqual(before)
    }), 60_000)

  it.effect(
    "random installs over past hours and versions, rolled up at random points, match a model of the counts",
    () =>
      forAll(
        {
          // the hours of the batches, oldest first (hours before the current one); the current hour last
          hours: fc.uniqueArray(fc.integer({ min: 1, max: 5 * 24 }), { minLength: 1, maxLength: 5 }).map((hs) =>
            [...hs.sort((a, b) => b - a), 0]
          ),
          batches: fc.array(
            fc.record({
              installs: fc.array(fc.record({ address: fc.integer({ min: 2, max: 6 }), version: fc.constantFrom(undefined, ...versions) }), {
                maxLength: 8
              }),
              rollUpAfter: fc.boolean()
            }),
            { minLength: 6, maxLength: 6 }
          )
        },
        ({ batches, hours }) =>
          Effect.gen(function*() {
            const service = yield* Service
            yield* clearOfHourEnd(120)
            const node = yield* freshNode(service)
            const from = daysAgo(6)
            const model = new Map<string, Map<string, number>>(versions.map((v) => [v, new Map()]))
            const expected = () => {
              const days = Array.from({ length: 7 }, (_, i) => daysAgo(6 - i))
              const perVersion = versions.map((v) => days.map((date) => ({ date, downloads: model.get(v)!.get(date) ?? 0 })))
              return {
                all: days.map((date, i) => ({ date, downloads: perVersion.reduce((sum, series) => sum + series[i]!.downloads, 0) })),
                perVersion
              }
            }
            const check = Effect.gen(function*() {
              const { all, lifetime, perVersion } = yield* figures(service, node, from)
              const want = expected()
              expect(all.days).toEqual(want.all)
              expect(perVersion.map((s) => s.days)).toEqual(want.perVersion)
              expect(lifetime).toBe(want.all.reduce((sum, d) => sum + d.downloads, 0))
            })
            for (const [i, hoursAgo] of hours.entries()) {
              const { installs, rollUpAfter } = batches[i]!
              // concurrent, as clients send them: the dedupe holds under concurrency
              yield* Effect.forEach(installs, ({ address, version }) => installFrom(service, `127.0.0.${address}`, node, version), {
                concurrency: "unbounded"
              })
              const day = dayOfHoursAgo(hoursAgo)
              // an unpinned install gets the newest version
              const distinct = new Set(installs.map(({ address, version }) => `${address} ${version ?? "1.1.0"}`))
              for (const pair of distinct) {
                const version = pair.split(" ")[1]!
                model.get(version)!.set(day, (model.get(version)!.get(day) ?? 0) + 1)
              }
              if (hoursAgo > 0) yield* backdate(service, node, hoursAgo)
              yield* check
              if (rollUpAfter) {
                yield* rollUp(service)
                expect(yield* foldableRows(service)).toEqual([])
                yield* check
              }
            }
            yield* rollUp(service)
            yield* check
          }),
        { numRuns: 12 }
      ),
    300_000
  )

  it.effect("the roll-up is a recurring job of the runner, at minute 7 of every hour", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expect(rollupTask.schedule).toBe("7 * * * *")
      // graphile-worker records each recurring task it schedules when its runner starts
      const { value } = yield* eventually(
        query(service, "SELECT identifier FROM graphile_worker._private_known_crontabs WHERE identifier = $1", [rollupTask.identifier]),
        (rows) => rows.length === 1,
        10_000,
        50
      )
      expect(value).toEqual([{ identifier: rollupTask.identifier }])
    }))

  it.effect("bad ranges are 400 naming the parameter; the longest range is answered whole", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const node = yield* freshNode(service)
      const cases: ReadonlyArray<readonly [Record<string, string>, string]> = [
        [{ from: "2026-13-01" }, "from"],
        [{ from: "2025-02-29" }, "from"],
        [{ to: "yesterday" }, "to"],
        [{ to: "2026-1-01" }, "to"],
        [{ from: "2026-11-28T00:00:00Z" }, "from"],
        [{ from: daysAgo(1), to: daysAgo(2) }, "from"],
        [{ to: daysAgo(-1) }, "to"],
        [{ from: daysAgo(-2), to: daysAgo(-1) }, "to"],
        [{ from: daysAgo(maxRangeDays) }, "from"],
        [{ version: "x".repeat(101) }, "version"]
      ]
      for (const [params, parameter] of cases) expectBadRequest(yield* downloadsOf(service, node, params), `'${parameter}'`)
      const longest = yield* seriesOf(service, node, { from: daysAgo(maxRangeDays - 1) })
      expect(longest.days).toHaveLength(maxRangeDays)
      expect(longest.total).toBe(0)
      const one = yield* seriesOf(service, node, { from: daysAgo(5), to: daysAgo(5) })
      expect(one.days).toEqual([{ date: daysAgo(5), downloads: 0 }])
    }))

  it.effect(
    "any from and to: 400 naming the one at fault, or every day of the range",
    () =>
      Effect.flatMap(Effect.flatMap(Service, freshNode), (node) => forAll(
        {
          from: fc.option(fc.oneof(
            fc.integer({ min: -3, max: 400 }).map(daysAgo),
            fc.string({ maxLength: 12 }),
            fc.constantFrom("2024-02-29", "2023-02-29", "2026-04-31", "0000-01-01", "2026-00-10", " 2026-01-01")
          ), { nil: undefined }),
          to: fc.option(fc.oneof(fc.integer({ min: -3, max: 400 }).map(daysAgo), fc.string({ maxLength: 12 })), { nil: undefined })
        },
        ({ from, to }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const params = { ...(from === undefined ? {} : { from }), ...(to === undefined ? {} : { to }) }
            const answer = yield* downloadsOf(service, node, params)
            // the model: a date is YYYY-MM-DD naming a real day
            const isDay = (s: string) => {
              const millis = Date.parse(`${s}T00:00:00Z`)
              return /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(millis) && dayOf(millis) === s && !s.startsWith("0000")
            }
            const malformed = [from === undefined || isDay(from) ? [] : ["from"], to === undefined || isDay(to) ? [] : ["to"]].flat()
            if (malformed.length > 0) {
              const e = expectError(answer, 400, "bad_request")
              expect(malformed.some((name) => e.message.includes(`'${name}'`))).toBe(true)
              return
            }
            const end = to ?? today()
            const start = from ?? dayOf(Date.parse(`${end}T00:00:00Z`) - (defaultRangeDays - 1) * dayMillis)
            const span = (Date.parse(`${end}T00:00:00Z`) - Date.parse(`${start}T00:00:00Z`)) / dayMillis + 1
            if (end > today()) return expectBadRequest(answer, "'to'")
            if (start > end || span > maxRangeDays) return expectBadRequest(answer, "'from'")
            const series = expectStatus(answer, 200, JSON.stringify(params)).body as Series
            expect(series.days.map((d) => d.date)).toEqual(Array.from({ length: span }, (_, i) => dayOf(Date.parse(`${start}T00:00:00Z`) + i * dayMillis)))
          }),
        { numRuns: 150 }
      )),
    120_000
  )

  it.effect("a node that does not exist is 404, a banned one 403 node_banned, a deleted one 404, a version it never had 404", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectError(yield* downloadsOf(service, "no-such-node"), 404, "not_found")
      const node = yield* freshNode(service)
      expectError(yield* downloadsOf(service, node, { version: "9.9.9" }), 404, "not_found")
      yield* query(service, "UPDATE nodes SET status = 'NodeStatusBanned' WHERE id = $1", [node])
      expectError(yield* downloadsOf(service, node), 403, "node_banned")
      expectError(yield* get(service, `/nodes/${node}`), 403, "node_banned")
      yield* query(service, "UPDATE nodes SET status = 'NodeStatusDeleted' WHERE id = $1", [node])
      expectError(yield* downloadsOf(service, node), 404, "not_found")
      expectError(yield* get(service, `/nodes/${node}`), 404, "not_found")
    }))
})
