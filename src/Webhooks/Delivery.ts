/**
 * The delivery job: one attempt of one delivery. It posts the delivery's fixed payload, signed
 * now, records the attempt and, unless it succeeded or 24 hours have passed since the delivery
 * was made, queues the next attempt in the same transaction. Its own schedule, not
 * graphile-worker's (exp(min(attempt, 10)) seconds): doubling from WEBHOOK_RETRY_BASE_SECONDS up
 * to an hour apart, so the first retries come soon, tests can shorten them, and every attempt is
 * a row the customer lists. A job run twice (its instance died after recording) records its
 * attempt once and queues nothing more.
 */
import { SqlClient } from "effect/sql"
import { Effect, Option, Schema } from "effect"
import { AppConfig } from "../Config.ts"
import { defineTask, type JobTask } from "../Jobs/Task.ts"
import { WebhookRepo } from "./Repo.ts"
import { signedHeaders } from "./Signing.ts"
import { post } from "./Targets.ts"

const DeliveryJob = Schema.Struct({ deliveryId: Schema.String, attempt: Schema.Int })

/** The delay after failed attempt `attempt` (from 1): doubling from `base`, at most `max`. */
export const retryDelayMillis = (attempt: number, base: number, max: number) => Math.min(max, base * 2 ** Math.min(attempt - 1, 40))

const isSuccess = (status: number) => status >= 200 && status < 300

type Needs = WebhookRepo | SqlClient.SqlClient | AppConfig

const deliver = ({ attempt, deliveryId }: typeof DeliveryJob.Type): Effect.Effect<void, never, Needs> =>
  Effect.gen(function*() {
    const repo = yield* WebhookRepo
    const sql = yield* SqlClient.SqlClient
    const { webhooks } = yield* AppConfig
    const found = yield* repo.due(deliveryId)
    // gone (its task or user deleted), finished, or this attempt recorded by an earlier run
    if (Option.isNone(found) || found.value.status !== "pending" || found.value.attempts !== attempt - 1) return
    const delivery = found.value
    const secrets = yield* repo.secrets(delivery.ownerId)
    const signing = [secrets.secret, ...Option.toArray(Option.map(secrets.previous, (p) => p.secret))]
    const startedAt = new Date()
    const headers = {
      ...signedHeaders(signing, delivery.id, Math.floor(startedAt.getTime() / 1000), delivery.payload),
      "user-agent": "node-registry-webhooks/1"
    }
    const outcome = yield* Effect.promise(() =>
      post(delivery.targetUrl, headers, delivery.payload, {
        allowPrivate: webhooks.allowPrivateTargets,
        timeoutMillis: webhooks.attemptTimeoutMillis
      })
    )
    const finishedAt = Date.now()
    const succeeded = outcome._tag === "Answered" && isSuccess(outcome.status)
    const nextAt = finishedAt + retryDelayMillis(attempt, webhooks.retryBaseMillis, webhooks.retryMaxDelayMillis)
    const retried = !succeeded && finishedAt < delivery.createdAt.getTime() + webhooks.retryForMillis
    yield* sql.withTransaction(Effect.gen(function*() {
      const recorded = yield* repo.record({
        deliveryId,
        attempt,
        attemptedAt: startedAt,
        statusCode: outcome._tag === "Answered" ? outcome.status : null,
        error: outcome._tag === "Answered"
          ? (isSuccess(outcome.status) ? null : outcome.status >= 300 && outcome.status < 400 ? "redirect not followed" : null)
          : outcome.reason,
        durationMillis: finishedAt - startedAt.getTime(),
        outcome: succeeded ? { status: "succeeded" } : retried ? { status: "pending", nextAt: new Date(nextAt) } : { status: "failed" }
      })
      if (recorded && retried) yield* deliveryTask.enqueue({ deliveryId, attempt: attempt + 1 }, { runAt: new Date(nextAt) })
    })).pipe(Effect.orDie)
  })

export const deliveryTask: JobTask<typeof DeliveryJob.Type, Needs> = defineTask("webhook-delivery", DeliveryJob, deliver)
