/**
 * What every proxied operation passes through: its customer's quota taken before any vendor call
 * (refused with the IETF RateLimit fields), and its usage event recorded when it ends.
 *
 * Events are buffered and written in batches (one multi-row INSERT every `flushMillis`, or as
 * soon as `flushRows` wait), so a request pays a push onto an array, not a round-trip; what an
 * instance buffered is written when it stops, and a crash loses at most one interval of events
 * (never a quota: those are taken in PostgreSQL before the vendor is called).
 */
import { Clock, Context, Data, Effect, Layer, Option, Schedule } from "effect"
import { AppConfig, operationQuota } from "../Config.ts"
import { uploadOperation, type UsageOutcome } from "../Domain/Customer.ts"
import { type RateLimitPolicy, rateLimitFields } from "../Domain/RateLimit.ts"
import { traced } from "../Tracing.ts"
import { CustomerRepo, type OverridesRow, taskHorizonSeconds, type TakeRow, type UsageRow } from "./Repo.ts"

/** Over a quota: answered 429 with `Retry-After`, `RateLimit-Policy` and `RateLimit`. */
export class OverQuota extends Data.TaggedError("OverQuota")<{
  readonly quota: "day" | "flight"
  readonly operation: string
  readonly limit: number
  readonly retryAfterSeconds: number
  readonly answerHeaders: Readonly<Record<string, string>>
}> {
  override get message() {
    return this.quota === "flight"
      ? `You have ${this.limit} tasks in flight, your quota: wait for one to finish`
      : this.operation === uploadOperation
      ? `This upload would pass your quota of ${this.limit} uploaded bytes today (UTC)`
      : `You have used your quota of ${this.limit} '${this.operation}' operations today (UTC)`
  }
}

/** How long a client waits for a task in flight to finish before trying again. */
export const flightRetrySeconds = 10

/** The policy of a kind of quota, as the RateLimit fields state it (Domain/RateLimit.ts). */
const policyOf = (quota: "day" | "flight", operation: string, limit: number): RateLimitPolicy =>
  quota === "flight"
    ? { name: "tasks-in-flight", quota: limit, unit: "concurrent-requests" }
    : operation === uploadOperation
    ? { name: "upload-bytes-day", quota: limit, unit: "content-bytes", windowSeconds: 86400 }
    : { name: "operations-day", quota: limit, unit: "requests", windowSeconds: 86400 }

/** The RateLimit fields of a quota: its policy and what is left of it. */
export const quotaFields = (quota: "day" | "flight", operation: string, limit: number, remaining: number, resetSeconds: number) =>
  rateLimitFields(policyOf(quota, operation, limit), remaining, resetSeconds)

const refusal = (operation: string, taken: TakeRow): OverQuota => {
  const quota = taken.refused!
  const limit = quota === "day" ? taken.day_limit! : taken.flight_limit!
  const remaining = quota === "day" ? limit - taken.day_used : limit - taken.flight_used
  const retryAfterSeconds = quota === "day" ? taken.day_reset_seconds : flightRetrySeconds
  return new OverQuota({
    quota,
    operation,
    limit,
    retryAfterSeconds,
    answerHeaders: quotaFields(quota, operation, limit, remaining, retryAfterSeconds)
  })
}

/** Who an operation is for: the customer (the user's id) and the API key that authenticated it. */
export interface Caller {
  readonly customerId: string
  readonly apiKeyId?: string | undefined
}

/** An operation under way: its quota taken. `end` records its event, and on failure gives the quota back. */
export interface Meter {
  /** The start's task is recorded: the hold now counts until that task finishes. */
  readonly recorded: (taskId: string) => Effect.Effect<void>
  /**
   * A failure gives the day's quota back unless `kept` (the vendor did work: a stream that broke
   * after it started); either way the hold ends.
   */
  readonly end: (
    outcome: Exclude<UsageOutcome, "refused">,
    bytes?: { readonly in?: number; readonly out?: number },
    kept?: boolean
  ) => Effect.Effect<void>
}

/** The meter of an operation when metering is off (METERING_OFF, for the bench). */
const unmetered: Meter = { recorded: () => Effect.void, end: () => Effect.void }

/** Events written per statement at most, and how often the buffer is written. */
const flushRows = 1000
const flushMillis = 200

export class Metering extends Context.Service<Metering>()("Metering", {
  make: Effect.gen(function*() {
    const repo = yield* CustomerRepo
    const { quotas, vendorTimeoutMillis } = yield* AppConfig

    let buffer: Array<UsageRow> = []
    const flush = traced("Metering.flush")(function*() {
      while (buffer.length > 0) {
        const batch = buffer.length <= flushRows ? buffer : buffer.slice(0, flushRows)
        buffer = buffer.length <= flushRows ? [] : buffer.slice(flushRows)
        yield* repo.insertUsage(batch)
      }
    })
    // a failed round keeps nothing back for ever: its events are logged lost, the next round goes on
    const flushLogged = flush().pipe(Effect.catchCause((cause) => Effect.logWarning("usage events not recorded", cause)))
    yield* flushLogged.pipe(Effect.repeat(Schedule.spaced(flushMillis)), Effect.forkScoped)
    yield* Effect.addFinalizer(() => flushLogged)

    const record = (row: UsageRow) =>
      quotas.meteringOff === "usage"
        ? Effect.void
        : Effect.sync(() => {
          buffer.push(row)
        })

    const event = (caller: Caller, operation: string, outcome: UsageOutcome, started: number, now: number, units: number, bytes?: { readonly in?: number; readonly out?: number }): UsageRow => ({
      customerId: caller.customerId,
      apiKeyId: caller.apiKeyId ?? null,
      operation,
      outcome,
      bytesIn: bytes?.in ?? 0,
      bytesOut: bytes?.out ?? 0,
      durationMs: Math.max(0, Math.round(now - started)),
      units,
      at: new Date(now)
    })

    const dayLimitOf = (operation: string) =>
      Option.getOrNull(operation === uploadOperation ? quotas.uploadBytesPerDay : operationQuota(quotas.operationsPerDay, operation))

    /** An operation's day limit for a customer: their override (quota_take's rule), else the setting's; null is no limit. */
    const dayLimitIn = (row: OverridesRow, operation: string) =>
      (operation === uploadOperation
        ? row.upload_bytes_per_day
        : row.operations_per_day?.[operation] ?? row.operations_per_day?.["*"] ?? null) ?? dayLimitOf(operation)

    return {
      /**
       * Takes `amount` (1 for a start, the bytes of an upload) of the caller's day quota of
       * `operation` and, with `holds`, one task in flight until `recorded` or `end` (for a start or
       * a stream: how long it may count if this instance dies first); or fails with
       * OverQuota (recorded as a refused event).
       */
      begin: traced("Metering.begin")(
        function*(caller: Caller, operation: string, options: { readonly amount?: number; readonly holds: false | "start" | "stream"; readonly started?: number }) {
          if (quotas.meteringOff === "all") return unmetered
          const started = options.started ?? (yield* Clock.currentTimeMillis)
          const amount = options.amount ?? 1
          const taken = yield* repo.take({
            customerId: caller.customerId,
            operation,
            amount,
            dayLimit: dayLimitOf(operation),
            flightLimit: Option.getOrNull(quotas.tasksInFlight),
            // how long a hold counts if its instance dies before ending it: a start's outlives its
            // vendor call (then its task counts), a stream's is ended with the stream
            holdSeconds: options.holds === "start"
              ? Math.ceil(vendorTimeoutMillis / 1000) * 2 + 10
              : options.holds === "stream"
              ? taskHorizonSeconds
              : null
          })
          if (taken.refused !== null) {
            yield* record(event(caller, operation, "refused", started, yield* Clock.currentTimeMillis, 0))
            return yield* refusal(operation, taken)
          }
          let holdId = taken.hold_id
          const endHold = Effect.suspend(() => {
            const id = holdId
            holdId = null
            return id === null ? Effect.void : repo.endHold(id)
          })
          const meter: Meter = {
            recorded: (taskId) =>
              Effect.suspend(() => {
                const id = holdId
                holdId = null
                // in the background: the answer need not wait for it (until it commits the hold
                // counts as a start's, which is still in flight)
                return id === null ? Effect.void : Effect.asVoid(Effect.forkDetach(
                  repo.bindHold(id, taskId).pipe(Effect.catchCause((cause) => Effect.logWarning("quota hold not bound to its task", cause)))
                ))
              }),
            end: (outcome, bytes, kept = false) =>
              Effect.gen(function*() {
                const now = yield* Clock.currentTimeMillis
                const counted = outcome === "succeeded" || kept
                yield* record(event(caller, operation, outcome, started, now, counted ? amount : 0, bytes))
                if (!counted) {
                  const id = holdId
                  holdId = null
                  yield* repo.giveBack(caller.customerId, operation, amount, id)
                } else {
                  yield* endHold
                }
              })
          }
          return meter
        }
      ),

      /** What is left today of the caller's quota of `operation` (`None`: no limit), without taking any. */
      dayRoom: traced("Metering.dayRoom")(function*(customerId: string, operation: string) {
        const balance = yield* repo.balance(customerId)
        const limit = dayLimitIn(balance, operation)
        return limit === null ? Option.none<number>() : Option.some(Math.max(0, limit - Number(balance.used[operation] ?? 0)))
      }),

      /** Writes the buffered events now (the usage listing reads them after this). */
      flush,

      dayLimitIn,
      flightLimit: Option.getOrNull(quotas.tasksInFlight)
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(Metering, Metering.make)
  static readonly layer = Metering.layerWithoutDependencies.pipe(Layer.provide(CustomerRepo.layer))
}
