/** Webhooks through the proxy: what a customer reads of its deliveries and its signing secret. */
import { Schema } from "effect"
import { field, optionalField, Timestamp } from "./Schemas.ts"

/** The events a delivery announces: an image task that finished. */
export const WebhookEventType = Schema.Literals(["task.completed", "task.failed"]).annotate({ identifier: "WebhookEventType" })
export type WebhookEventType = typeof WebhookEventType.Type

export const WebhookDeliveryStatus = Schema.Literals(["pending", "succeeded", "failed"]).annotate({ identifier: "WebhookDeliveryStatus" })

/** Served page sizes of the deliveries: larger requests are clamped. */
export const maxDeliveryPageSize = 100

export const WebhookAttempt = Schema.Struct({
  attempt: field(Schema.Int, "Number of the attempt, from 1"),
  attempted_at: field(Timestamp, "When the attempt began"),
  status_code: optionalField(Schema.Int, "The HTTP status the target answered; absent when it did not answer"),
  error: optionalField(Schema.String, "Why the attempt failed without an answer, or was refused (a non-public target address)"),
  duration_ms: field(Schema.Int, "How long the attempt took, in milliseconds")
}).annotate({ identifier: "WebhookAttempt" })

export const WebhookDelivery = Schema.Struct({
  id: field(Schema.String, "The message's identifier: its webhook-id header, the same at every attempt"),
  task_id: field(Schema.String, "The task the message announces"),
  event_type: field(WebhookEventType, "What happened to the task"),
  target_url: field(Schema.String, "The webhook_url the task was started with"),
  status: field(WebhookDeliveryStatus, "State of the delivery: pending until a 2xx answer (succeeded) or until retries stop after 24 hours (failed)"),
  created_at: field(Timestamp, "When the message was made (the vendor's callback)"),
  next_attempt_at: optionalField(Timestamp, "When the next attempt is due, while pending"),
  finished_at: optionalField(Timestamp, "When it succeeded or was given up"),
  attempts: field(Schema.Array(WebhookAttempt), "Every attempt, the first first")
}).annotate({ identifier: "WebhookDelivery" })
export type WebhookDelivery = typeof WebhookDelivery.Type

export const WebhookDeliveryPage = Schema.Struct({
  page: field(Schema.Int, "Page number, from 1"),
  pageSize: field(Schema.Int, `Deliveries per page, as served (at most ${maxDeliveryPageSize})`),
  total: field(Schema.Int, "Number of your deliveries on all pages"),
  totalPages: field(Schema.Int, "Number of pages: total divided by pageSize, rounded up"),
  deliveries: field(Schema.Array(WebhookDelivery), "Deliveries of this page, newest first")
}).annotate({ identifier: "WebhookDeliveryPage" })
export type WebhookDeliveryPage = typeof WebhookDeliveryPage.Type

export const WebhookSecret = Schema.Struct({
  secret: field(Schema.String, "The signing secret, `whsec_` and base64 of 32 bytes, as Standard Webhooks libraries take it"),
  created_at: field(Timestamp, "When this secret was made"),
  previous_valid_until: optionalField(
    Timestamp,
    "After a rotation: until when deliveries also carry a signature by the previous secret"
  )
}).annotate({ identifier: "WebhookSecret" })
export type WebhookSecret = typeof WebhookSecret.Type
