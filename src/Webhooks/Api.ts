import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import { Page, PageSize } from "../Catalog/Api.ts"
import { KeyOrBearerAuthentication } from "../Domain/Auth.ts"
import { maxDeliveryPageSize, WebhookDeliveryPage, WebhookSecret } from "../Domain/Webhooks.ts"

export const defaultDeliveryPageSize = 20

const signing = "Deliveries carry Standard Webhooks headers: `webhook-id` (the delivery's id, the same at every attempt), `webhook-timestamp` (seconds) and `webhook-signature` (`v1,` and the base64 HMAC-SHA256 of `{id}.{timestamp}.{body}` keyed by the secret's bytes, space-separated when there are several)."

/** The caller's webhook deliveries and signing secret (the webhook_url of image tasks, docs/api.md). */
export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.get("listWebhookDeliveries", "/customers/webhooks/deliveries", {
      query: Schema.Struct({ page: Page, pageSize: PageSize(maxDeliveryPageSize, defaultDeliveryPageSize, "Deliveries") }),
      success: WebhookDeliveryPage
    })
      .annotate(OpenApi.Summary, "List your webhook deliveries (paginated)")
      .annotate(
        OpenApi.Description,
        "Your own deliveries, newest first, each with every attempt (time, HTTP status or error, duration). A delivery is retried with exponential backoff (from WEBHOOK_RETRY_BASE_SECONDS, doubling, at most an hour apart) until a 2xx answer or for 24 hours; redirects are not followed; a target resolving to a non-public address is refused (recorded as a failed attempt, and retried) unless WEBHOOK_ALLOW_PRIVATE_TARGETS is on."
      )
  )
  .add(
    HttpApiEndpoint.get("getWebhookSecret", "/customers/webhooks/secret", { success: WebhookSecret })
      .annotate(OpenApi.Summary, "Your webhook signing secret")
      .annotate(OpenApi.Description, `Made on first need, one per user. ${signing}`)
  )
  .add(
    HttpApiEndpoint.post("rotateWebhookSecret", "/customers/webhooks/secret/rotate", { success: WebhookSecret })
      .annotate(OpenApi.Summary, "Replace your webhook signing secret")
      .annotate(
        OpenApi.Description,
        `Answers the new secret. For 24 hours after, every delivery (retries of earlier ones included) is signed by both the new and the previous secret, so a receiver still holding the old one keeps verifying. ${signing}`
      )
  )
  .middleware(KeyOrBearerAuthentication)
  .annotate(OpenApi.Title, "Webhooks")
{}
