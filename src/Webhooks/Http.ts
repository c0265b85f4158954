/** The webhooks' handlers: the caller's deliveries and secret. */
import { HttpApiBuilder } from "effect/http-api"
import { Effect, Layer } from "effect"
import { registryApi } from "../Domain/RegistryApi.ts"
import { defaultPage } from "../Catalog/Api.ts"
import { defaultDeliveryPageSize, WebhooksApi } from "./Api.ts"
import { Webhooks } from "./Service.ts"
import { answering, sharedAnswers } from "../Domain/Answers.ts"

const answer = answering({ ...sharedAnswers })

const api = registryApi(WebhooksApi)

export const WebhooksHttp = HttpApiBuilder.group(api, "webhooks", (handlers) =>
  Effect.map(Webhooks, (webhooks) =>
    handlers
      .handle("listWebhookDeliveries", ({ query }) =>
        answer(webhooks.deliveries(query.page ?? defaultPage, query.pageSize ?? defaultDeliveryPageSize)))
      .handle("getWebhookSecret", () => answer(webhooks.secret()))
      .handle("rotateWebhookSecret", () => answer(webhooks.rotate())))).pipe(Layer.provide(Webhooks.layer))
