/**
 * The one job runner of the service: graphile-worker 0.18 over PostgreSQL (the service's own
 * database, `DATABASE_URL` or the embedded server), run inside every instance as a scoped layer.
 * Its start migrates its schema (`graphile_worker`, by the library's own migrator, which takes an
 * advisory lock, so instances starting together are safe) and listens for new jobs; its stop
 * waits for the jobs in hand. The library's locking runs each job once across instances, and a
 * job whose instance died is taken up again when its lock expires (4 hours).
 *
 * graphile-worker rather than pg-boss: jobs are added by a SQL function (`graphile_worker.add_job`)
 * that our own effect/sql client calls inside the transaction of the change it follows, and new
 * jobs are announced by LISTEN/NOTIFY, so a job starts within milliseconds of its commit.
 */
import { Effect, Layer, Redacted, type Scope } from "effect"
import { Logger, parseCronItems, run, runMigrations } from "graphile-worker"
import pg from "pg"
import { AppConfig } from "../Config.ts"
import { DatabaseUrl } from "../Db/Database.ts"
import type { AnyJobTask, TaskRequirements } from "./Task.ts"

/** graphile-worker's log lines as the service's: its chatter at debug, its troubles as they are. */
const loggerIn = (context: import("effect").Context.Context<never>) =>
  new Logger(() => (level, message) => {
    const log = level === "error" ? Effect.logError : level === "warning" ? Effect.logWarning : Effect.logDebug
    Effect.runSyncWith(context)(log(`jobs: ${message}`))
  })

/** Creates or updates the job schema of the database at `url` (the tests' template uses it too). */
export const migrateJobSchema = (url: string) => runMigrations({ connectionString: url, logger: new Logger(() => () => {}) })

/**
 * The runner of `tasks`, started with the layer and stopped gracefully when its scope closes;
 * once it has started (its schema in place), `atStart` queues the jobs every start queues, and
 * may fork, into the layer's scope, what queues jobs from then on.
 */
export const jobRunner = <const Tasks extends ReadonlyArray<AnyJobTask>, R = never>(
  tasks: Tasks,
  atStart: Effect.Effect<void, never, R> = Effect.void as Effect.Effect<void, never, R>
): Layer.Layer<never, never, AppConfig | DatabaseUrl | TaskRequirements<Tasks[number]> | Exclude<R, Scope.Scope>> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const { jobs } = yield* AppConfig
    const url = yield* DatabaseUrl
    const context = yield* Effect.context<TaskRequirements<Tasks[number]>>()
    const logger = loggerIn(context as import("effect").Context.Context<never>)
    const taskList = Object.fromEntries(tasks.map((task) => [
      task.identifier,
      (payload: unknown) =>
        Effect.runPromiseWith(context)(
          Effect.flatMap(task.decode(payload), task.run).pipe(
            Effect.tapCause((cause) => Effect.logWarning(`job ${task.identifier} failed; graphile-worker retries it`, cause))
          )
        )
    ]))
    // the runner's pool is ours, so that a connection lost while in use (PostgreSQL restarted, a
    // backend terminated) is a logged warning: pg emits it on the client, and an 'error' with no
    // listener would be an uncaught exception that ends the process
    const pool = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const pool = new pg.Pool({
          connectionString: Redacted.value(url),
          // one connection per job in hand, one for LISTEN, one spare
          max: jobs.concurrency + 2
        })
        const lost = (error: Error) => Effect.runForkWith(context)(Effect.logWarning(`jobs: a database connection was lost: ${error.message}`))
        pool.on("error", lost)
        pool.on("connect", (client) => client.on("error", lost))
        return pool
      }),
      (pool) => Effect.promise(() => pool.end().catch(() => undefined))
    )
    yield* Effect.acquireRelease(
      Effect.tryPromise(() =>
        run({
          pgPool: pool,
          concurrency: jobs.concurrency,
          pollInterval: jobs.pollIntervalMillis,
          noHandleSignals: true,
          // the recurring tasks, from their own declarations: no crontab file is looked for in the
          // working folder. A run missed while no instance was up is not made up for: each run
          // of a recurring task does all that is due.
          parsedCronItems: parseCronItems(tasks.flatMap((task) =>
            task.schedule === undefined ? [] : [{ task: task.identifier, identifier: task.identifier, match: task.schedule }]
          )),
          taskList,
          logger
        })
      ).pipe(Effect.orDie),
      // a stop that fails (its pool already broken) is logged: it must not turn a clean exit into a failed one
      (runner) =>
        Effect.tryPromise(() => runner.stop()).pipe(
          Effect.catchCause((cause) => Effect.logWarning("jobs: the runner did not stop cleanly", cause))
        )
    )
    yield* atStart
  }))
