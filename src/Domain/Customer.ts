/**
 * Customers of the media proxy (issue 27): the record the host's sign-in creates (the anchor's
 * `Customer`), what is left of each quota (the anchor's `GetCustomerBalance` shape, plus ours),
 * the usage events of proxied operations, and a site admin's quota overrides.
 */
import { Schema } from "effect"
import { field, NonEmptyText, optionalField, Timestamp, Uuid } from "./Schemas.ts"

/**
 * The operations usage and quotas are counted for, each with its unit: an image start is one task
 * (its polls are free: no usage, no quota), a video-to-music or text-to-music generation one task
 * (one stream), a media upload its bytes.
 */
export const usageUnits = {
  "image-style-transfer": "task",
  "skin-enhancer/creative": "task",
  "skin-enhancer/faithful": "task",
  "skin-enhancer/flexible": "task",
  "image-upscaler": "task",
  "image-upscaler-precision-v2": "task",
  "image-relight": "task",
  "video-to-music": "task",
  "text-to-music": "task",
  "media-upload": "byte"
} as const satisfies Record<string, "task" | "byte">

/** The upload operation: its day quota counts bytes (QUOTA_UPLOAD_BYTES_PER_DAY), not starts. */
export const uploadOperation = "media-upload"

/** The unit of an operation: a byte for uploads, a task for every other (operations added later included). */
export const unitOf = (operation: string): "task" | "byte" => operation === uploadOperation ? "byte" : "task"

export const UsageOutcome = Schema.Literals(["succeeded", "failed", "refused"])
export type UsageOutcome = typeof UsageOutcome.Type

/** The signed-in user's customer record (the anchor's `Customer`: `id` is the user's id). */
export class Customer extends Schema.Class<Customer>("Customer")({
  id: field(Schema.String, "The customer's id: the signed-in user's id (the token's subject)"),
  email: optionalField(Schema.String, "The user's email address, from the token"),
  name: optionalField(Schema.String, "The user's name, from the token"),
  is_admin: field(Schema.Boolean, "Whether the user is a site admin"),
  createdAt: field(Timestamp, "When the customer record was created"),
  updatedAt: field(Timestamp, "When the customer record last changed (quota overrides included)")
}) {}

const Limit = Schema.NullOr(Schema.Int)

/** What is left of a day's quota of one operation. */
export class DayQuota extends Schema.Class<DayQuota>("DayQuota")({
  operation: field(Schema.String, "The operation, as usage events name it"),
  unit: field(Schema.Literals(["task", "byte"]), "What the quota counts: tasks started, or bytes uploaded"),
  limit: field(Limit, "The day's quota; null: no limit"),
  used: field(Schema.Int, "Used today (UTC)"),
  remaining: field(Limit, "What is left today; null: no limit"),
  resets_at: field(Timestamp, "When the day's count starts again (next midnight UTC)")
}) {}

export class FlightQuota extends Schema.Class<FlightQuota>("FlightQuota")({
  limit: field(Limit, "Tasks that may be in flight at once; null: no limit"),
  used: field(Schema.Int, "Tasks in flight now: image tasks not yet COMPLETED or FAILED, starts waiting for the vendor, music streams"),
  remaining: field(Limit, "Tasks that may start now; null: no limit")
}) {}

/** `GET /customers/balance`: the anchor's fields, then what is left of each quota. */
export class CustomerBalance extends Schema.Class<CustomerBalance>("CustomerBalance")({
  amount_micros: field(Schema.Number, "The anchor's money balance: always 0, this service bills no money (its limits are the quotas)"),
  currency: field(Schema.String, "The anchor's currency code: always usd"),
  operations_per_day: field(Schema.Array(DayQuota), "Each operation's day quota (media-upload in bytes)"),
  tasks_in_flight: field(FlightQuota, "The tasks-in-flight quota")
}) {}

export class UsageEvent extends Schema.Class<UsageEvent>("UsageEvent")({
  id: field(Schema.String, "Identifier of the event (increasing)"),
  operation: field(Schema.String, "The operation: an image path under /v1/ai/, video-to-music, media-upload"),
  outcome: field(UsageOutcome, "How it ended: succeeded; failed (the vendor or the upload failed: not counted against the day quota, but for a stream that broke after it started); refused (over a quota)"),
  api_key_id: field(Schema.NullOr(Uuid), "The API key that authenticated the request; null for a bearer token or a signed upload"),
  bytes_in: field(Schema.Int, "Bytes the client sent"),
  bytes_out: field(Schema.Int, "Bytes the client was sent"),
  duration_ms: field(Schema.Int, "How long the operation took here, in milliseconds"),
  units: field(Schema.Int, "Quantity in the operation's unit"),
  unit: field(Schema.Literals(["task", "byte"]), "The unit of `units`: one task per start, bytes for media-upload"),
  at: field(Timestamp, "When the operation ended")
}) {}

export class UsagePage extends Schema.Class<UsagePage>("UsagePage")({
  events: field(Schema.Array(UsageEvent), "Events of this page, newest first"),
  page: field(Schema.Int, "Page number, from 1"),
  limit: field(Schema.Int, "Events per page, as served"),
  total: field(Schema.Int, "Number of matching events on all pages"),
  totalPages: field(Schema.Int, "Number of pages: total divided by limit, rounded up")
}) {}

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** A site admin's overrides of one customer's quotas; a field absent or null is the setting's default. */
export const QuotaOverrides = Schema.Struct({
  operations_per_day: optionalField(
    Schema.NullOr(Schema.Record(NonEmptyText(100), Count)),
    "Day quota per operation (`*` for those not named); media-upload is set by upload_bytes_per_day"
  ),
  tasks_in_flight: optionalField(Schema.NullOr(Count), "Tasks in flight at once"),
  upload_bytes_per_day: optionalField(Schema.NullOr(Count), "Bytes uploaded per day")
}).annotate({ identifier: "QuotaOverrides" })
export type QuotaOverrides = typeof QuotaOverrides.Type

export class CustomerQuotas extends Schema.Class<CustomerQuotas>("CustomerQuotas")({
  customer_id: field(Schema.String, "The customer's id"),
  operations_per_day: field(Schema.NullOr(Schema.Record(Schema.String, Schema.Int)), "Overrides of the day quota per operation; null: the defaults"),
  tasks_in_flight: field(Limit, "Override of the tasks in flight; null: the default"),
  upload_bytes_per_day: field(Limit, "Override of the upload bytes per day; null: the default")
}) {}
