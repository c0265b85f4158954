/** The customers' handlers: the schemas validate, Customers does the rest. */
import { HttpApiBuilder } from "effect/http-api"
import { HttpEffect, HttpServerResponse } from "effect/http"
import { Effect, Layer } from "effect"
import { CustomerQuotasApi, CustomersApi, usagePageSize } from "./Api.ts"
import { registryApi } from "../Domain/RegistryApi.ts"
import { NotFound } from "../Domain/ApiErrors.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"
import { defaultPage } from "../Catalog/Api.ts"
import { Customers } from "./Service.ts"

/** Which class answers each failure these handlers meet. */
const answer = answering({
  ...sharedAnswers,
  CustomerMissing: NotFound,
  UserUnknown: NotFound
})

/** This folder's groups, under what every endpoint shares: its handlers are built against these alone. */
const api = registryApi(CustomersApi, CustomerQuotasApi)

/** A first POST /customers made the record: 201, as the anchor answers a creation. */
const answeredCreated = HttpEffect.appendPreResponseHandler((_request, response) =>
  Effect.succeed(HttpServerResponse.setStatus(response, 201))
)

const CustomersLive = HttpApiBuilder.group(api, "customers", (handlers) =>
  Effect.map(Customers, (customers) =>
    handlers
      .handle("createCustomer", () =>
        Effect.flatMap(customers.create(), ({ customer, created }) => created ? Effect.as(answeredCreated, customer) : Effect.succeed(customer)))
      .handle("getAuthenticatedCustomer", () => answer(customers.me()))
      .handle("getCustomerBalance", () => customers.balance())
      .handle("getCustomerUsage", ({ query }) =>
        customers.usage({
          ...(query.from === undefined ? {} : { from: query.from }),
          ...(query.to === undefined ? {} : { to: query.to }),
          ...(query.operation === undefined ? {} : { operation: query.operation }),
          page: query.page ?? defaultPage,
          limit: query.limit ?? usagePageSize.fallback
        }))))

const CustomerQuotasLive = HttpApiBuilder.group(api, "customerQuotas", (handlers) =>
  Effect.map(Customers, (customers) =>
    handlers
      .handle("getCustomerQuotas", ({ params }) => answer(customers.quotas(params.customer_id)))
      .handle("setCustomerQuotas", ({ params, payload }) => answer(customers.setQuotas(params.customer_id, payload)))))

/** This folder's handlers, with the services they use (src/App.ts provides what every feature shares). */
export const CustomersHttp = Layer.mergeAll(CustomersLive, CustomerQuotasLive).pipe(Layer.provide(Customers.layer))
