/**
 * Image tasks and the Idempotency-Key claims of the requests that started them. A task's status
 * moves only forwards (CREATED -> IN_PROGRESS -> COMPLETED | FAILED), enforced by the UPDATE's
 * own condition, so that concurrent polls with stale vendor answers cannot move it back.
 */
import { SqlClient, SqlSchema } from "effect/sql"
import { Context, Data, Effect, Layer, Option, Schema } from "effect"
import { AppConfig } from "../Config.ts"
import { ImageTaskKind, MediaTask, MediaTaskStatus, terminalStatuses } from "../Domain/Media.ts"
import { Webhooks } from "../Webhooks/Service.ts"
import { isUuid, Strings } from "../Domain/Schemas.ts"
import { rowsOf } from "../Db/Rows.ts"
import { traced } from "../Tracing.ts"

/** A task as stored: the id its owner sees, the vendor's id, its kind, status and results. */
export const StoredTask = Schema.Struct({
  id: Schema.String,
  vendorTaskId: Schema.String,
  kind: ImageTaskKind,
  status: MediaTaskStatus,
  generated: Strings
})
export type StoredTask = typeof StoredTask.Type

export interface NewTask extends StoredTask {
  readonly ownerId: string
  /** SHA-256 of the token of the callback URL the vendor was given. */
  readonly callbackTokenHash?: Uint8Array
  /** The client's webhook_url, if any: it gets our delivery when the task finishes. */
  readonly webhookUrl?: string | undefined
}

/** An Idempotency-Key: whose, for which operation, and the hash of the request that claimed it. */
export interface KeyClaim {
  readonly ownerId: string
  readonly kind: ImageTaskKind
  readonly key: string
  readonly requestHash: Uint8Array
}

/** What claiming a key found: it is ours now, or an earlier request holds it (with its task once it has one). */
export type ClaimOutcome = Data.TaggedEnum<{
  Claimed: {}
  Held: { readonly requestHash: Uint8Array; readonly taskId: Option.Option<string> }
}>
export const ClaimOutcome = Data.taggedEnum<ClaimOutcome>()

/** How long a key binds its task. */
const idempotencyWindowHours = 24

/** A start takes at most the vendor timeout; a claim without a task for this much longer was abandoned. */
const abandonedClaimGraceMillis = 10_000

const taskColumns = "id::text, vendor_task_id, kind, status, generated"

/** What names a key: its owner, operation and text. */
const KeyRequest = Schema.Struct({ ownerId: Schema.String, kind: ImageTaskKind, key: Schema.String })

const TaskRow = rowsOf({
  id: Schema.String,
  vendor_task_id: Schema.String,
  kind: ImageTaskKind,
  status: MediaTaskStatus,
  generated: Strings
}, StoredTask, ({ vendor_task_id, ...task }) => ({ ...task, vendorTaskId: vendor_task_id }))

/** A task after an advance: with whose it is, its webhook, and whether this advance moved it. */
const Advanced = Schema.Struct({ task: StoredTask, ownerId: Schema.String, webhookUrl: Schema.NullOr(Schema.String), moved: Schema.Boolean })

const AdvancedRow = rowsOf({
  id: Schema.String,
  vendor_task_id: Schema.String,
  kind: ImageTaskKind,
  status: MediaTaskStatus,
  generated: Strings,
  owner_id: Schema.String,
  webhook_url: Schema.NullOr(Schema.String),
  moved: Schema.Boolean
}, Advanced, ({ moved, owner_id, vendor_task_id, webhook_url, ...task }) => ({
  task: { ...task, vendorTaskId: vendor_task_id },
  ownerId: owner_id,
  webhookUrl: webhook_url,
  moved
}))

/** What a finished task's delivery carries under `data`: the task as its poll answers it. */
const encodeTask = Schema.encodeSync(MediaTask)
export const taskData = (task: StoredTask) =>
  encodeTask(new MediaTask({ task_id: task.id, status: task.status, generated: task.generated }, { disableChecks: true }))

const HeldRow = Schema.Struct({
  request_hash: Schema.Uint8Array,
  task_id: Schema.OptionFromNullOr(Schema.String)
})

/** What claiming a key answers: no hash when it is ours now, else the holder's hash and task. */
const ClaimRow = Schema.Struct({
  request_hash: Schema.NullOr(Schema.Uint8Array),
  task_id: Schema.OptionFromNullOr(Schema.String)
})

const held = (row: typeof HeldRow.Type) =>
  ClaimOutcome.Held({ requestHash: new Uint8Array(row.request_hash), taskId: row.task_id })

export class TaskRepo extends Context.Service<TaskRepo>()("TaskRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const webhooks = yield* Webhooks
    const staleAfterMillis = (yield* AppConfig).vendorTimeoutMillis + abandonedClaimGraceMillis
    const window = sql.literal(`interval '${idempotencyWindowHours} hours'`)

    // one statement, so that recording the task and binding its key need no transaction; its
    // commit is waited for (the client hears of the task only after), and flushes the claim's too
    const insertTask = SqlSchema.findOneOption({
      Request: Schema.Struct({
        task: Schema.Struct({
          ...StoredTask.fields,
          ownerId: Schema.String,
          callbackTokenHash: Schema.NullOr(Schema.Uint8Array),
          webhookUrl: Schema.NullOr(Schema.String)
        }),
        claim: Schema.NullOr(Schema.Struct({ ...KeyRequest.fields, requestHash: Schema.Uint8Array }))
      }),
      Result: TaskRow,
      execute: ({ claim, task }) =>
        sql`WITH task AS (
              INSERT INTO media_tasks (id, vendor_task_id, owner_id, kind, status, generated, callback_token_hash, webhook_url)
              VALUES (${task.id}::uuid, ${task.vendorTaskId}, ${task.ownerId}, ${task.kind}, ${task.status}, ${[...task.generated]}::text[],
                      ${task.callbackTokenHash}::bytea, ${task.webhookUrl}::text)
              ON CONFLICT (id) DO NOTHING
              RETURNING ${sql.literal(taskColumns)}
            ), bound AS (
              -- the claim again if PostgreSQL lost it (its commit was not waited for): the key still binds
              INSERT INTO media_idempotency_keys (owner_id, kind, key, request_hash, task_id)
              SELECT ${claim?.ownerId ?? ""}, ${claim?.kind ?? ""}, ${claim?.key ?? ""}, ${claim?.requestHash ?? new Uint8Array()}, id::uuid
              FROM task WHERE ${claim !== null}
              ON CONFLICT (owner_id, kind, key) DO UPDATE SET task_id = excluded.task_id
            )
            SELECT * FROM task`
    })

    const findTask = SqlSchema.findOneOption({
      Request: Schema.Struct({ ownerId: Schema.String, kind: ImageTaskKind, id: Schema.String }),
      Result: TaskRow,
      execute: ({ id, kind, ownerId }) =>
        sql`SELECT ${sql.literal(taskColumns)} FROM media_tasks WHERE id = ${id}::uuid AND owner_id = ${ownerId} AND kind = ${kind}`
    })

    const advanceTask = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.String, status: MediaTaskStatus, generated: Schema.NullOr(Strings) }),
      Result: AdvancedRow,
      // the CTE's UPDATE and the fallback SELECT see the same snapshot: one of them answers the row
      execute: ({ generated, id, status }) =>
        sql`WITH moved AS (
              UPDATE media_tasks
              SET status = ${status}, generated = coalesce(${generated === null ? null : [...generated]}::text[], generated),
                  updated_at = now()
              WHERE id = ${id}::uuid
                AND (media_status_rank(status) < media_status_rank(${status})
                     OR (status = ${status} AND status NOT IN ('COMPLETED', 'FAILED')
                         AND generated IS DISTINCT FROM coalesce(${generated === null ? null : [...generated]}::text[], generated)))
              RETURNING ${sql.literal(taskColumns)}, owner_id, webhook_url, true AS moved
            )
            SELECT * FROM moved
            UNION ALL
            SELECT ${sql.literal(taskColumns)}, owner_id, webhook_url, false FROM media_tasks
            WHERE id = ${id}::uuid AND NOT EXISTS (SELECT 1 FROM moved)`
    })

    const findKey = SqlSchema.findOneOption({
      Request: KeyRequest,
      Result: HeldRow,
      execute: ({ key, kind, ownerId }) =>
        sql`SELECT request_hash, task_id::text FROM media_idempotency_keys
            WHERE owner_id = ${ownerId} AND kind = ${kind} AND key = ${key} AND created_at >= now() - ${window}`
    })

    const readKey = (claim: KeyClaim) => Effect.map(findKey(claim), Option.map(held))

    /**
     * Claims the key or reads who holds it, in one statement. An expired claim binds nothing (the
     * user's others are cleared on the way); one still without a task after `staleAfterMillis`
     * lost its request (a crash) and is taken over.
     *
     * Its commit is not waited for (`synchronous_commit` off for this statement only): a claim
     * only matters while its request runs, and PostgreSQL flushes its log in order, so the task's
     * own commit, which is waited for before the client hears of the task, makes the claim durable
     * too. If PostgreSQL crashes before that, the claim may be lost with the request it belonged
     * to (whose client was told nothing): a repeat claims the key anew, as it does today after the
     * stale delay; and should that request still record its task, the task's statement binds the
     * key again.
     */
    const claimOrRead = SqlSchema.findOneOption({
      Request: Schema.Struct({ ...KeyRequest.fields, requestHash: Schema.Uint8Array }),
      Result: ClaimRow,
      execute: ({ key, kind, ownerId, requestHash }) =>
        sql`WITH relaxed AS (
              SELECT set_config('synchronous_commit', 'off', true)
            ), expired AS (
              DELETE FROM media_idempotency_keys
              WHERE owner_id = ${ownerId} AND created_at < now() - ${window} AND NOT (kind = ${kind} AND key = ${key})
            ), claimed AS (
              INSERT INTO media_idempotency_keys (owner_id, kind, key, request_hash)
              SELECT ${ownerId}, ${kind}, ${key}, ${requestHash} FROM relaxed
              ON CONFLICT (owner_id, kind, key) DO UPDATE SET request_hash = excluded.request_hash, created_at = now(), task_id = NULL
                WHERE media_idempotency_keys.created_at < now() - ${window}
                   OR (media_idempotency_keys.task_id IS NULL
                       AND media_idempotency_keys.created_at < now() - ${staleAfterMillis} * interval '1 millisecond')
              RETURNING 1
            )
            SELECT NULL::bytea AS request_hash, NULL::text AS task_id FROM claimed
            UNION ALL
            SELECT request_hash, task_id::text FROM media_idempotency_keys
            WHERE owner_id = ${ownerId} AND kind = ${kind} AND key = ${key} AND created_at >= now() - ${window}
              AND NOT EXISTS (SELECT 1 FROM claimed)`
    })

    const claimKey = (claim: KeyClaim): Effect.Effect<ClaimOutcome, unknown> =>
      Effect.flatMap(claimOrRead(claim), Option.match({
        // claimed by another request after this statement began, or released since: look again
        onNone: () => claimKey(claim),
        onSome: ({ request_hash, task_id }) =>
          Effect.succeed(request_hash === null ? ClaimOutcome.Claimed() : held({ request_hash, task_id }))
      }))

    /** A finished task with a webhook_url: its delivery, made in the caller's transaction. */
    const announceIfFinished = (ownerId: string, task: StoredTask, webhookUrl: string | null) =>
      webhookUrl === null || !terminalStatuses.includes(task.status)
        ? Effect.void
        : webhooks.announce({
          ownerId,
          taskId: task.id,
          targetUrl: webhookUrl,
          eventType: task.status === "COMPLETED" ? "task.completed" : "task.failed",
          data: taskData(task)
        })

    return {
      /**
       * Records a new task; with a claimed key, binds the key to it in the same statement. `None`
       * when a task with that id exists already.
       */
      create: traced("TaskRepo.create")(function*(task: NewTask, claim: Option.Option<KeyClaim>) {
        const request = {
          task: { ...task, callbackTokenHash: task.callbackTokenHash ?? null, webhookUrl: task.webhookUrl ?? null },
          claim: Option.getOrNull(claim)
        }
        const webhookUrl = task.webhookUrl
        // a vendor that answers a start finished (none known does): its delivery commits with the task
        if (webhookUrl === undefined || !terminalStatuses.includes(task.status)) return yield* Effect.orDie(insertTask(request))
        return yield* sql.withTransaction(Effect.tap(insertTask(request), (created) =>
          Option.isSome(created) ? announceIfFinished(task.ownerId, created.value, webhookUrl) : Effect.void)).pipe(Effect.orDie)
      }),

      /** The owner's task of this kind; `None` for anyone else's, another kind's, or an id that is no UUID. */
      find: traced("TaskRepo.find")(function*(ownerId: string, kind: ImageTaskKind, id: string) {
        return isUuid(id) ? yield* Effect.orDie(findTask({ ownerId, kind, id })) : Option.none<StoredTask>()
      }),

      /**
       * Moves the task to `status` if that is forwards (or the same, unfinished, status with new
       * results); `generated` undefined keeps the stored list. Answers the task as stored afterwards.
       */
      advance: traced("TaskRepo.advance")(
        function*(id: string, status: MediaTaskStatus, generated: ReadonlyArray<string> | undefined) {
          // the move that finishes the task and the delivery announcing it commit together
          return yield* sql.withTransaction(Effect.gen(function*() {
            const after = yield* advanceTask({ id, status, generated: generated ?? null })
            if (after.moved) yield* announceIfFinished(after.ownerId, after.task, after.webhookUrl)
            return after.task
          })).pipe(Effect.orDie)
        }
      ),

      /** The task a callback token is for, with its owner; `None` for a token of no task. */
      findByCallback: traced("TaskRepo.findByCallback")(function*(tokenHash: Uint8Array) {
        const rows = yield* sql<{ id: string; owner_id: string; kind: ImageTaskKind }>`
          SELECT id::text, owner_id, kind FROM media_tasks WHERE callback_token_hash = ${tokenHash}`.pipe(Effect.orDie)
        return Option.fromNullishOr(rows[0])
      }),

      /**
       * Claims a key (an expired claim counts as none, and so does one left without a task for
       * longer than the vendor timeout and a grace), or says who holds it.
       */
      claimKey: traced("TaskRepo.claimKey")(function*(claim: KeyClaim) {
        return yield* Effect.orDie(claimKey(claim))
      }),

      /** Who holds a key now; `None` once it is released or expired. */
      readKey: traced("TaskRepo.readKey")(function*(claim: KeyClaim) {
        return yield* Effect.orDie(readKey(claim))
      }),

      /** Gives up a claim that is not bound to a task (its vendor call failed). */
      releaseKey: traced("TaskRepo.releaseKey")(function*(claim: KeyClaim) {
        yield* sql`DELETE FROM media_idempotency_keys
          WHERE owner_id = ${claim.ownerId} AND kind = ${claim.kind} AND key = ${claim.key} AND task_id IS NULL`.pipe(Effect.orDie)
      })
    }
  })
}) {
  static readonly layer = Layer.effect(TaskRepo, TaskRepo.make).pipe(Layer.provide(Webhooks.layer))
}
