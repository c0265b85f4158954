/**
 * Image tasks and the Idempotency-Key claims of the requests that started them. A task's status
 * moves only forwards (CREATED -> IN_PROGRESS -> COMPLETED | FAILED), enforced by the UPDATE's
 * own condition, so that concurrent polls with stale vendor answers cannot move it back.
 */
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../Config.ts"
import type { MediaTaskStatus } from "../Domain/Media.ts"
import type { ImageTaskKind } from "./ImageVendor.ts"
import { isUuid } from "../Domain/Schemas.ts"

export interface StoredTask {
  readonly id: string
  readonly vendorTaskId: string
  readonly kind: ImageTaskKind
  readonly status: MediaTaskStatus
  readonly generated: ReadonlyArray<string>
}

export interface NewTask extends StoredTask {
  readonly ownerId: string
}

/** An Idempotency-Key: whose, for which operation, and the hash of the request that claimed it. */
export interface KeyClaim {
  readonly ownerId: string
  readonly kind: ImageTaskKind
  readonly key: string
  readonly requestHash: Buffer
}

/** What claiming a key found: it is ours now, or an earlier request holds it. */
export type ClaimOutcome =
  | { readonly _tag: "Claimed" }
  | { readonly _tag: "Held"; readonly requestHash: Buffer; readonly taskId: Option.Option<string> }

/** How long a key binds its task. */
export const idempotencyWindowHours = 24

export const terminalStatuses: ReadonlyArray<MediaTaskStatus> = ["COMPLETED", "FAILED"]


export class TaskRepo extends Context.Tag("TaskRepo")<TaskRepo, {
  /**
   * Records a new task; with a claimed key, binds the key to it in the same statement. `None`
   * when a task with that id exists already.
   */
  readonly create: (task: NewTask, claim: Option.Option<KeyClaim>) => Effect.Effect<Option.Option<StoredTask>>
  /** The owner's task of this kind; `None` for anyone else's, another kind's, or an id that is no UUID. */
  readonly find: (ownerId: string, kind: ImageTaskKind, id: string) => Effect.Effect<Option.Option<StoredTask>>
  /**
   * Moves the task to `status` if that is forwards (or the same, unfinished, status with new
   * results); `generated` undefined keeps the stored list. Answers the task as stored afterwards.
   */
  readonly advance: (
    id: string,
    status: MediaTaskStatus,
    generated: ReadonlyArray<string> | undefined
  ) => Effect.Effect<StoredTask>
  /**
   * Claims a key (an expired claim counts as none, and so does one left without a task for longer
   * than `staleAfterMillis`), or says who holds it.
   */
  readonly claimKey: (claim: KeyClaim) => Effect.Effect<ClaimOutcome>
  /** Who holds a key now; `None` once it is released or expired. */
  readonly readKey: (claim: KeyClaim) => Effect.Effect<Option.Option<Extract<ClaimOutcome, { _tag: "Held" }>>>
  /** Gives up a claim that is not bound to a task (its vendor call failed). */
  readonly releaseKey: (claim: KeyClaim) => Effect.Effect<void>
}>() {}

interface TaskRow {
  readonly id: string
  readonly vendor_task_id: string
  readonly kind: ImageTaskKind
  readonly status: MediaTaskStatus
  readonly generated: ReadonlyArray<string>
}

const toTask = (row: TaskRow): StoredTask => ({
  id: row.id,
  vendorTaskId: row.vendor_task_id,
  kind: row.kind,
  status: row.status,
  generated: row.generated
})

interface KeyRow {
  readonly request_hash: Buffer
  readonly task_id: string | null
}

const toHeld = (row: KeyRow) => ({
  _tag: "Held" as const,
  requestHash: Buffer.from(row.request_hash),
  taskId: Option.fromNullable(row.task_id)
})

/** A start takes at most the vendor timeout; a claim without a task for this much longer was abandoned. */
const abandonedClaimGraceMillis = 10_000

export const makeTaskRepo = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const staleAfterMillis = (yield* AppConfig).vendorTimeoutMillis + abandonedClaimGraceMillis
  const window = sql.literal(`interval '${idempotencyWindowHours} hours'`)

  // one statement, so that recording the task and binding its key need no transaction
  const create = (task: NewTask, claim: Option.Option<KeyClaim>) => {
    const c = Option.getOrNull(claim)
    return sql<TaskRow>`
      WITH task AS (
        INSERT INTO media_tasks (id, vendor_task_id, owner_id, kind, status, generated)
        VALUES (${task.id}::uuid, ${task.vendorTaskId}, ${task.ownerId}, ${task.kind}, ${task.status}, ${[...task.generated]}::text[])
        ON CONFLICT (id) DO NOTHING
        RETURNING id::text, vendor_task_id, kind, status, generated
      ), bound AS (
        UPDATE media_idempotency_keys SET task_id = (SELECT id::uuid FROM task)
        WHERE ${c !== null} AND owner_id = ${c?.ownerId ?? ""} AND kind = ${c?.kind ?? ""} AND key = ${c?.key ?? ""}
      )
      SELECT * FROM task`.pipe(Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toTask)), Effect.orDie)
  }

  const find = (ownerId: string, kind: ImageTaskKind, id: string) =>
    isUuid(id)
      ? sql<TaskRow>`
          SELECT id::text, vendor_task_id, kind, status, generated FROM media_tasks
          WHERE id = ${id}::uuid AND owner_id = ${ownerId} AND kind = ${kind}`.pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toTask)),
        Effect.orDie
      )
      : Effect.succeed(Option.none<StoredTask>())

  const advance = (id: string, status: MediaTaskStatus, generated: ReadonlyArray<string> | undefined) =>
    // the CTE's UPDATE and the fallback SELECT see the same snapshot: one of them answers the row
    sql<TaskRow>`
      WITH moved AS (
        UPDATE media_tasks
        SET status = ${status}, generated = coalesce(${generated === undefined ? null : [...generated]}::text[], generated),
            updated_at = now()
        WHERE id = ${id}::uuid
          AND (media_status_rank(status) < media_status_rank(${status})
               OR (status = ${status} AND status NOT IN ('COMPLETED', 'FAILED')
                   AND generated IS DISTINCT FROM coalesce(${generated === undefined ? null : [...generated]}::text[], generated)))
        RETURNING id::text, vendor_task_id, kind, status, generated
      )
      SELECT * FROM moved
      UNION ALL
      SELECT id::text, vendor_task_id, kind, status, generated FROM media_tasks
      WHERE id = ${id}::uuid AND NOT EXISTS (SELECT 1 FROM moved)`.pipe(
      Effect.map((rows) => toTask(rows[0]!)),
      Effect.orDie
    )

  const claimKey = (c: KeyClaim): Effect.Effect<ClaimOutcome> =>
    Effect.gen(function*() {
      // an expired claim binds nothing: clear the user's before claiming
      yield* sql`DELETE FROM media_idempotency_keys
        WHERE owner_id = ${c.ownerId} AND created_at < now() - ${window}`
      // a claim still without a task after `staleAfterMillis` lost its request (a crash): take it over
      const inserted = yield* sql`
        INSERT INTO media_idempotency_keys (owner_id, kind, key, request_hash)
        VALUES (${c.ownerId}, ${c.kind}, ${c.key}, ${c.requestHash})
        ON CONFLICT (owner_id, kind, key) DO UPDATE SET request_hash = excluded.request_hash, created_at = now()
          WHERE media_idempotency_keys.task_id IS NULL
            AND media_idempotency_keys.created_at < now() - ${staleAfterMillis} * interval '1 millisecond'
        RETURNING 1 AS claimed`
      if (inserted.length > 0) return { _tag: "Claimed" } as const
      const held = yield* readKey(c)
      // released between the two statements: try again
      return Option.isSome(held) ? held.value : yield* claimKey(c)
    }).pipe(Effect.orDie)

  const readKey = (c: KeyClaim) =>
    sql<KeyRow>`
      SELECT request_hash, task_id::text FROM media_idempotency_keys
      WHERE owner_id = ${c.ownerId} AND kind = ${c.kind} AND key = ${c.key} AND created_at >= now() - ${window}`.pipe(
      Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toHeld)),
      Effect.orDie
    )

  const releaseKey = (c: KeyClaim) =>
    sql`DELETE FROM media_idempotency_keys
      WHERE owner_id = ${c.ownerId} AND kind = ${c.kind} AND key = ${c.key} AND task_id IS NULL`.pipe(
      Effect.asVoid,
      Effect.orDie
    )

  return TaskRepo.of({ create, find, advance, claimKey, readKey, releaseKey })
})

export const TaskRepoLive = Layer.effect(TaskRepo, makeTaskRepo)
