/**
 * Download statistics: a node's daily series, as public as the node (a deleted node is missing,
 * a banned one refused, as GET /nodes/{nodeId} answers). The range is checked before anything is
 * read: dates in UTC, `to` not after today, `from` not after `to`, at most `maxRangeDays`.
 */
import { Clock, Context, Data, Effect, Layer, Option } from "effect"
import { NodeMissing, VersionMissing } from "../Domain/Errors.ts"
import { NodeRepo, requireVisible } from "../Catalog/Repo.ts"
import { traced } from "../Tracing.ts"
import { defaultRangeDays, maxRangeDays, NodeDownloads } from "./Api.ts"
import { DownloadRepo } from "./Repo.ts"

/** The range asked for cannot be answered; `parameter` names the query parameter at fault. */
export class RangeRefused extends Data.TaggedError("RangeRefused")<{ readonly parameter: string; readonly reason: string }> {
  override get message() {
    return `Invalid value for '${this.parameter}': ${this.reason}`
  }
}

const dayMillis = 24 * 60 * 60 * 1000

/** The UTC day of a time in milliseconds, YYYY-MM-DD. */
export const dayOf = (millis: number) => new Date(millis).toISOString().slice(0, 10)

/** `day` moved by `days` (negative: earlier). */
const addDays = (day: string, days: number) => dayOf(Date.parse(`${day}T00:00:00Z`) + days * dayMillis)

/** How many days from `from` to `to`, both included. */
const spanOf = (from: string, to: string) => Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / dayMillis) + 1

export interface DownloadsQuery {
  readonly from?: string | undefined
  readonly to?: string | undefined
  readonly version?: string | undefined
}

/** The range a query asks for, with its defaults, or why it cannot be answered. */
export const rangeOf = (query: DownloadsQuery, today: string): Effect.Effect<{ readonly from: string; readonly to: string }, RangeRefused> => {
  const to = query.to ?? today
  if (to > today) return Effect.fail(new RangeRefused({ parameter: "to", reason: `${to} is in the future (today is ${today}, UTC)` }))
  const from = query.from ?? addDays(to, -(defaultRangeDays - 1))
  if (from > to) return Effect.fail(new RangeRefused({ parameter: "from", reason: `${from} is after 'to' (${to})` }))
  const span = spanOf(from, to)
  if (span > maxRangeDays) {
    return Effect.fail(new RangeRefused({ parameter: "from", reason: `the range ${from} to ${to} spans ${span} days; at most ${maxRangeDays}` }))
  }
  return Effect.succeed({ from, to })
}

export class Downloads extends Context.Service<Downloads>()("Downloads", {
  make: Effect.gen(function*() {
    const nodes = yield* NodeRepo
    const repo = yield* DownloadRepo
    return {
      /** The node's installs per day over the range the query asks for, of all its versions or of one. */
      series: traced("Downloads.series")(function*(nodeId: string, query: DownloadsQuery) {
        const { from, to } = yield* rangeOf(query, dayOf(yield* Clock.currentTimeMillis))
        const state = yield* nodes.nodeState(nodeId)
        if (Option.isNone(state)) return yield* new NodeMissing({ nodeId })
        yield* requireVisible(nodeId, state.value)
        const { version } = query
        if (version !== undefined && !(yield* repo.hadVersion(nodeId, version))) return yield* new VersionMissing({ nodeId, version })
        const days = yield* repo.series(nodeId, from, to, version)
        return new NodeDownloads({
          node_id: nodeId,
          ...(version === undefined ? {} : { version }),
          from,
          to,
          total: days.reduce((sum, day) => sum + day.downloads, 0),
          days
        })
      })
    }
  })
}) {
  static readonly layer = Layer.effect(Downloads, Downloads.make).pipe(Layer.provide([NodeRepo.layer, DownloadRepo.layer]))
}
