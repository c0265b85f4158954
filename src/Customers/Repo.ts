/**
 * Customers, their usage events and quota counters in PostgreSQL (migrations/0015_customers.sql).
 * Quotas are taken by one statement (the `quota_take` function), serialised per customer.
 */
import { SqlClient } from "effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import type { QuotaOverrides, UsageOutcome } from "../Domain/Customer.ts"
import { traced } from "../Tracing.ts"

/** A customer row, as the record and the quota overrides need it. */
export interface CustomerRow {
  readonly created_at: Date
  readonly updated_at: Date
}

export interface OverridesRow {
  readonly operations_per_day: Readonly<Record<string, number>> | null
  readonly tasks_in_flight: number | null
  readonly upload_bytes_per_day: number | null
}

/** What `quota_take` answered: the limits that applied, what is used of them, and which refused. */
export interface TakeRow {
  readonly refused: "day" | "flight" | null
  readonly day_limit: number | null
  readonly day_used: number
  readonly flight_limit: number | null
  readonly flight_used: number
  readonly hold_id: string | null
  readonly day_reset_seconds: number
}

/** What the balance is computed from. */
export interface BalanceRow extends OverridesRow {
  readonly used: Readonly<Record<string, number>>
  readonly flight: number
  readonly resets_at: Date
}

/** One usage event, as recorded. */
export interface UsageRow {
  readonly customerId: string
  readonly apiKeyId: string | null
  readonly operation: string
  readonly outcome: UsageOutcome
  readonly bytesIn: number
  readonly bytesOut: number
  readonly durationMs: number
  readonly units: number
  readonly at: Date
}

export interface UsageQuery {
  readonly customerId: string
  readonly from: Date | undefined
  readonly to: Date | undefined
  readonly operation: string | undefined
  readonly page: number
  readonly limit: number
}

export interface UsageListRow {
  readonly id: string
  readonly api_key_id: string | null
  readonly operation: string
  readonly outcome: UsageOutcome
  readonly bytes_in: number
  readonly bytes_out: number
  readonly duration_ms: number
  readonly units: number
  readonly at: Date
  readonly total: number
}

/** The longest an image task counts in flight when nothing sees it finish (nobody polls, no callback). */
export const taskHorizonSeconds = 3600

export class CustomerRepo extends Context.Service<CustomerRepo>()("CustomerRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const today = sql`(now() AT TIME ZONE 'UTC')::date`

    return {
      /**
       * The user's customer row, created if missing; `created` says which. Two statements, not
       * one: when another call inserts the row at the same moment, the INSERT waits for it and
       * does nothing, and only a later statement's snapshot sees the row it committed.
       */
      upsert: traced("CustomerRepo.upsert")(function*(userId: string) {
        const made = yield* sql<CustomerRow>`
          INSERT INTO customers (user_id) VALUES (${userId}) ON CONFLICT (user_id) DO NOTHING
          RETURNING created_at, updated_at`.pipe(Effect.orDie)
        if (made[0] !== undefined) return { ...made[0], created: true }
        const found = yield* sql<CustomerRow>`SELECT created_at, updated_at FROM customers WHERE user_id = ${userId}`.pipe(Effect.orDie)
        return { ...found[0]!, created: false }
      }),

      find: traced("CustomerRepo.find")(function*(userId: string) {
        const rows = yield* sql<CustomerRow>`SELECT created_at, updated_at FROM customers WHERE user_id = ${userId}`.pipe(Effect.orDie)
        return Option.fromNullishOr(rows[0])
      }),

      take: traced("CustomerRepo.take")(function*(request: {
        readonly customerId: string
        readonly operation: string
        readonly amount: number
        readonly dayLimit: number | null
        readonly flightLimit: number | null
        readonly holdSeconds: number | null
      }) {
        const rows = yield* sql<TakeRow>`SELECT refused, day_limit::float8 AS day_limit, day_used::float8 AS day_used,
            flight_limit, flight_used, hold_id::text AS hold_id, day_reset_seconds
          FROM quota_take(${request.customerId}, ${request.operation}, ${request.amount}::bigint, ${request.dayLimit}::bigint,
            ${request.flightLimit}::integer, ${request.holdSeconds}::integer)`.pipe(Effect.orDie)
        return rows[0]!
      }),

      /** The hold ended (its task is recorded, or its stream ended): it no longer counts. */
      endHold: traced("CustomerRepo.endHold")(function*(holdId: string) {
        yield* sql`DELETE FROM quota_holds WHERE id = ${holdId}::uuid`.pipe(Effect.orDie)
      }),

      /**
       * Binds a start's hold to its recorded task, to count until the task finishes (the
       * trigger of media_tasks deletes it) or `taskHorizonSeconds` pass; a task already finished
       * ends it at once.
       */
      bindHold: traced("CustomerRepo.bindHold")(function*(holdId: string, taskId: string) {
        yield* sql`SELECT quota_bind(${holdId}::uuid, ${taskId}::uuid, ${taskHorizonSeconds}::integer)`.pipe(Effect.orDie)
      }),

      /** Gives back what a failed operation took of today's quota, and ends its hold. */
      giveBack: traced("CustomerRepo.giveBack")(
        function*(customerId: string, operation: string, amount: number, holdId: string | null) {
          yield* sql`WITH ended AS (DELETE FROM quota_holds WHERE id = ${holdId}::uuid)
            UPDATE quota_days SET used = greatest(used - ${amount}::bigint, 0)
            WHERE customer_id = ${customerId} AND day = ${today} AND operation = ${operation}`.pipe(Effect.orDie)
        }
      ),

      balance: traced("CustomerRepo.balance")(function*(customerId: string) {
        const rows = yield* sql<BalanceRow>`
          SELECT c.operations_per_day, c.tasks_in_flight, c.upload_bytes_per_day::float8 AS upload_bytes_per_day,
            (SELECT coalesce(jsonb_object_agg(q.operation, q.used), '{}'::jsonb) FROM quota_days q
              WHERE q.customer_id = ${customerId} AND q.day = ${today}) AS used,
            (SELECT count(*) FROM quota_holds h WHERE h.customer_id = ${customerId} AND h.expires_at > now())::int AS flight,
            ((${today} + 1)::timestamp AT TIME ZONE 'UTC') AS resets_at
          FROM (SELECT 1) one LEFT JOIN customers c ON c.user_id = ${customerId}`.pipe(Effect.orDie)
        return rows[0]!
      }),

      /** Writes events in one statement, whatever their number (as one JSON parameter: its NULL key ids need no array type). */
      insertUsage: traced("CustomerRepo.insertUsage")(function*(rows: ReadonlyArray<UsageRow>) {
        if (rows.length === 0) return
        const json = JSON.stringify(rows.map((r) => ({
          c: r.customerId,
          k: r.apiKeyId,
          o: r.operation,
          r: r.outcome,
          i: r.bytesIn,
          b: r.bytesOut,
          d: r.durationMs,
          u: r.units,
          a: r.at.toISOString()
        })))
        yield* sql`INSERT INTO usage_events (customer_id, api_key_id, operation, outcome, bytes_in, bytes_out, duration_ms, units, at)
          SELECT c, k, o, r, i, b, d, u, a
          FROM jsonb_to_recordset(${json}::jsonb) AS e(c text, k uuid, o text, r text, i bigint, b bigint, d integer, u bigint, a timestamptz)`.pipe(Effect.orDie)
      }),

      /** A page of the customer's events, newest first, with the number of all that match. */
      usage: traced("CustomerRepo.usage")(function*(query: UsageQuery) {
        return yield* sql<UsageListRow>`SELECT id::text, api_key_id::text, operation, outcome, bytes_in::float8 AS bytes_in,
            bytes_out::float8 AS bytes_out, duration_ms, units::float8 AS units, at, (count(*) OVER ())::int AS total
          FROM usage_events
          WHERE customer_id = ${query.customerId}
            AND (${query.from ?? null}::timestamptz IS NULL OR at >= ${query.from ?? null}::timestamptz)
            AND (${query.to ?? null}::timestamptz IS NULL OR at < ${query.to ?? null}::timestamptz)
            AND (${query.operation ?? null}::text IS NULL OR operation = ${query.operation ?? null}::text)
          ORDER BY at DESC, id DESC
          LIMIT ${query.limit} OFFSET ${(query.page - 1) * query.limit}`.pipe(Effect.orDie)
      }),

      /** Events matching, when the page asked is past the last (the window function then sees no row). */
      usageCount: traced("CustomerRepo.usageCount")(function*(query: UsageQuery) {
        const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM usage_events
          WHERE customer_id = ${query.customerId}
            AND (${query.from ?? null}::timestamptz IS NULL OR at >= ${query.from ?? null}::timestamptz)
            AND (${query.to ?? null}::timestamptz IS NULL OR at < ${query.to ?? null}::timestamptz)
            AND (${query.operation ?? null}::text IS NULL OR operation = ${query.operation ?? null}::text)`.pipe(Effect.orDie)
        return rows[0]!.n
      }),

      overrides: traced("CustomerRepo.overrides")(function*(customerId: string) {
        const rows = yield* sql<OverridesRow>`SELECT operations_per_day, tasks_in_flight, upload_bytes_per_day::float8 AS upload_bytes_per_day
          FROM customers WHERE user_id = ${customerId}`.pipe(Effect.orDie)
        return Option.fromNullishOr(rows[0])
      }),

      /** Replaces a known user's overrides (the customer row made if missing); `None` for an unknown user. */
      setOverrides: traced("CustomerRepo.setOverrides")(function*(customerId: string, overrides: QuotaOverrides) {
        const ops = overrides.operations_per_day == null ? null : JSON.stringify(overrides.operations_per_day)
        const flight = overrides.tasks_in_flight ?? null
        const upload = overrides.upload_bytes_per_day ?? null
        const rows = yield* sql<OverridesRow>`INSERT INTO customers AS c (user_id, operations_per_day, tasks_in_flight, upload_bytes_per_day)
          SELECT u.id, ${ops}::jsonb, ${flight}::integer, ${upload}::bigint FROM users u WHERE u.id = ${customerId}
          ON CONFLICT (user_id) DO UPDATE SET operations_per_day = EXCLUDED.operations_per_day,
            tasks_in_flight = EXCLUDED.tasks_in_flight, upload_bytes_per_day = EXCLUDED.upload_bytes_per_day, updated_at = now()
          RETURNING operations_per_day, tasks_in_flight, upload_bytes_per_day::float8 AS upload_bytes_per_day`.pipe(Effect.orDie)
        return Option.fromNullishOr(rows[0])
      })
    }
  })
}) {
  static readonly layer = Layer.effect(CustomerRepo, CustomerRepo.make)
}
