/**
 * A job task: a small module of its own (src/Webhooks/Delivery.ts is one), named by a stable
 * identifier, its payload a schema, its work an Effect. The runner (Runner.ts) takes the list of
 * tasks the application registers; a task is enqueued with `enqueue`, inside the transaction of
 * the state change it follows, so that the change and its job commit together or not at all.
 */
import { SqlClient } from "effect/sql"
import { Effect, Schema } from "effect"
import { traced } from "../Tracing.ts"

export interface JobTask<P, R> {
  /** graphile-worker's task identifier: stable, since queued jobs name it. */
  readonly identifier: string
  readonly decode: (payload: unknown) => Effect.Effect<P, Schema.SchemaError>
  readonly run: (payload: P) => Effect.Effect<void, unknown, R>
  /**
   * A recurring task's cron pattern (`5 * * * *`), in UTC: the runner queues one job at each
   * matching minute, once across instances (graphile-worker's crontab, which records each run).
   * Its payload is graphile-worker's own (`{_cron: {ts, backfilled}}`), which the schema may ignore.
   */
  readonly schedule?: string
  /**
   * Queues a job of this task with the current SqlClient, so within its transaction when called
   * inside `sql.withTransaction`. `runAt` in the future delays it. A `jobKey` names the job: while
   * a job of that key waits, queueing another replaces it (one waits at most). Jobs of one
   * `queueName` run one at a time, across instances.
   */
  readonly enqueue: (payload: P, options?: EnqueueOptions) => Effect.Effect<void, never, SqlClient.SqlClient>
}

export interface EnqueueOptions {
  readonly runAt?: Date
  readonly jobKey?: string
  readonly queueName?: string
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyJobTask = JobTask<any, any>

/** What running the tasks of `T` needs. */
export type TaskRequirements<T extends AnyJobTask> = T extends JobTask<any, infer R> ? R : never

/** How many times graphile-worker retries a task whose Effect fails (a defect of ours, the database away). */
const maxAttempts = 25

export const defineTask = <S extends Schema.Codec<any, any, never, never>, R>(
  identifier: string,
  payload: S,
  run: (payload: S["Type"]) => Effect.Effect<void, unknown, R>,
  options?: { readonly schedule?: string }
): JobTask<S["Type"], R> => {
  const encode = Schema.encodeSync(payload)
  return {
    identifier,
    decode: Schema.decodeUnknownEffect(payload),
    run,
    ...(options?.schedule === undefined ? {} : { schedule: options.schedule }),
    enqueue: traced(`Jobs.enqueue ${identifier}`)(function*(value: S["Type"], options?: EnqueueOptions) {
      const sql = yield* SqlClient.SqlClient
      const runAt = options?.runAt ?? null
      const jobKey = options?.jobKey ?? null
      const queueName = options?.queueName ?? null
      // the job's row is a composite of the library's type: only that it was added is read
      yield* sql`SELECT 1 FROM graphile_worker.add_job(
          ${identifier},
          ${JSON.stringify(encode(value))}::json,
          run_at => ${runAt}::timestamptz,
          max_attempts => ${maxAttempts},
          job_key => ${jobKey}::text,
          queue_name => ${queueName}::text
        )`.pipe(Effect.orDie)
    })
  }
}
