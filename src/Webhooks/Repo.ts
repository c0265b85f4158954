/**
 * Webhook secrets, deliveries and their attempts. A delivery's attempt is recorded only if it is
 * the one due (`attempts = attempt - 1`): a job run twice (its instance died after recording)
 * records it once and schedules no second retry.
 */
import { SqlClient } from "effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import { randomBytes } from "node:crypto"
import type { WebhookDelivery, WebhookEventType } from "../Domain/Webhooks.ts"
import { traced } from "../Tracing.ts"

/** A user's signing secrets: the current one, and the previous one while it still signs. */
export interface Secrets {
  readonly secret: Uint8Array
  readonly createdAt: Date
  readonly previous: Option.Option<{ readonly secret: Uint8Array; readonly until: Date }>
}

/** What an attempt needs of its delivery. */
export interface DueDelivery {
  readonly id: string
  readonly ownerId: string
  readonly targetUrl: string
  readonly payload: string
  readonly status: "pending" | "succeeded" | "failed"
  readonly attempts: number
  readonly createdAt: Date
}

export interface AttemptRecord {
  readonly deliveryId: string
  readonly attempt: number
  readonly attemptedAt: Date
  readonly statusCode: number | null
  readonly error: string | null
  readonly durationMillis: number
  /** What the delivery is after it: done, given up, or pending with its next attempt. */
  readonly outcome: { readonly status: "succeeded" | "failed" } | { readonly status: "pending"; readonly nextAt: Date }
}

interface SecretRow {
  readonly secret: Uint8Array
  readonly created_at: Date | string
  readonly previous_secret: Uint8Array | null
  readonly previous_until: Date | string | null
}

const secretsOf = (row: SecretRow): Secrets => ({
  secret: new Uint8Array(row.secret),
  createdAt: new Date(row.created_at),
  previous: row.previous_secret !== null && row.previous_until !== null && new Date(row.previous_until).getTime() > Date.now()
    ? Option.some({ secret: new Uint8Array(row.previous_secret), until: new Date(row.previous_until) })
    : Option.none()
})

/** A json column: parsed by the driver, or its text. */
const jsonOf = <A>(value: A | string): A => (typeof value === "string" ? JSON.parse(value) as A : value)

const iso = (value: Date | string) => new Date(value).toISOString()

export class WebhookRepo extends Context.Service<WebhookRepo>()("WebhookRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    return {
      /** The user's secrets, the first made now if there are none. */
      secrets: traced("WebhookRepo.secrets")(function*(ownerId: string) {
        const read = sql<SecretRow>`
          SELECT secret, created_at, previous_secret, previous_until FROM webhook_secrets WHERE owner_id = ${ownerId}`.pipe(Effect.orDie)
        // read first: every delivery attempt asks, and only the first of a user's makes one
        const found = yield* read
        if (found.length > 0) return secretsOf(found[0]!)
        const made = yield* sql<SecretRow>`
          INSERT INTO webhook_secrets (owner_id, secret) VALUES (${ownerId}, ${randomBytes(32)})
          ON CONFLICT (owner_id) DO NOTHING
          RETURNING secret, created_at, previous_secret, previous_until`.pipe(Effect.orDie)
        if (made.length > 0) return secretsOf(made[0]!)
        // another delivery made it after this one read: its row is committed (the conflict saw
        // it), and a new statement's snapshot sees it too
        return secretsOf((yield* read)[0]!)
      }),

      /** A new secret; the current one keeps signing for `graceMillis` beside it. */
      rotate: traced("WebhookRepo.rotate")(function*(ownerId: string, graceMillis: number) {
        const rows = yield* sql<SecretRow>`
          INSERT INTO webhook_secrets (owner_id, secret) VALUES (${ownerId}, ${randomBytes(32)})
          ON CONFLICT (owner_id) DO UPDATE SET
            previous_secret = webhook_secrets.secret,
            previous_until = now() + ${graceMillis} * interval '1 millisecond',
            secret = excluded.secret,
            created_at = now(),
            rotated_at = now()
          RETURNING secret, created_at, previous_secret, previous_until`.pipe(Effect.orDie)
        return secretsOf(rows[0]!)
      }),

      /** Makes the delivery of an event, once per task and event: `false` when it was made already. */
      create: traced("WebhookRepo.create")(function*(delivery: {
        readonly id: string
        readonly ownerId: string
        readonly taskId: string
        readonly eventType: WebhookEventType
        readonly targetUrl: string
        readonly payload: string
      }) {
        const rows = yield* sql<{ id: string }>`
          INSERT INTO webhook_deliveries (id, owner_id, task_id, event_type, target_url, payload, next_attempt_at)
          VALUES (${delivery.id}::uuid, ${delivery.ownerId}, ${delivery.taskId}::uuid, ${delivery.eventType},
                  ${delivery.targetUrl}, ${delivery.payload}, now())
          ON CONFLICT (task_id, event_type) DO NOTHING
          RETURNING id::text`.pipe(Effect.orDie)
        return rows.length > 0
      }),

      /** The delivery an attempt is for. */
      due: traced("WebhookRepo.due")(function*(id: string) {
        const rows = yield* sql<{
          id: string
          owner_id: string
          target_url: string
          payload: string
          status: DueDelivery["status"]
          attempts: number
          created_at: Date | string
        }>`SELECT id::text, owner_id, target_url, payload, status, attempts, created_at
           FROM webhook_deliveries WHERE id = ${id}::uuid`.pipe(Effect.orDie)
        return Option.map(Option.fromNullishOr(rows[0]), (row): DueDelivery => ({
          id: row.id,
          ownerId: row.owner_id,
          targetUrl: row.target_url,
          payload: row.payload,
          status: row.status,
          attempts: row.attempts,
          createdAt: new Date(row.created_at)
        }))
      }),

      /** Records an attempt and the delivery's state after it; `false` if another run recorded this attempt first. */
      record: traced("WebhookRepo.record")(function*(a: AttemptRecord) {
        const nextAt = a.outcome.status === "pending" ? a.outcome.nextAt : null
        const rows = yield* sql<{ id: string }>`
          WITH moved AS (
            UPDATE webhook_deliveries
            SET attempts = ${a.attempt}, status = ${a.outcome.status}, next_attempt_at = ${nextAt}::timestamptz,
                finished_at = CASE WHEN ${a.outcome.status} = 'pending' THEN NULL ELSE now() END
            WHERE id = ${a.deliveryId}::uuid AND attempts = ${a.attempt - 1} AND status = 'pending'
            RETURNING id
          ), attempt AS (
            INSERT INTO webhook_attempts (delivery_id, attempt, attempted_at, status_code, error, duration_ms)
            SELECT id, ${a.attempt}, ${a.attemptedAt}::timestamptz, ${a.statusCode}::integer, ${a.error}, ${a.durationMillis} FROM moved
          )
          SELECT id::text FROM moved`.pipe(Effect.orDie)
        return rows.length > 0
      }),

      /** A page of the user's deliveries, newest first, with their attempts. */
      page: traced("WebhookRepo.page")(function*(ownerId: string, page: number, pageSize: number) {
        const rows = yield* sql<{ total: number; delivery: WebhookDeliveryRow | null }>`
          WITH mine AS (
            SELECT * FROM webhook_deliveries WHERE owner_id = ${ownerId}
          ), shown AS (
            SELECT * FROM mine ORDER BY created_at DESC, id DESC LIMIT ${pageSize} OFFSET ${(page - 1) * pageSize}
          )
          SELECT (SELECT count(*) FROM mine)::int8 AS total, NULL::json AS delivery WHERE NOT EXISTS (SELECT 1 FROM shown)
          UNION ALL
          SELECT (SELECT count(*) FROM mine)::int8, json_build_object(
            'id', d.id, 'task_id', d.task_id, 'event_type', d.event_type, 'target_url', d.target_url,
            'status', d.status, 'created_at', d.created_at, 'next_attempt_at', d.next_attempt_at,
            'finished_at', d.finished_at,
            'attempts', coalesce((
              SELECT json_agg(json_build_object('attempt', a.attempt, 'attempted_at', a.attempted_at,
                       'status_code', a.status_code, 'error', a.error, 'duration_ms', a.duration_ms) ORDER BY a.attempt)
              FROM webhook_attempts a WHERE a.delivery_id = d.id), '[]'::json)
          ) FROM shown d`.pipe(Effect.orDie)
        return {
          total: Number(rows[0]?.total ?? 0),
          deliveries: rows
            .flatMap((row) => (row.delivery === null ? [] : [deliveryOf(jsonOf(row.delivery))]))
            .sort((a, b) => b.created_at.getTime() - a.created_at.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
        }
      })
    }
  })
}) {
  static readonly layer = Layer.effect(WebhookRepo, WebhookRepo.make)
}

interface WebhookDeliveryRow {
  readonly id: string
  readonly task_id: string
  readonly event_type: WebhookEventType
  readonly target_url: string
  readonly status: WebhookDelivery["status"]
  readonly created_at: string
  readonly next_attempt_at: string | null
  readonly finished_at: string | null
  readonly attempts: ReadonlyArray<{
    readonly attempt: number
    readonly attempted_at: string
    readonly status_code: number | null
    readonly error: string | null
    readonly duration_ms: number
  }>
}

/** A row as the wire has it (times as Dates; absent, not null). */
const deliveryOf = (row: WebhookDeliveryRow): WebhookDelivery => ({
  id: row.id,
  task_id: row.task_id,
  event_type: row.event_type,
  target_url: row.target_url,
  status: row.status,
  created_at: new Date(iso(row.created_at)),
  ...(row.next_attempt_at !== null && row.status === "pending" ? { next_attempt_at: new Date(iso(row.next_attempt_at)) } : {}),
  ...(row.finished_at !== null ? { finished_at: new Date(iso(row.finished_at)) } : {}),
  attempts: row.attempts.map((a) => ({
    attempt: a.attempt,
    attempted_at: new Date(iso(a.attempted_at)),
    ...(a.status_code !== null ? { status_code: a.status_code } : {}),
    ...(a.error !== null ? { error: a.error } : {}),
    duration_ms: a.duration_ms
  }))
})
