/**
 * Webhooks through the proxy: the deliveries of a user's task events to the webhook_url the task
 * was started with, and the user's signing secret. `announce` is called inside the transaction
 * that records the event (src/Images/TaskRepo.ts), so the delivery and its job commit with it.
 */
import { SqlClient } from "effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import { randomUUID } from "node:crypto"
import { AppConfig } from "../Config.ts"
import { CurrentUser } from "../Domain/Auth.ts"
import type { WebhookDeliveryPage, WebhookEventType, WebhookSecret } from "../Domain/Webhooks.ts"
import { traced } from "../Tracing.ts"
import { deliveryTask } from "./Delivery.ts"
import { type Secrets, WebhookRepo } from "./Repo.ts"
import { secretText } from "./Signing.ts"

const toWire = (secrets: Secrets): WebhookSecret => ({
  secret: secretText(secrets.secret),
  created_at: secrets.createdAt,
  ...Option.match(secrets.previous, { onNone: () => ({}), onSome: (p) => ({ previous_valid_until: p.until }) })
})

export class Webhooks extends Context.Service<Webhooks>()("Webhooks", {
  make: Effect.gen(function*() {
    const repo = yield* WebhookRepo
    const sql = yield* SqlClient.SqlClient
    const { webhooks } = yield* AppConfig

    return {
      /**
       * Makes the delivery of `eventType` of a task to `targetUrl` and queues its first attempt,
       * in the caller's transaction; once per task and event (a repeat does nothing).
       */
      announce: traced("Webhooks.announce")(function*(event: {
        readonly ownerId: string
        readonly taskId: string
        readonly targetUrl: string
        readonly eventType: WebhookEventType
        readonly data: unknown
      }) {
        const id = randomUUID()
        const payload = JSON.stringify({ type: event.eventType, timestamp: new Date().toISOString(), data: event.data })
        const made = yield* repo.create({ id, ownerId: event.ownerId, taskId: event.taskId, eventType: event.eventType, targetUrl: event.targetUrl, payload })
        if (made) yield* Effect.provideService(deliveryTask.enqueue({ deliveryId: id, attempt: 1 }), SqlClient.SqlClient, sql)
      }),

      /** The caller's signing secret, made on first need. */
      secret: traced("Webhooks.secret")(function*() {
        return toWire(yield* repo.secrets((yield* CurrentUser).id))
      }),

      /** A new secret for the caller; the previous one also signs for the grace period. */
      rotate: traced("Webhooks.rotate")(function*() {
        return toWire(yield* repo.rotate((yield* CurrentUser).id, webhooks.rotationGraceMillis))
      }),

      /** A page of the caller's deliveries, newest first. */
      deliveries: traced("Webhooks.deliveries")(function*(page: number, pageSize: number) {
        const { deliveries, total } = yield* repo.page((yield* CurrentUser).id, page, pageSize)
        const answer: WebhookDeliveryPage = { page, pageSize, total, totalPages: Math.ceil(total / pageSize), deliveries }
        return answer
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(Webhooks, Webhooks.make)
  static readonly layer = Webhooks.layerWithoutDependencies.pipe(Layer.provide(WebhookRepo.layer))
}
