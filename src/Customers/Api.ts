import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import { Forbidden, NotFound } from "../Domain/ApiErrors.ts"
import { Authentication, KeyOrBearerAuthentication } from "../Domain/Auth.ts"
import { Customer, CustomerBalance, CustomerQuotas, QuotaOverrides, UsagePage } from "../Domain/Customer.ts"
import { field, IsoDateTimeFromString, PathParam, refusingBody, Text } from "../Domain/Schemas.ts"
import { optionalParam, Page, PageSize } from "../Catalog/Api.ts"
import { HttpApi } from "effect/http-api"

/** Usage events per page: the default and the most served. */
export const usagePageSize = { fallback: 50, max: 500 } as const

export const UsageParams = Schema.Struct({
  page: Page,
  limit: PageSize(usagePageSize.max, usagePageSize.fallback, "Events"),
  from: optionalParam(IsoDateTimeFromString, "Only events at or after this ISO 8601 time"),
  to: optionalParam(IsoDateTimeFromString, "Only events before this ISO 8601 time"),
  operation: optionalParam(Text(100), "Only events of this operation (image-style-transfer, skin-enhancer/creative, video-to-music, media-upload, ...)")
})

/**
 * The caller's customer record, quotas and usage: the host's sign-in (POST /customers, GET
 * /customers/balance) and its API nodes' credentials (bearer or API key), as the media proxy.
 */
export class CustomersApi extends HttpApiGroup.make("customers")
  .add(
    // the answer is encoded as a Customer; the handler sets 201 on the call that made it
    HttpApiEndpoint.post("createCustomer", "/customers", { success: [Customer, Customer.pipe(HttpApiSchema.status(201))] })
      .annotate(OpenApi.Summary, "Create your customer record")
      .annotate(
        OpenApi.Description,
        "Idempotent: the signed-in user's customer record, created on the first call (201) and answered as it is on every later one (200). No body is read; the id is the user's."
      )
  )
  .add(
    HttpApiEndpoint.get("getAuthenticatedCustomer", "/customers/me", { success: Customer, error: [NotFound] })
      .annotate(OpenApi.Summary, "Your customer record")
      .annotate(OpenApi.Description, "404 until POST /customers has created it.")
  )
  .add(
    HttpApiEndpoint.get("getCustomerBalance", "/customers/balance", { success: CustomerBalance })
      .annotate(OpenApi.Summary, "What is left of your quotas")
      .annotate(
        OpenApi.Description,
        "The anchor's fields (`amount_micros` is always 0 and `currency` usd: this service bills no money), then each quota: per operation today (UTC; media-upload in bytes) and tasks in flight. A limit of null is no limit. Quotas bind every caller, with or without a customer record."
      )
  )
  .add(
    HttpApiEndpoint.get("getCustomerUsage", "/customers/usage", { query: UsageParams, success: UsagePage })
      .annotate(OpenApi.Summary, "Your usage events")
      .annotate(
        OpenApi.Description,
        `One event per proxied operation (image starts, video-to-music generations, media uploads; polls are free and not listed), newest first, ${usagePageSize.fallback} per page by default, filtered by time (\`from\` inclusive, \`to\` exclusive) and operation.`
      )
  )
  .middleware(KeyOrBearerAuthentication)
  .annotate(OpenApi.Title, "Customers")
{}

const CustomerPath = Schema.Struct({ customer_id: field(PathParam, "The customer's id (the user's id)") })

/** A site admin's overrides of one customer's quotas. */
export class CustomerQuotasApi extends HttpApiGroup.make("customerQuotas")
  .add(
    HttpApiEndpoint.get("getCustomerQuotas", "/admin/customers/:customer_id/quotas", {
      params: CustomerPath,
      success: CustomerQuotas,
      error: [Forbidden]
    })
      .annotate(OpenApi.Summary, "A customer's quota overrides (site admins)")
      .annotate(OpenApi.Description, "Each null is the setting's default (QUOTA_OPERATIONS_PER_DAY, QUOTA_TASKS_IN_FLIGHT, QUOTA_UPLOAD_BYTES_PER_DAY).")
  )
  .add(
    HttpApiEndpoint.put("setCustomerQuotas", "/admin/customers/:customer_id/quotas", {
      params: CustomerPath,
      payload: QuotaOverrides,
      success: CustomerQuotas,
      error: [Forbidden, NotFound]
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Set a customer's quota overrides (site admins)")
      .annotate(
        OpenApi.Description,
        "Replaces the customer's overrides: a field absent or null goes back to the setting's default; 0 refuses every request the quota bounds. The user must have signed in here (404 otherwise). Takes effect on the next request."
      )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Customers")
{}
