/**
 * Customers: the signed-in user's record (created by the host's sign-in, POST /customers), what is
 * left of each quota, the usage events, and a site admin's quota overrides.
 */
import { Context, Data, Effect, Layer, Option } from "effect"
import { CurrentUser } from "../Domain/Auth.ts"
import { NotPermitted } from "../Domain/Errors.ts"
import {
  Customer,
  CustomerBalance,
  CustomerQuotas,
  DayQuota,
  FlightQuota,
  type QuotaOverrides,
  unitOf,
  UsageEvent,
  UsagePage,
  usageUnits
} from "../Domain/Customer.ts"
import { traced } from "../Tracing.ts"
import { Metering } from "./Metering.ts"
import { CustomerRepo, type CustomerRow } from "./Repo.ts"

export class CustomerMissing extends Data.TaggedError("CustomerMissing")<{ readonly customerId: string }> {
  override get message() {
    return `No customer '${this.customerId}': POST /customers creates the signed-in user's`
  }
}

export class UserUnknown extends Data.TaggedError("UserUnknown")<{ readonly customerId: string }> {
  override get message() {
    return `No user '${this.customerId}' has signed in here`
  }
}

const remainingOf = (limit: number | null, used: number) => limit === null ? null : Math.max(0, limit - used)

export class Customers extends Context.Service<Customers>()("Customers", {
  make: Effect.gen(function*() {
    const repo = yield* CustomerRepo
    const metering = yield* Metering

    const customerOf = (user: typeof CurrentUser.Service, row: CustomerRow) =>
      new Customer({
        id: user.id,
        ...(user.email === undefined ? {} : { email: user.email }),
        ...(user.name === undefined ? {} : { name: user.name }),
        is_admin: user.isSiteAdmin,
        createdAt: row.created_at,
        updatedAt: row.updated_at
      }, { disableChecks: true })

    return {
      /** The caller's customer record, made on the first call; `created` says whether this call made it. */
      create: traced("Customers.create")(function*() {
        const user = yield* CurrentUser
        const row = yield* repo.upsert(user.id)
        return { customer: customerOf(user, row), created: row.created }
      }),

      me: traced("Customers.me")(function*() {
        const user = yield* CurrentUser
        const row = yield* repo.find(user.id)
        if (Option.isNone(row)) return yield* new CustomerMissing({ customerId: user.id })
        return customerOf(user, row.value)
      }),

      /** What is left of each of the caller's quotas (with or without a customer record: quotas bind every caller). */
      balance: traced("Customers.balance")(function*() {
        const user = yield* CurrentUser
        const row = yield* repo.balance(user.id)
        const operations = [...new Set([...Object.keys(usageUnits), ...Object.keys(row.used)])]
        const dayQuota = (operation: string) => {
          const limit = metering.dayLimitIn(row, operation)
          const used = Number(row.used[operation] ?? 0)
          return new DayQuota({
            operation,
            unit: unitOf(operation),
            limit,
            used,
            remaining: remainingOf(limit, used),
            resets_at: row.resets_at
          }, { disableChecks: true })
        }
        const flightLimit = row.tasks_in_flight ?? metering.flightLimit
        return new CustomerBalance({
          amount_micros: 0,
          currency: "usd",
          operations_per_day: operations.map(dayQuota),
          tasks_in_flight: new FlightQuota({ limit: flightLimit, used: row.flight, remaining: remainingOf(flightLimit, row.flight) }, { disableChecks: true })
        }, { disableChecks: true })
      }),

      /** A page of the caller's usage events, newest first; `to` is exclusive. */
      usage: traced("Customers.usage")(
        function*(query: { readonly from?: Date; readonly to?: Date; readonly operation?: string; readonly page: number; readonly limit: number }) {
          const user = yield* CurrentUser
          // this instance's buffered events first, so that an operation just answered is listed
          yield* Effect.orDie(metering.flush())
          const request = { customerId: user.id, from: query.from, to: query.to, operation: query.operation, page: query.page, limit: query.limit }
          const rows = yield* repo.usage(request)
          const total = rows.length > 0 ? rows[0]!.total : query.page === 1 ? 0 : yield* repo.usageCount(request)
          return new UsagePage({
            events: rows.map((r) =>
              new UsageEvent({
                id: r.id,
                operation: r.operation,
                outcome: r.outcome,
                api_key_id: r.api_key_id,
                bytes_in: r.bytes_in,
                bytes_out: r.bytes_out,
                duration_ms: r.duration_ms,
                units: r.units,
                unit: unitOf(r.operation),
                at: r.at
              }, { disableChecks: true })
            ),
            page: query.page,
            limit: query.limit,
            total,
            totalPages: Math.ceil(total / query.limit)
          }, { disableChecks: true })
        }
      ),

      /** Replaces a customer's quota overrides: site admins only. */
      setQuotas: traced("Customers.setQuotas")(function*(customerId: string, overrides: QuotaOverrides) {
        const user = yield* CurrentUser
        if (!user.isSiteAdmin) return yield* new NotPermitted({ reason: "Only a site admin may set a customer's quotas" })
        const row = yield* repo.setOverrides(customerId, overrides)
        if (Option.isNone(row)) return yield* new UserUnknown({ customerId })
        return new CustomerQuotas({ customer_id: customerId, ...row.value }, { disableChecks: true })
      }),

      /** A customer's quota overrides: site admins only. */
      quotas: traced("Customers.quotas")(function*(customerId: string) {
        const user = yield* CurrentUser
        if (!user.isSiteAdmin) return yield* new NotPermitted({ reason: "Only a site admin may read a customer's quotas" })
        const row = yield* repo.overrides(customerId)
        return new CustomerQuotas({
          customer_id: customerId,
          ...Option.getOrElse(row, () => ({ operations_per_day: null, tasks_in_flight: null, upload_bytes_per_day: null }))
        }, { disableChecks: true })
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(Customers, Customers.make)
  static readonly layer = Customers.layerWithoutDependencies.pipe(Layer.provide([Metering.layer, CustomerRepo.layer]))
}
