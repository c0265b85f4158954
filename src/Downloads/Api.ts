/**
 * Download statistics (issue 30, item 5): a node's installs per UTC day over a range of dates, for
 * all its versions or one. Public, like the node itself.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import { NodeBanned, NotFound } from "../Domain/ApiErrors.ts"
import { field, optionalField, PathParam, Text } from "../Domain/Schemas.ts"
import { optionalParam } from "../Catalog/Api.ts"

/** The longest range one request may ask for, in days (both ends included). */
export const maxRangeDays = 366
/** The range answered when none is asked for: this many days, ending today (UTC). */
export const defaultRangeDays = 30

const isLeapYear = (year: number) => year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
const daysInMonth = (year: number, month: number) =>
  month === 2 ? (isLeapYear(year) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31

/** `s` is a calendar date written YYYY-MM-DD whose day exists in its month. */
const isCalendarDate = (s: string) => {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s)
  if (m === null) return false
  const [year, month, day] = m.slice(1).map(Number)
  return year! >= 1 && month! >= 1 && month! <= 12 && day! >= 1 && day! <= daysInMonth(year!, month!)
}

/** A UTC calendar day, `2026-11-28`: kept as its text, which sorts as the days do. */
export const Day = Schema.String.annotate({ format: "date" }).check(
  Schema.makeFilter(isCalendarDate, { message: "expected a date written YYYY-MM-DD, such as 2026-11-28" })
)

export const DownloadsParams = Schema.Struct({
  from: optionalParam(Day, `The first day (UTC, YYYY-MM-DD) of the range, included; default ${defaultRangeDays - 1} days before \`to\``),
  to: optionalParam(Day, "The last day (UTC, YYYY-MM-DD) of the range, included; not after today; default today"),
  version: optionalParam(Text(100), "Count only this version (its version string, such as 1.2.0); default all the node's versions")
})
export type DownloadsParams = typeof DownloadsParams.Type

export class DownloadDay extends Schema.Class<DownloadDay>("DownloadDay")({
  date: field(Day, "The day (UTC, YYYY-MM-DD)"),
  downloads: field(Schema.Int, "Installs counted that day")
}) {}

export class NodeDownloads extends Schema.Class<NodeDownloads>("NodeDownloads")({
  node_id: field(Schema.String, "Identifier of the node"),
  version: optionalField(Schema.String, "The version counted, when one was asked for"),
  from: field(Day, "The first day of the range (UTC, YYYY-MM-DD)"),
  to: field(Day, "The last day of the range (UTC, YYYY-MM-DD)"),
  total: field(Schema.Int, "Installs counted over the whole range"),
  days: field(Schema.Array(DownloadDay), "Every day of the range, oldest first, with its count (0 included)")
}) {}

export class DownloadsApi extends HttpApiGroup.make("downloads")
  .add(
    HttpApiEndpoint.get("getNodeDownloads", "/nodes/:nodeId/downloads", {
      params: Schema.Struct({ nodeId: field(PathParam, "Identifier of the node") }),
      query: DownloadsParams,
      success: NodeDownloads,
      error: [NotFound, NodeBanned]
    })
      .annotate(OpenApi.Summary, "A node's downloads per day over a range of dates, for all its versions or one")
      .annotate(
        OpenApi.Description,
        "Installs as GET /nodes/{nodeId}/install counts them (once per client address, node and version an hour), " +
          `per UTC day from \`from\` to \`to\` (both included; default the last ${defaultRangeDays} days), every day present. ` +
          `At most ${maxRangeDays} days; \`to\` not after today; \`from\` not after \`to\`: 400 naming the parameter otherwise. ` +
          "The figures are exact at any moment, today's included. A deleted node is 404, a banned one (or one of a banned " +
          "publisher) 403 node_banned, a version the node never had 404."
      )
  )
  .annotate(OpenApi.Title, "Download statistics")
{}
